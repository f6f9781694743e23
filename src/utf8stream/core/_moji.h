/* find_moji(text, index, pages, width, start, longest) -> int

   For the mojibake repairer (core/mojibake.py): the index of the first run of the code
   pages' characters at or after `start` that could be undone, or -1.  `index` holds a
   uint16 per BMP code point (native order): 0 for a character of no code page, else its
   row in `pages`, where row r is `width` bytes, the byte of the character in each code
   page (0: the page does not hold it); ASCII and a row past the end of `pages` are no
   character of the pages.  A run could be undone when through one of the
   code pages it is valid UTF-8 (Table 3-7, as Python's strict decoder); and, whatever
   its characters, when it holds `longest` characters or more (the repairer cuts such a
   run at its bound, and a piece of it may decode where the whole does not), or when it
   began before `start` (a piece of a run cut there).  A run of one character is never
   undone.  Correct text, Cyrillic and Greek included, has almost no such run: the
   repairer looks at a line only when this finds one in it.

   moji_pages(text, index, pages, width) -> int

   The code pages (bit k: the k-th byte of a row) through which every run of `text` is
   valid UTF-8: the repairer tries to undo a stretch only through those. */

#define MOJI_MAX_PAGES 32

/* The UTF-8 reading of one code page over a run: the bytes still to come in the current
   sequence and the range the next one must lie in. */
typedef struct {
    unsigned char need, lo, hi;
} moji_seq;

/* Whether byte b continues the sequence in *q (or starts one), updating it. */
static inline int
moji_step(moji_seq *q, unsigned char b)
{
    if (q->need) {
        if (b < q->lo || b > q->hi) {
            return 0;
        }
        q->need--;
        q->lo = 0x80;
        q->hi = 0xBF;
        return 1;
    }
    q->lo = 0x80;
    q->hi = 0xBF;
    if (b < 0x80) {
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        q->need = 1;
    }
    else if (b >= 0xE0 && b <= 0xEF) {
        q->need = 2;
        q->lo = b == 0xE0 ? 0xA0 : 0x80;
        q->hi = b == 0xED ? 0x9F : 0xBF;
    }
    else if (b >= 0xF0 && b <= 0xF4) {
        q->need = 3;
        q->lo = b == 0xF0 ? 0x90 : 0x80;
        q->hi = b == 0xF4 ? 0x8F : 0xBF;
    }
    else {
        return 0;
    }
    return 1;
}

#define MOJI_ROW(cp) ((cp) >= 0x80 && (cp) < 0x10000 && rows[(cp)] < t->nrows ? rows[(cp)] : 0)

/* The tables, checked. */
typedef struct {
    const uint16_t *rows;
    const unsigned char *pages;
    Py_ssize_t width, nrows;
    uint32_t all;
} moji_tables;

/* The run of s from i on: i moves to its end, and `alive` keeps the pages through which
   it is valid UTF-8.  Inside a run each page still in the running reads the character's
   byte; most non-ASCII text leaves every page within a character or two. */
#define MOJI_RUN(TYPE)                                                                   \
    do {                                                                                 \
        moji_seq q[MOJI_MAX_PAGES] = {{0, 0, 0}};                                        \
        alive = t->all;                                                                  \
        for (; i < n && MOJI_ROW(s[i]); i++) {                                           \
            const unsigned char *row = t->pages + (size_t)MOJI_ROW(s[i]) * t->width;     \
            for (uint32_t left = alive; left; left &= left - 1) {                        \
                int k = __builtin_ctz(left);                                             \
                if (!row[k] || !moji_step(&q[k], row[k])) {                              \
                    alive &= ~((uint32_t)1 << k);                                        \
                }                                                                        \
            }                                                                            \
        }                                                                                \
        for (uint32_t left = alive; left; left &= left - 1) {                            \
            int k = __builtin_ctz(left);                                                 \
            if (q[k].need) {                                                             \
                alive &= ~((uint32_t)1 << k);                                            \
            }                                                                            \
        }                                                                                \
    } while (0)

#define MOJI_SCAN(TYPE)                                                                  \
    static Py_ssize_t moji_scan_##TYPE(const moji_tables *t, const TYPE *s, Py_ssize_t n, \
                                       Py_ssize_t start, Py_ssize_t longest)             \
    {                                                                                    \
        const uint16_t *rows = t->rows;                                                  \
        Py_ssize_t i = start;                                                            \
        while (i < n) {                                                                  \
            if (!MOJI_ROW(s[i])) {                                                       \
                i++;                                                                     \
                continue;                                                                \
            }                                                                            \
            Py_ssize_t a = i;                                                            \
            uint32_t alive;                                                              \
            MOJI_RUN(TYPE);                                                              \
            if (i - a >= longest || (a == start && a > 0 && MOJI_ROW(s[a - 1])) ||       \
                (i - a >= 2 && alive)) {                                                 \
                return a;                                                                \
            }                                                                            \
        }                                                                                \
        return -1;                                                                       \
    }                                                                                    \
    static uint32_t moji_mask_##TYPE(const moji_tables *t, const TYPE *s, Py_ssize_t n)  \
    {                                                                                    \
        const uint16_t *rows = t->rows;                                                  \
        uint32_t mask = t->all;                                                          \
        Py_ssize_t i = 0;                                                                \
        while (i < n && mask) {                                                          \
            if (!MOJI_ROW(s[i])) {                                                       \
                i++;                                                                     \
                continue;                                                                \
            }                                                                            \
            uint32_t alive;                                                              \
            MOJI_RUN(TYPE);                                                              \
            mask &= alive;                                                               \
        }                                                                                \
        return mask;                                                                     \
    }

MOJI_SCAN(Py_UCS1)
MOJI_SCAN(Py_UCS2)
MOJI_SCAN(Py_UCS4)

/* The tables from args[1:4], or -1 with an exception set. */
static int
moji_tables_of(PyObject *const *args, moji_tables *t)
{
    if (!PyUnicode_Check(args[0]) || !PyBytes_Check(args[1]) || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "find_moji/moji_pages(text: str, index: bytes, "
                                         "pages: bytes, width, ...)");
        return -1;
    }
    t->width = PyLong_AsSsize_t(args[3]);
    if (t->width == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (t->width < 1 || t->width > MOJI_MAX_PAGES || PyBytes_GET_SIZE(args[1]) != 2 * 0x10000) {
        PyErr_SetString(PyExc_ValueError, "find_moji: a 0x10000-entry index, 1 to 32 pages, "
                                          "start >= 0, longest >= 1");
        return -1;
    }
    t->rows = (const uint16_t *)PyBytes_AS_STRING(args[1]);
    t->pages = (const unsigned char *)PyBytes_AS_STRING(args[2]);
    t->nrows = PyBytes_GET_SIZE(args[2]) / t->width;
    t->all = t->width == 32 ? 0xFFFFFFFFu : (((uint32_t)1 << t->width) - 1);
    return 0;
}

static PyObject *
find_moji(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    moji_tables t;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "find_moji(text: str, index: bytes, pages: bytes, "
                                         "width, start, longest)");
        return NULL;
    }
    if (moji_tables_of(args, &t) < 0) {
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[4]);
    Py_ssize_t longest = PyLong_AsSsize_t(args[5]);
    if ((start == -1 || longest == -1) && PyErr_Occurred()) {
        return NULL;
    }
    if (start < 0 || longest < 1) {
        PyErr_SetString(PyExc_ValueError, "find_moji: a 0x10000-entry index, 1 to 32 pages, "
                                          "start >= 0, longest >= 1");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) {
        return PyLong_FromSsize_t(-1);
    }
    const void *data = PyUnicode_DATA(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return PyLong_FromSsize_t(moji_scan_Py_UCS1(&t, data, n, start, longest));
    case PyUnicode_2BYTE_KIND:
        return PyLong_FromSsize_t(moji_scan_Py_UCS2(&t, data, n, start, longest));
    default:
        return PyLong_FromSsize_t(moji_scan_Py_UCS4(&t, data, n, start, longest));
    }
}

static PyObject *
moji_pages(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    moji_tables t;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "moji_pages(text: str, index: bytes, pages: bytes, "
                                         "width)");
        return NULL;
    }
    if (moji_tables_of(args, &t) < 0) {
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        return PyLong_FromUnsignedLong(moji_mask_Py_UCS1(&t, data, n));
    case PyUnicode_2BYTE_KIND:
        return PyLong_FromUnsignedLong(moji_mask_Py_UCS2(&t, data, n));
    default:
        return PyLong_FromUnsignedLong(moji_mask_Py_UCS4(&t, data, n));
    }
}

#undef MOJI_SCAN
#undef MOJI_RUN
#undef MOJI_ROW

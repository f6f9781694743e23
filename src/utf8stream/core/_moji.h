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
   repairer looks at a line only when this finds one in it (moji_repair, _mojirepair.h,
   calls the scan here). */

#define MOJI_MAX_PAGES 32

/* What a character's byte is in each page (bit k: page k), for reading UTF-8 in every
   page at once: a byte that starts a sequence of 1 to 4, a continuation in 80-8F, 90-9F
   or A0-BF, and the leads that narrow the byte after them (E0, ED, F0, F4: Table 3-7).
   A byte a page does not hold is none of these. */
typedef struct {
    uint32_t lead, cont, lead2, lead3, lead4, c80, c90, ca0, e0, ed, f0, f4;
} moji_bits;

/* The tables, checked. */
typedef struct {
    const uint16_t *rows;          /* the index, cleaned: 0 below 0x80 and for no row */
    const unsigned char *cols;     /* `pages` by column: a page's bytes, a row each */
    const moji_bits *bits;
    Py_ssize_t width, nrows;
    uint32_t all;
    Py_UCS4 last; /* the last code point of a row: the rest need not be looked up */
} moji_tables;

/* The UTF-8 reading of every page over a run at once: the pages still expecting one,
   two or three continuation bytes, those whose next byte is narrowed, and those out. */
typedef struct {
    uint32_t n1, n2, n3, ke0, ked, kf0, kf4, dead;
} moji_state;

static inline void
moji_read(moji_state *q, const moji_bits *b)
{
    uint32_t expecting = q->n1 | q->n2 | q->n3, starting = ~expecting, cont = b->cont;
    if (q->ke0 | q->ked | q->kf0 | q->kf4) {
        cont &= ~(q->ke0 & ~b->ca0) & ~(q->ked & ~(b->c80 | b->c90)) &
                ~(q->kf0 & ~(b->c90 | b->ca0)) & ~(q->kf4 & ~b->c80);
    }
    q->dead |= (expecting & ~cont) | (starting & ~b->lead);
    q->n1 = q->n2 | (starting & b->lead2);
    q->n2 = q->n3 | (starting & b->lead3);
    q->n3 = starting & b->lead4;
    q->ke0 = starting & b->e0;
    q->ked = starting & b->ed;
    q->kf0 = starting & b->f0;
    q->kf4 = starting & b->f4;
}

/* moji_bits of every row of `pages`, the index cleaned (rows only from 0x80 to the last
   code point that has one, each checked against `pages`, so that a look-up is one load)
   and `pages` by column (a page's bytes in a row, for undoing a run through one page),
   made once for the tables in use and kept in the module state (with a reference to
   them: the repairer passes the same objects on every call).  They are held in one bytes
   object, st->moji_held, which a caller that runs Python code while it reads them holds a
   reference to: the code may make the tables of other ones. */

/* Where the cleaned index and the columns are in moji_bits_held. */
static inline void
moji_held_parts(moji_tables *t, PyObject *held)
{
    char *at = PyBytes_AS_STRING(held);
    t->bits = (const moji_bits *)at;
    t->rows = (const uint16_t *)(at + (t->nrows + 1) * sizeof(moji_bits));
    t->cols = (const unsigned char *)(t->rows + t->last + 1);
}

/* The tables' parts made for t (its nrows and width set); -1 with an exception. */
static int
moji_bits_of(module_state *st, moji_tables *t, PyObject *index, PyObject *pages)
{
    Py_ssize_t nrows = t->nrows, width = t->width;
    if (pages == st->moji_pages && index == st->moji_index && width == st->moji_width) {
        t->last = st->moji_last;
        moji_held_parts(t, st->moji_held);
        return 0;
    }
    const uint16_t *rowof = (const uint16_t *)PyBytes_AS_STRING(index);
    Py_UCS4 top = 0xFFFF;
    while (top >= 0x80 && !(rowof[top] && rowof[top] < nrows)) {
        top--;
    }
    size_t size = (size_t)(nrows + 1) * sizeof(moji_bits) + ((size_t)top + 1) * sizeof(uint16_t) +
                  (size_t)(nrows * width);
    PyObject *held = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (held == NULL) {
        return -1;
    }
    memset(PyBytes_AS_STRING(held), 0, size);
    t->last = top;
    moji_held_parts(t, held);
    moji_bits *rows = (moji_bits *)t->bits;
    uint16_t *clean = (uint16_t *)t->rows;
    unsigned char *cols = (unsigned char *)t->cols;
    for (Py_UCS4 cp = 0x80; cp <= top; cp++) {
        clean[cp] = rowof[cp] < nrows ? rowof[cp] : 0;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(pages);
    for (Py_ssize_t r = 0; r < nrows; r++) {
        for (Py_ssize_t k = 0; k < width; k++) {
            unsigned b = p[r * width + k];
            uint32_t bit = (uint32_t)1 << k;
            moji_bits *x = &rows[r];
            cols[k * nrows + r] = (unsigned char)b;
            x->lead |= b && (b < 0x80 || (b >= 0xC2 && b <= 0xF4)) ? bit : 0;
            x->cont |= b >= 0x80 && b <= 0xBF ? bit : 0;
            x->lead2 |= b >= 0xC2 && b <= 0xDF ? bit : 0;
            x->lead3 |= b >= 0xE0 && b <= 0xEF ? bit : 0;
            x->lead4 |= b >= 0xF0 && b <= 0xF4 ? bit : 0;
            x->c80 |= b >= 0x80 && b <= 0x8F ? bit : 0;
            x->c90 |= b >= 0x90 && b <= 0x9F ? bit : 0;
            x->ca0 |= b >= 0xA0 && b <= 0xBF ? bit : 0;
            x->e0 |= b == 0xE0 ? bit : 0;
            x->ed |= b == 0xED ? bit : 0;
            x->f0 |= b == 0xF0 ? bit : 0;
            x->f4 |= b == 0xF4 ? bit : 0;
        }
    }
    Py_XSETREF(st->moji_held, held);
    Py_XSETREF(st->moji_pages, Py_NewRef(pages));
    Py_XSETREF(st->moji_index, Py_NewRef(index));
    st->moji_width = width;
    st->moji_last = top;
    return 0;
}

#define MOJI_ROW(cp) ((cp) <= t->last ? rows[(cp)] : 0)

/* The run of s from i on: i moves to its end, and `alive` keeps the pages through which
   it is valid UTF-8. */
#define MOJI_RUN(TYPE)                                                                   \
    do {                                                                                 \
        moji_state q = {0, 0, 0, 0, 0, 0, 0, 0};                                         \
        for (unsigned r; i < n && (r = MOJI_ROW(s[i])); i++) {                           \
            moji_read(&q, &t->bits[r]);                                                  \
        }                                                                                \
        alive = t->all & ~q.dead & ~(q.n1 | q.n2 | q.n3);                                \
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
    }

MOJI_SCAN(Py_UCS1)
MOJI_SCAN(Py_UCS2)
MOJI_SCAN(Py_UCS4)

/* The tables from args[1:4], or -1 with an exception set. */
static int
moji_tables_of(module_state *st, PyObject *const *args, moji_tables *t)
{
    if (!PyUnicode_Check(args[0]) || !PyBytes_Check(args[1]) || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "find_moji(text: str, index: bytes, "
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
    t->nrows = PyBytes_GET_SIZE(args[2]) / t->width;
    if (moji_bits_of(st, t, args[1], args[2]) < 0) {
        return -1;
    }
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
    if (moji_tables_of(get_state(module), args, &t) < 0) {
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

#undef MOJI_SCAN
#undef MOJI_RUN
#undef MOJI_ROW

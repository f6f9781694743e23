/* find_moji_bytes(data, index, pages, width, start, longest) -> int

   For the byte-domain mojibake repairer (core/mojibakebytes.py): find_moji's search
   (_moji.h) over UTF-8 bytes, the code points decoded inline.  The byte offset of the
   first run of the code pages' characters at or after `start` that could be undone, or
   -1: a run of two characters or more that is valid UTF-8 through one of the code pages,
   or one of `longest` characters or more.  The tables are find_moji's.  A run at `start`
   is measured from there (the repairer gives a line's start).  A byte that does not
   begin a valid sequence (Table 3-7, as Python's strict decoder reads it) is no character
   of the pages, and neither is a sequence cut by the end of `data`, so a run is what
   decoding with "surrogateescape" and find_moji would find.  Lines of correct text go by
   at the speed of this scan, as bytes: the repairer decodes only the lines it finds a
   run in.  Only the bytes that can begin a character of the pages are decoded: ASCII
   goes by eight bytes at one test, the bytes of scripts no page holds (CJK, Arabic,
   Hebrew...) by one table look-up each. */

/* A decoded byte that is no character (an invalid or cut sequence). */
#define MOJIB_BAD 0xFFFFFFFFu

/* The code point at s[i] (Table 3-7), its length in *len; MOJIB_BAD and 1 if none. */
static inline uint32_t
mojib_decode(const unsigned char *s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *len)
{
    unsigned char b = s[i];
    *len = 1;
    if (b < 0x80) {
        return b;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        if (i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
            *len = 2;
            return ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3F);
        }
        return MOJIB_BAD;
    }
    if (b >= 0xE0 && b <= 0xEF) {
        unsigned char lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
        if (i + 2 < n && s[i + 1] >= lo && s[i + 1] <= hi && (s[i + 2] & 0xC0) == 0x80) {
            *len = 3;
            return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) |
                   (s[i + 2] & 0x3F);
        }
        return MOJIB_BAD;
    }
    /* Four-byte sequences are past the BMP: no character of the pages.  A valid one is
       still taken whole, as the decoder takes it. */
    if (b >= 0xF0 && b <= 0xF4) {
        unsigned char lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
        if (i + 3 < n && s[i + 1] >= lo && s[i + 1] <= hi && (s[i + 2] & 0xC0) == 0x80 &&
            (s[i + 3] & 0xC0) == 0x80) {
            *len = 4;
        }
    }
    return MOJIB_BAD;
}

/* The row of code point cp in the tables (0: no character of the pages); the cleaned
   index of _moji.h ends at the last code point that has a row. */
static inline Py_ssize_t
mojib_row(const moji_tables *t, uint32_t cp)
{
    return cp > t->last ? 0 : t->rows[cp];
}

/* Per byte, whether a character of the pages can begin there: the lead bytes of the
   sequences of the code points with a row.  ASCII, continuation bytes and the other leads
   begin none, whether or not a valid sequence follows (a continuation byte alone is no
   character either), so the scan steps over them without decoding.  Made once for the
   tables in use and kept in the module state with a reference to them, as moji_bits_of
   keeps its bits. */
static const unsigned char *
mojib_need_of(module_state *st, PyObject *index, PyObject *pages, const moji_tables *t)
{
    unsigned char *mojib_need = st->mojib_need;
    if (index == st->mojib_index && pages == st->mojib_pages && t->width == st->mojib_width) {
        return mojib_need;
    }
    memset(mojib_need, 0, sizeof st->mojib_need);
    for (unsigned b = 0xC2; b <= 0xEF; b++) {
        uint32_t first = b <= 0xDF ? (uint32_t)(b & 0x1F) << 6 : (uint32_t)(b & 0x0F) << 12;
        uint32_t count = b <= 0xDF ? 0x40 : 0x1000;
        for (uint32_t cp = first < 0x80 ? 0x80 : first; cp < first + count; cp++) {
            if (mojib_row(t, cp)) {
                mojib_need[b] = 1;
                break;
            }
        }
    }
    Py_XSETREF(st->mojib_index, Py_NewRef(index));
    Py_XSETREF(st->mojib_pages, Py_NewRef(pages));
    st->mojib_width = t->width;
    return mojib_need;
}

/* The first byte at or after i where a character of the pages can begin, or n: eight
   bytes at a time, a word of ASCII at one test. */
static inline Py_ssize_t
mojib_skip(const unsigned char *need, const unsigned char *s, Py_ssize_t i, Py_ssize_t n)
{
    while (i + 8 <= n) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull) {
            for (int k = 0; k < 8; k++) {
                if (need[s[i + k]]) {
                    return i + k;
                }
            }
        }
        i += 8;
    }
    while (i < n && !need[s[i]]) {
        i++;
    }
    return i;
}

static Py_ssize_t
mojib_scan(const moji_tables *t, const unsigned char *need, const unsigned char *s,
           Py_ssize_t n, Py_ssize_t start, Py_ssize_t longest)
{
    Py_ssize_t i = start, len;
    for (;;) {
        i = mojib_skip(need, s, i, n);
        if (i >= n) {
            return -1;
        }
        Py_ssize_t row = mojib_row(t, mojib_decode(s, i, n, &len));
        if (!row) {
            i += len;
            continue;
        }
        /* A run: every page reads the character's byte as UTF-8 (moji_read, _moji.h).
           A lone character (an accented letter among ASCII) is read by no page, and once
           every page is out only the run's length still counts. */
        Py_ssize_t a = i, count = 1, first = row;
        i += len;
        row = i < n ? mojib_row(t, mojib_decode(s, i, n, &len)) : 0;
        if (!row) {
            if (longest <= 1) {
                return a;
            }
            continue;
        }
        moji_state q = {0, 0, 0, 0, 0, 0, 0, 0};
        moji_read(&q, &t->bits[first]);
        while (row) {
            if ((q.dead & t->all) != t->all) {
                moji_read(&q, &t->bits[row]);
            }
            count++;
            i += len;
            row = i < n ? mojib_row(t, mojib_decode(s, i, n, &len)) : 0;
        }
        uint32_t alive = t->all & ~q.dead & ~(q.n1 | q.n2 | q.n3);
        if (count >= longest || (count >= 2 && alive)) {
            return a;
        }
    }
}

static PyObject *
find_moji_bytes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    static const char usage[] = "find_moji_bytes(data: bytes, index: bytes, pages: bytes, "
                                "width, start, longest)";
    moji_tables t;
    if (nargs != 6 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1]) ||
        !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    t.width = PyLong_AsSsize_t(args[3]);
    Py_ssize_t start = PyLong_AsSsize_t(args[4]);
    Py_ssize_t longest = PyLong_AsSsize_t(args[5]);
    if ((t.width == -1 || start == -1 || longest == -1) && PyErr_Occurred()) {
        return NULL;
    }
    if (t.width < 1 || t.width > MOJI_MAX_PAGES || PyBytes_GET_SIZE(args[1]) != 2 * 0x10000 ||
        start < 0 || longest < 1) {
        PyErr_SetString(PyExc_ValueError, "find_moji_bytes: a 0x10000-entry index, 1 to 32 "
                                          "pages, start >= 0, longest >= 1");
        return NULL;
    }
    t.nrows = PyBytes_GET_SIZE(args[2]) / t.width;
    module_state *st = get_state(module);
    if (moji_bits_of(st, &t, args[1], args[2]) < 0) {
        return NULL;
    }
    t.all = t.width == 32 ? 0xFFFFFFFFu : (((uint32_t)1 << t.width) - 1);
    const unsigned char *need = mojib_need_of(st, args[1], args[2], &t);
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    return PyLong_FromSsize_t(start >= n ? -1 : mojib_scan(&t, need, s, n, start, longest));
}

#undef MOJIB_BAD

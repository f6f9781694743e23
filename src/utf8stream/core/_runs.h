/* find_run(text, members, shortest, start) -> int

   For the stream-safe text process of the normalizer (core/normalize.py): the index of
   the first run of at least `shortest` consecutive characters of `text` at or after
   `start` whose code points are set in the bitmap `members` (bit cp & 7 of byte
   cp >> 3; a code point past its end is not a member), or -1.  The runs it looks for are
   rare; the Python twin (core/_native.py) is a regular expression. */

/* A run of `shortest` members holds one of every `shortest`-th character: only those are
   looked at, and around the members among them the run is measured.  Text with few
   members costs one bit test per `shortest` characters. */
#define MEMBER(cp) ((Py_ssize_t)((cp) >> 3) < nbytes && ((bits[(cp) >> 3] >> ((cp) & 7)) & 1))
#define RUN_SCAN(TYPE)                                                                   \
    do {                                                                                 \
        const TYPE *s = (const TYPE *)data;                                              \
        Py_ssize_t i = start + shortest - 1;                                             \
        while (i < n) {                                                                  \
            if (!MEMBER(s[i])) {                                                         \
                i += shortest;                                                           \
                continue;                                                                \
            }                                                                            \
            Py_ssize_t a = i, b = i + 1;                                                 \
            while (a > start && MEMBER(s[a - 1])) {                                      \
                a--;                                                                     \
            }                                                                            \
            while (b < n && MEMBER(s[b])) {                                              \
                b++;                                                                     \
            }                                                                            \
            if (b - a >= shortest) {                                                     \
                return a;                                                                \
            }                                                                            \
            i = b + shortest;                                                            \
        }                                                                                \
    } while (0)

/* The run's index, or -1; shortest >= 1, start >= 0. */
static Py_ssize_t
run_scan(PyObject *text, const unsigned char *bits, Py_ssize_t nbytes, Py_ssize_t shortest,
         Py_ssize_t start)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        RUN_SCAN(Py_UCS1);
        break;
    case PyUnicode_2BYTE_KIND:
        RUN_SCAN(Py_UCS2);
        break;
    default:
        RUN_SCAN(Py_UCS4);
        break;
    }
    return -1;
}

static PyObject *
find_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "find_run(text: str, members: buffer, shortest, start)");
        return NULL;
    }
    Py_ssize_t shortest = PyLong_AsSsize_t(args[2]);
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if ((shortest == -1 || start == -1) && PyErr_Occurred()) {
        return NULL;
    }
    if (shortest < 1 || start < 0) {
        PyErr_SetString(PyExc_ValueError, "find_run: shortest >= 1 and start >= 0");
        return NULL;
    }
    Py_buffer bits;
    if (PyObject_GetBuffer(args[1], &bits, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_ssize_t at = run_scan(args[0], (const unsigned char *)bits.buf, bits.len, shortest, start);
    PyBuffer_Release(&bits);
    return PyLong_FromSsize_t(at);
}

#undef RUN_SCAN
#undef MEMBER

/* join_cut(head, text, cut) -> head + text[:cut]

   The normalizer's output: the carry of the last piece and this piece up to its last
   boundary, made in one copy (a slice and a concatenation would copy the piece twice).
   The result takes the narrowest kind its characters allow, as every str must. */

/* The widest character of s[:n], or one at least as wide of the same kind as it.  n is
   most of s, and s holds a character of its own kind: when none is after n, one is
   before it.  Else the maximum of blocks of s[:n] (a loop without a branch), until a
   character of s's kind turns up. */
#define KIND_MAX(TYPE, FLOOR)                                                           \
    do {                                                                                \
        const TYPE *p = (const TYPE *)data;                                             \
        for (Py_ssize_t b = 0; b < n && widest < (FLOOR); b += 1024) {                  \
            Py_ssize_t e = n - b < 1024 ? n : b + 1024;                                 \
            TYPE m = 0;                                                                 \
            for (Py_ssize_t i = b; i < e; i++) {                                        \
                m = p[i] > m ? p[i] : m;                                                \
            }                                                                           \
            widest = m > widest ? m : widest;                                           \
        }                                                                               \
    } while (0)

static Py_UCS4
kind_max(PyObject *s, Py_ssize_t n)
{
    if (PyUnicode_IS_ASCII(s)) {
        return 0x7F;
    }
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_UCS4 floor = kind == PyUnicode_1BYTE_KIND   ? 0x80
                    : kind == PyUnicode_2BYTE_KIND ? 0x100
                                                   : 0x10000;
    Py_ssize_t i = n, len = PyUnicode_GET_LENGTH(s);
    while (i < len && PyUnicode_READ(kind, data, i) < floor) {
        i++;
    }
    if (i == len) {
        return PyUnicode_MAX_CHAR_VALUE(s);
    }
    Py_UCS4 widest = 0;
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        KIND_MAX(Py_UCS1, 0x80);
        break;
    case PyUnicode_2BYTE_KIND:
        KIND_MAX(Py_UCS2, 0x100);
        break;
    default:
        KIND_MAX(Py_UCS4, 0x10000);
        break;
    }
    return widest;
}

#undef KIND_MAX

/* head + text[:cut], cut within text: a new reference. */
static PyObject *
join_head(PyObject *head, PyObject *text, Py_ssize_t cut)
{
    Py_ssize_t nhead = PyUnicode_GET_LENGTH(head);
    if (nhead == 0 && cut == PyUnicode_GET_LENGTH(text)) {
        return Py_NewRef(text);
    }
    Py_UCS4 widest = kind_max(head, nhead), body = cut ? kind_max(text, cut) : 0;
    widest = body > widest ? body : widest;
    PyObject *out = PyUnicode_New(nhead + cut, widest);
    if (out == NULL) {
        return NULL;
    }
    if ((nhead && PyUnicode_CopyCharacters(out, 0, head, 0, nhead) < 0) ||
        (cut && PyUnicode_CopyCharacters(out, nhead, text, 0, cut) < 0)) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *
join_cut(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "join_cut(head: str, text: str, cut: int)");
        return NULL;
    }
    Py_ssize_t cut = PyLong_AsSsize_t(args[2]);
    if (cut == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (cut < 0 || cut > PyUnicode_GET_LENGTH(args[1])) {
        PyErr_SetString(PyExc_ValueError, "join_cut: cut out of the text");
        return NULL;
    }
    return join_head(args[0], args[1], cut);
}

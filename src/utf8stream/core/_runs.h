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
                return PyLong_FromSsize_t(a);                                            \
            }                                                                            \
            i = b + shortest;                                                            \
        }                                                                                \
    } while (0)

static PyObject *
find_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "find_run(text: str, members: bytes, shortest, start)");
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
    PyObject *text = args[0];
    const unsigned char *bits = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    Py_ssize_t nbytes = PyBytes_GET_SIZE(args[1]);
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
    return PyLong_FromSsize_t(-1);
}

#undef RUN_SCAN
#undef MEMBER

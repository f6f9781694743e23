/* normalize_piece(head, text, cut, tables, shortest) -> str | int

   The normalizer's pass over one piece (core/normalize.py): the form's normalization of
   head + text[:cut], where cut is a normalization boundary and head the carry of the
   last piece, made in one pass that does what the quick check of UAX 15 does, and one
   copy.  tables = (props, ccc, fill, normalize, members): props holds one
   byte per code point, the NP_* flags below (0: not filled yet); ccc the
   canonical combining classes; fill(block) fills both for the 256 code points of a block,
   from unicodedata, on first touch; normalize(s) is unicodedata.normalize(form, s);
   members the bitmap find_run takes, set for the code points of the blocks not filled
   yet, so a run it finds is checked by the caller.  Each is any buffer (props a
   writable one) of 0x110000 bytes (members 0x110000 bits).

   The characters of text[:cut] are looked up one by one: a starter the quick check says
   yes to is passed over, a non-starter is held to canonical order, and any other (the
   quick check's no or maybe, or marks out of order) makes a segment, from the boundary
   before it to the boundary after it, that normalize() is asked for.  Segments are only
   ever widened: the boundaries used are the places before a character without NP_JOINS,
   a boundary whatever comes before it.  Past NP_SEGMENTS segments the piece is handed to
   normalize() whole (text needing work throughout is normalized faster at once), and
   the pass stops there: the rest is looked over for runs as find_run does.

   With shortest > 0 the pass also looks over all of text for a run of at least shortest
   characters with NP_ONLY (no starter in their NFKD), which the stream-safe text process
   may have to break: it returns the index where the first begins, and the caller puts
   the joiners in and calls again with shortest 0.  The Python twin (core/_native.py)
   joins and normalizes, and looks for the run with find_run. */

#define NP_CHANGES 0x01 /* the form's quick check does not say yes */
#define NP_MARK 0x02    /* a non-starter: ccc holds its class */
#define NP_ONLY 0x04    /* its NFKD holds no starter */
#define NP_JOINS 0x08   /* a boundary before it depends on what comes before */
#define NP_FILLED 0x80  /* the block is filled: a plain starter is NP_FILLED alone */
#define NP_SEGMENTS 64
#define NP_UNICODE 0x110000

typedef struct {
    const void *data;
    int kind;
    Py_ssize_t n, cut;
    unsigned char *props;
    const unsigned char *ccc;
    PyObject *fill;
    Py_ssize_t shortest;
    Py_ssize_t done;     /* where the next segment may start at the earliest */
    Py_ssize_t mark_end; /* one past the last non-starter checked, and its class */
    unsigned char mark_ccc;
    Py_ssize_t only_end, only_len; /* the run of NP_ONLY characters ending at only_end */
    Py_ssize_t run_at;             /* a run of shortest starts here, or -1 */
    int whole;                     /* too many segments: normalize it all at once */
    Py_ssize_t nseg;
    Py_ssize_t seg[NP_SEGMENTS][2]; /* [start, end); start -1: the head and text[:end] */
} np_pass;

/* The flags of cp, its block filled by the Python callback first if need be; -1 on an
   error. */
static int
np_fill(np_pass *p, Py_UCS4 cp)
{
    PyObject *r = PyObject_CallFunction(p->fill, "k", (unsigned long)(cp >> 8));
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    if (!(p->props[cp] & NP_FILLED)) {
        PyErr_Format(PyExc_RuntimeError, "normalize_piece: fill(%lu) left U+%04X out",
                     (unsigned long)(cp >> 8), (unsigned int)cp);
        return -1;
    }
    return p->props[cp];
}

static inline int
np_prop(np_pass *p, Py_UCS4 cp)
{
    unsigned char v = p->props[cp];
    return v ? v : np_fill(p, cp);
}

/* Count an NP_ONLY character at i into its run; 1 when the run is long enough. */
static inline int
np_only(np_pass *p, Py_ssize_t i, int v)
{
    if (!(v & NP_ONLY) || p->shortest == 0) {
        return 0;
    }
    p->only_len = p->only_end == i ? p->only_len + 1 : 1;
    p->only_end = i + 1;
    if (p->only_len < p->shortest) {
        return 0;
    }
    p->run_at = i + 1 - p->only_len;
    return 1;
}

/* A segment around the character at i: back to the boundary before it, on to the one
   after it.  Returns where the pass goes on, p->n to stop, -1 on an error. */
static Py_ssize_t
np_segment(np_pass *p, Py_ssize_t i)
{
    Py_ssize_t a = i, b = i + 1;
    while (a > p->done && (p->props[PyUnicode_READ(p->kind, p->data, a)] & NP_JOINS)) {
        a--;
    }
    for (; b < p->cut; b++) {
        int v = np_prop(p, PyUnicode_READ(p->kind, p->data, b));
        if (v < 0) {
            return -1;
        }
        if (!(v & NP_JOINS)) {
            break;
        }
        if (np_only(p, b, v)) {
            return p->n;
        }
    }
    p->done = b;
    p->mark_end = -1;
    if (p->nseg > 0 && p->seg[p->nseg - 1][1] == a) {
        p->seg[p->nseg - 1][1] = b;
    }
    else if (p->nseg < NP_SEGMENTS) {
        p->seg[p->nseg][0] = a;
        p->seg[p->nseg][1] = b;
        p->nseg++;
    }
    else {
        p->whole = 1;
        return p->n;
    }
    return b;
}

/* The character at i, whose flags v are not NP_FILLED alone.  Returns where the pass
   goes on, p->n to stop, -1 on an error. */
static Py_ssize_t
np_step(np_pass *p, Py_ssize_t i, int v)
{
    Py_UCS4 cp = PyUnicode_READ(p->kind, p->data, i);
    if (v == 0 && (v = np_fill(p, cp)) < 0) {
        return -1;
    }
    if (np_only(p, i, v)) {
        return p->n;
    }
    if (v == NP_FILLED || i < p->done || i >= p->cut) {
        return i + 1;
    }
    if (!(v & NP_CHANGES)) {
        if (!(v & NP_MARK)) {
            return i + 1;
        }
        unsigned char k = p->ccc[cp];
        if (p->mark_end != i || p->mark_ccc <= k) {
            p->mark_end = i + 1;
            p->mark_ccc = k;
            return i + 1;
        }
    }
    return np_segment(p, i);
}

#define NP_SCAN(TYPE)                                                                    \
    do {                                                                                 \
        const TYPE *s = (const TYPE *)p->data;                                           \
        const unsigned char *props = p->props;                                           \
        Py_ssize_t i = 0, end = p->shortest ? p->n : p->cut;                             \
        while (i < end) {                                                                \
            while (i + 4 <= end) {                                                       \
                unsigned char v0 = props[s[i]], v1 = props[s[i + 1]];                    \
                unsigned char v2 = props[s[i + 2]], v3 = props[s[i + 3]];                \
                if ((v0 | v1 | v2 | v3) != NP_FILLED || (v0 & v1 & v2 & v3) != NP_FILLED) { \
                    break;                                                               \
                }                                                                        \
                i += 4;                                                                  \
            }                                                                            \
            if (i >= end) {                                                              \
                break;                                                                   \
            }                                                                            \
            unsigned char v = props[s[i]];                                               \
            if (v == NP_FILLED) {                                                        \
                i++;                                                                     \
                continue;                                                                \
            }                                                                            \
            i = np_step(p, i, v);                                                        \
            if (i < 0) {                                                                 \
                return -1;                                                               \
            }                                                                            \
        }                                                                                \
    } while (0)

static int
np_scan(np_pass *p)
{
    switch (p->kind) {
    case PyUnicode_1BYTE_KIND:
        NP_SCAN(Py_UCS1);
        break;
    case PyUnicode_2BYTE_KIND:
        NP_SCAN(Py_UCS2);
        break;
    default:
        NP_SCAN(Py_UCS4);
        break;
    }
    return 0;
}

#undef NP_SCAN

/* The carry of the last piece: a segment with text up to its first boundary, or, when
   text starts on a boundary and the head holds nothing but plain starters, passed as
   it is.  Returns 1 when the head goes as it is, 0 when in a segment, -1 on an error. */
static int
np_head(np_pass *p, PyObject *head)
{
    Py_ssize_t b = 0;
    for (; b < p->cut; b++) {
        int v = np_prop(p, PyUnicode_READ(p->kind, p->data, b));
        if (v < 0) {
            return -1;
        }
        if (!(v & NP_JOINS)) {
            break;
        }
    }
    if (b == 0) {
        int hkind = PyUnicode_KIND(head);
        const void *hdata = PyUnicode_DATA(head);
        Py_ssize_t i = 0, nhead = PyUnicode_GET_LENGTH(head);
        for (; i < nhead; i++) {
            int v = np_prop(p, PyUnicode_READ(hkind, hdata, i));
            if (v < 0) {
                return -1;
            }
            if (v != NP_FILLED) {
                break;
            }
        }
        if (i == nhead) {
            return 1;
        }
    }
    p->seg[0][0] = -1;
    p->seg[0][1] = b;
    p->nseg = 1;
    p->done = b;
    return 0;
}

/* widest with the characters of s[a:b] or'ed in, until it holds a bit of s's own kind
   (its maximum then, as nothing in s is wider): the or of a str's characters tells its
   kind as exactly as their maximum does. */
#define NP_WIDEST(TYPE)                                                                  \
    do {                                                                                 \
        const TYPE *d = (const TYPE *)PyUnicode_DATA(s);                                 \
        for (Py_ssize_t c = a; c < b && widest < floor; c += 1024) {                     \
            Py_ssize_t e = b - c < 1024 ? b : c + 1024;                                  \
            TYPE m = 0;                                                                  \
            for (Py_ssize_t i = c; i < e; i++) {                                         \
                m |= d[i];                                                               \
            }                                                                            \
            widest |= m;                                                                 \
        }                                                                                \
    } while (0)

static Py_UCS4
np_widest(PyObject *s, Py_ssize_t a, Py_ssize_t b, Py_UCS4 widest)
{
    if (PyUnicode_IS_ASCII(s)) {
        return widest;
    }
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND: {
        Py_UCS4 floor = 0x80;
        NP_WIDEST(Py_UCS1);
        break;
    }
    case PyUnicode_2BYTE_KIND: {
        Py_UCS4 floor = 0x100;
        NP_WIDEST(Py_UCS2);
        break;
    }
    default: {
        Py_UCS4 floor = 0x10000;
        NP_WIDEST(Py_UCS4);
        break;
    }
    }
    return widest;
}

#undef NP_WIDEST

/* The output: the stretches between the segments as they are, each segment as
   normalize() gives it, in one new str of the kind its characters need. */
static PyObject *
np_output(np_pass *p, PyObject *head, PyObject *text, int head_clean, PyObject *normalize)
{
    PyObject *done[NP_SEGMENTS];
    Py_ssize_t k, got = 0, total = 0, at = 0, nhead = PyUnicode_GET_LENGTH(head);
    Py_UCS4 widest = 0;
    PyObject *out = NULL;
    for (; got < p->nseg; got++) {
        Py_ssize_t a = p->seg[got][0], b = p->seg[got][1];
        PyObject *piece = a < 0 ? join_head(head, text, b) : PyUnicode_Substring(text, a, b);
        done[got] = piece == NULL ? NULL : PyObject_CallOneArg(normalize, piece);
        Py_XDECREF(piece);
        if (done[got] == NULL) {
            goto finally;
        }
        if (!PyUnicode_Check(done[got])) {
            PyErr_SetString(PyExc_TypeError, "normalize_piece: normalize() gave no str");
            got++;
            goto finally;
        }
        total += PyUnicode_GET_LENGTH(done[got]);
        widest |= PyUnicode_MAX_CHAR_VALUE(done[got]);
    }
    if (head_clean && nhead) {
        total += nhead;
        widest |= PyUnicode_MAX_CHAR_VALUE(head);
    }
    for (k = 0; k <= p->nseg; k++) {
        Py_ssize_t b = k < p->nseg ? p->seg[k][0] : p->cut;
        if (b > at) {
            total += b - at;
            widest = np_widest(text, at, b, widest);
        }
        at = k < p->nseg ? p->seg[k][1] : at;
    }
    out = PyUnicode_New(total, widest > 0x10FFFF ? 0x10FFFF : widest);
    if (out == NULL || total == 0) {
        goto finally;
    }
    Py_ssize_t w = 0;
    if (head_clean && nhead) {
        if (PyUnicode_CopyCharacters(out, 0, head, 0, nhead) < 0) {
            Py_CLEAR(out);
            goto finally;
        }
        w = nhead;
    }
    at = 0;
    for (k = 0; k <= p->nseg; k++) {
        Py_ssize_t b = k < p->nseg ? p->seg[k][0] : p->cut;
        if (b > at) {
            if (PyUnicode_CopyCharacters(out, w, text, at, b - at) < 0) {
                Py_CLEAR(out);
                goto finally;
            }
            w += b - at;
        }
        if (k == p->nseg) {
            break;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(done[k]);
        if (len && PyUnicode_CopyCharacters(out, w, done[k], 0, len) < 0) {
            Py_CLEAR(out);
            goto finally;
        }
        w += len;
        at = p->seg[k][1];
    }
finally:
    for (k = 0; k < got; k++) {
        Py_XDECREF(done[k]);
    }
    return out;
}

/* The pass, once the buffers are held: the output, the index of a long run, or NULL. */
static PyObject *
np_piece(np_pass *p, PyObject *head, PyObject *text, PyObject *normalize,
         const Py_buffer *members)
{
    Py_ssize_t nhead = PyUnicode_GET_LENGTH(head);
    int head_clean = 1;
    if (nhead && (head_clean = np_head(p, head)) < 0) {
        return NULL;
    }
    if (np_scan(p) < 0) {
        return NULL;
    }
    if (p->run_at >= 0) {
        return PyLong_FromSsize_t(p->run_at);
    }
    if (p->whole && p->shortest) {
        /* The pass stopped short: the rest is looked over as find_run does. */
        Py_ssize_t at = run_scan(text, (const unsigned char *)members->buf, members->len,
                                 p->shortest, 0);
        if (at >= 0) {
            return PyLong_FromSsize_t(at);
        }
    }
    if (p->whole) {
        PyObject *joined = join_head(head, text, p->cut);
        if (joined == NULL) {
            return NULL;
        }
        PyObject *out = PyObject_CallOneArg(normalize, joined);
        Py_DECREF(joined);
        return out;
    }
    if (p->nseg == 0 && nhead == 0 && p->cut == p->n) {
        return Py_NewRef(text);
    }
    return np_output(p, head, text, head_clean, normalize);
}

static PyObject *
normalize_piece(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1]) ||
        !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "normalize_piece(head: str, text: str, cut: int, tables: tuple of 5,"
                        " shortest: int)");
        return NULL;
    }
    PyObject *head = args[0], *text = args[1], *tables = args[3];
    Py_ssize_t cut = PyLong_AsSsize_t(args[2]);
    Py_ssize_t shortest = PyLong_AsSsize_t(args[4]);
    if ((cut == -1 || shortest == -1) && PyErr_Occurred()) {
        return NULL;
    }
    if (cut < 0 || cut > PyUnicode_GET_LENGTH(text) || shortest < 0) {
        PyErr_SetString(PyExc_ValueError, "normalize_piece: cut out of the text, or shortest < 0");
        return NULL;
    }
    if (PyUnicode_IS_ASCII(text) && PyUnicode_IS_ASCII(head)) {
        /* Normalized in every form, and no character of it counts toward a run: the
           flag says so, the tables are not needed. */
        return join_head(head, text, cut);
    }
    Py_buffer props, ccc, members;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(tables, 0), &props, PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(tables, 1), &ccc, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&props);
        return NULL;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(tables, 4), &members, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&ccc);
        PyBuffer_Release(&props);
        return NULL;
    }
    PyObject *out = NULL;
    if (props.len < NP_UNICODE || ccc.len < NP_UNICODE) {
        PyErr_SetString(PyExc_ValueError, "normalize_piece: tables of 0x110000 bytes expected");
    }
    else {
        np_pass p = {
            .data = PyUnicode_DATA(text),
            .kind = PyUnicode_KIND(text),
            .n = PyUnicode_GET_LENGTH(text),
            .cut = cut,
            .props = (unsigned char *)props.buf,
            .ccc = (const unsigned char *)ccc.buf,
            .fill = PyTuple_GET_ITEM(tables, 2),
            .shortest = shortest,
            .mark_end = -1,
            .only_end = -1,
            .run_at = -1,
        };
        out = np_piece(&p, head, text, PyTuple_GET_ITEM(tables, 3), &members);
    }
    PyBuffer_Release(&members);
    PyBuffer_Release(&ccc);
    PyBuffer_Release(&props);
    return out;
}

#undef NP_CHANGES
#undef NP_MARK
#undef NP_ONLY
#undef NP_JOINS
#undef NP_FILLED
#undef NP_SEGMENTS
#undef NP_UNICODE

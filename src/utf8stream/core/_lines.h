/* Line cutting: Units.lines (a buffer's complete lines cut and decoded in one pass)
   and split_lines (whole lines of one character per code unit, cut at their newline
   units).  Part of the _speedups
   translation unit (see _speedups.c). */

/* Offsets packed as native int64 (each_offset 2): no int object per line.  The buffer
   becomes a bytes object, handed out as a memoryview cast to "q" (a Sequence[int]). */
typedef struct {
    long long *v;
    Py_ssize_t n, cap;
} packed_t;

static int
packed_push(packed_t *p, long long value)
{
    if (p->n == p->cap) {
        Py_ssize_t cap = p->cap ? 2 * p->cap : 256;
        long long *v = PyMem_Realloc(p->v, (size_t)cap * sizeof(long long));
        if (v == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = value;
    return 0;
}

/* The memoryview (format "q") of the values; frees the buffer either way. */
static PyObject *
packed_view(packed_t *p)
{
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)p->v,
                                                p->n * (Py_ssize_t)sizeof(long long));
    PyMem_Free(p->v);
    p->v = NULL;
    if (bytes == NULL) {
        return NULL;
    }
    PyObject *raw = PyMemoryView_FromObject(bytes);
    Py_DECREF(bytes);
    if (raw == NULL) {
        return NULL;
    }
    PyObject *view = PyObject_CallMethod(raw, "cast", "s", "q");
    Py_DECREF(raw);
    return view;
}

/* The lines' strings, gathered before their list is made (at its final size, with no
   append per line). */
typedef struct {
    PyObject **v;
    Py_ssize_t n, cap;
} strs_t;

/* Takes the reference to s (even on failure). */
static int
strs_push(strs_t *p, PyObject *s)
{
    if (p->n == p->cap) {
        Py_ssize_t cap = p->cap ? 2 * p->cap : 256;
        PyObject **v = PyMem_Realloc(p->v, (size_t)cap * sizeof(PyObject *));
        if (v == NULL) {
            Py_DECREF(s);
            PyErr_NoMemory();
            return -1;
        }
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = s;
    return 0;
}

/* The list of the strings (their references move to it); NULL on failure.  The buffer
   is freed, and what it held is released, either way. */
static PyObject *
strs_list(strs_t *p, int fail)
{
    PyObject *list = fail ? NULL : PyList_New(p->n);
    for (Py_ssize_t k = 0; k < p->n; k++) {
        if (list != NULL) {
            PyList_SET_ITEM(list, k, p->v[k]);
        }
        else {
            Py_DECREF(p->v[k]);
        }
    }
    PyMem_Free(p->v);
    p->v = NULL;
    p->n = p->cap = 0;
    return list;
}

/* The each_offset argument: 0 (the end only), 1 (a list of ints), 2 (packed); a bool
   is 0 or 1.  -1 on error. */
static int
parse_each_offset(PyObject *arg, const char *who)
{
    long mode = PyLong_Check(arg) ? PyLong_AsLong(arg) : -1;
    if (mode == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (mode < 0 || mode > 2) {
        PyErr_Format(PyExc_ValueError,
                     "%s: each_offset is 0 or False (the end only), 1 or True (a list), "
                     "2 (packed int64)", who);
        return -1;
    }
    return (int)mode;
}

/* The first byte of b[i:n) that ends a line's ASCII stretch: a newline byte (``sep``, or
   \r and \n when ``sep`` is -1) or, with ``high``, any byte >= 0x80; n if none.  One pass
   over the bytes, 32 at a time: a line is found and known to be ASCII at once, and its
   bytes are still in the L1 cache when they are copied into its string. */
static inline Py_ssize_t
line_stop(const unsigned char *b, Py_ssize_t i, Py_ssize_t n, long sep, int high)
{
    const unsigned char lf = sep < 0 ? '\n' : (unsigned char)sep;
    const unsigned char cr = sep < 0 ? '\r' : (unsigned char)sep;
#if HAVE_SSE2
    const __m128i vlf = _mm_set1_epi8((char)lf), vcr = _mm_set1_epi8((char)cr);
    const __m128i top = _mm_set1_epi8(high ? (char)0x80 : 0);
    while (i + 32 <= n) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(b + i));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(b + i + 16));
        __m128i m0 = _mm_or_si128(_mm_and_si128(v0, top),
                                  _mm_or_si128(_mm_cmpeq_epi8(v0, vlf), _mm_cmpeq_epi8(v0, vcr)));
        __m128i m1 = _mm_or_si128(_mm_and_si128(v1, top),
                                  _mm_or_si128(_mm_cmpeq_epi8(v1, vlf), _mm_cmpeq_epi8(v1, vcr)));
        unsigned m = (unsigned)_mm_movemask_epi8(m0) | ((unsigned)_mm_movemask_epi8(m1) << 16);
        if (m) {
            return i + __builtin_ctz(m);
        }
        i += 32;
    }
#endif
    for (; i < n; i++) {
        unsigned char c = b[i];
        if (c == lf || c == cr || (high && c >= 0x80)) {
            return i;
        }
    }
    return n;
}

/* A short line with non-ASCII characters, well-formed: its string, decoded here in two
   passes over bytes in L1 (one counts the characters and finds the widest lead, which
   give the string's exact length and kind; one decodes into it), without the general
   decoder's set-up.  NULL without an exception when the line holds a malformed unit
   (or when out of memory, with one): the caller then decodes it the general way, which
   reports and counts the units.  Nothing is counted here. */
#define SHORT_LINE_BYTES 256

#define DEFINE_SHORT_DECODE(NAME, TYPE)                                                    \
    static int NAME(const unsigned char *p, const unsigned char *end, TYPE *out)           \
    {                                                                                      \
        while (p < end) {                                                                  \
            Py_UCS4 c = *p;                                                                \
            if (c < 0x80) {                                                                \
                *out++ = (TYPE)c;                                                          \
                p++;                                                                       \
                continue;                                                                  \
            }                                                                              \
            Py_ssize_t left = end - p;                                                     \
            if (c < 0xE0) {                                                                \
                if (c < 0xC2 || left < 2 || (p[1] & 0xC0) != 0x80) {                       \
                    return -1;                                                             \
                }                                                                          \
                *out++ = (TYPE)(((c & 0x1F) << 6) | (p[1] & 0x3F));                        \
                p += 2;                                                                    \
            }                                                                              \
            else if (c < 0xF0) {                                                           \
                if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||          \
                    (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)) {           \
                    return -1;                                                             \
                }                                                                          \
                *out++ = (TYPE)(((c & 0x0F) << 12) | ((Py_UCS4)(p[1] & 0x3F) << 6) |       \
                                (p[2] & 0x3F));                                            \
                p += 3;                                                                    \
            }                                                                              \
            else {                                                                         \
                Py_UCS4 cp = left < 4 ? 0 : four_byte_char(le32(p));                       \
                if (cp == 0) {                                                             \
                    return -1;                                                             \
                }                                                                          \
                *out++ = (TYPE)cp;                                                         \
                p += 4;                                                                    \
            }                                                                              \
        }                                                                                  \
        return 0;                                                                          \
    }

DEFINE_SHORT_DECODE(short_decode1, Py_UCS1)
DEFINE_SHORT_DECODE(short_decode2, Py_UCS2)
DEFINE_SHORT_DECODE(short_decode4, Py_UCS4)

/* 16 bytes of 0xFF, then 16 of 0: 16 bytes loaded from (LOW_LANES + 16 - m) keep the first
   m lanes (0 <= m <= 16). */
static const unsigned char LOW_LANES[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
};

/* A short line of the four-byte kind into s (its characters), with avx2: the blocks
   of 32 bytes inside the line by mixed_blocks_avx2 (no branch on what they hold: emoji
   among ASCII, sequences with joiners, the random mix of lengths that the scalar loop
   mispredicts), into a buffer on the stack (its stores write whole vectors, past the
   line's last character), the bytes after the last block by short_decode4.  -1 when the
   line holds a malformed unit (the kernel stops in front of one; the scalar loop finds
   it). */
static int
short_decode4_into(const unsigned char *p, const unsigned char *end, PyObject *s, int avx2)
{
#if HAVE_AVX2
    if (avx2 && end - p >= 32) {
        Py_UCS4 tmp[SHORT_LINE_BYTES + 32], acc = 0;
        Py_ssize_t j = 0, chars = PyUnicode_GET_LENGTH(s);
        Py_ssize_t c = mixed_blocks_avx2(p, &j, end - p, tmp, SHORT_LINE_BYTES + 32, &acc);
        if (c > chars) {
            return -1; /* (cannot happen: the count is of the same bytes) */
        }
        memcpy(PyUnicode_4BYTE_DATA(s), tmp, (size_t)c * sizeof(Py_UCS4));
        return short_decode4(p + j, end, PyUnicode_4BYTE_DATA(s) + c);
    }
#else
    (void)avx2;
#endif
    return short_decode4(p, end, PyUnicode_4BYTE_DATA(s));
}

/* With avx2, a line of the two-byte kind (CJK, Cyrillic or Greek words among spaces) up
   to this long is decoded as a short one, its blocks by mixed_blocks2_avx2 into a
   buffer on the stack (longer lines by the general decoder, into their string). */
#define UCS2_LINE_BYTES 2048

/* A short line of the two-byte kind into s (its characters), as short_decode4_into does
   with mixed_blocks2_avx2, which takes the last bytes too (fewer than 32) as one block
   when the 32 bytes from them lie in the buffer (they end at ``readable``, the end of
   the line's buffer: the bytes past the line are read, never decoded); the bytes that
   it leaves by short_decode2. */
static int
short_decode2_into(const unsigned char *p, const unsigned char *end,
                   const unsigned char *readable, PyObject *s, int avx2)
{
#if HAVE_AVX2
    if (avx2 && (end - p >= 32 || readable - p >= 32)) {
        Py_UCS2 tmp[UCS2_LINE_BYTES + 32];
        Py_UCS4 acc = 0;
        Py_ssize_t j = 0, chars = PyUnicode_GET_LENGTH(s);
        Py_ssize_t c = mixed_line2_avx2(p, &j, end - p, readable - p, tmp, UCS2_LINE_BYTES + 32,
                                        &acc);
        if (c > chars) {
            return -1; /* (cannot happen: the count is of the same bytes) */
        }
        memcpy(PyUnicode_2BYTE_DATA(s), tmp, (size_t)c * sizeof(Py_UCS2));
        return short_decode2(p + j, end, PyUnicode_2BYTE_DATA(s) + c);
    }
#else
    (void)avx2, (void)readable;
#endif
    return short_decode2(p, end, PyUnicode_2BYTE_DATA(s));
}

static PyObject *
short_line(const unsigned char *b, Py_ssize_t i, Py_ssize_t e, Py_ssize_t n, int avx2)
{
    /* Characters: the bytes that are not continuation bytes (in well-formed text). */
    Py_ssize_t chars = e - i, k = i;
    unsigned int top = 0;
#if HAVE_SSE2
    /* Per lane, the widest byte and minus the continuation bytes (at most 16 blocks, the
       last one perhaps masked, as SHORT_LINE_BYTES is 256: no lane's count wraps). */
    __m128i vmax = _mm_setzero_si128(), conts = _mm_setzero_si128();
    const __m128i below = _mm_set1_epi8((char)0xC0); /* signed: 0x80..0xBF are less */
    for (; k + 16 <= e; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + k));
        vmax = _mm_max_epu8(vmax, v);
        conts = _mm_sub_epi8(conts, _mm_cmplt_epi8(v, below));
    }
    if (k < e && k + 16 <= n) {
        /* The last bytes of the line, read as a block of the buffer (b[0:n)) with the
           lanes past the line zeroed: a 0 is neither the widest byte nor a
           continuation byte. */
        __m128i keep = _mm_loadu_si128((const __m128i *)(LOW_LANES + 16 - (e - k)));
        __m128i v = _mm_and_si128(_mm_loadu_si128((const __m128i *)(b + k)), keep);
        vmax = _mm_max_epu8(vmax, v);
        conts = _mm_sub_epi8(conts, _mm_cmplt_epi8(v, below));
        k = e;
    }
    vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 8));
    vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 4));
    vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 2));
    vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 1));
    top = (unsigned int)_mm_cvtsi128_si32(vmax) & 0xFF;
    conts = _mm_sad_epu8(conts, _mm_setzero_si128());
    chars -= _mm_cvtsi128_si32(conts) + _mm_cvtsi128_si32(_mm_srli_si128(conts, 8));
#endif
    for (; k < e; k++) {
        unsigned int c = b[k];
        top = c > top ? c : top;
        chars -= (c & 0xC0) == 0x80;
    }
    if (top < 0xC2) {
        return NULL; /* continuation bytes with no lead, or C0/C1: malformed */
    }
    Py_UCS4 maxchar = top < 0xC4 ? 0xFF : top < 0xF0 ? 0xFFFF : 0x10FFFF;
    PyObject *s = PyUnicode_New(chars, maxchar);
    if (s == NULL) {
        return NULL;
    }
    int bad;
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND:
        bad = short_decode1(b + i, b + e, PyUnicode_1BYTE_DATA(s));
        break;
    case PyUnicode_2BYTE_KIND:
        bad = short_decode2_into(b + i, b + e, b + n, s, avx2);
        break;
    default:
        /* The kernel for a mix of lengths (emoji among words: about two bytes a
           character); a line of nearly all four-byte characters (dense emoji, nearly
           four bytes a character) decodes faster by the scalar loop, whose branch then
           goes one way (``benchmarks/ab_builds.py --lines`` on the dense-emoji corpus). */
        bad = short_decode4_into(b + i, b + e, s, avx2 && e - i < 3 * chars);
        break;
    }
    if (bad) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

/* The lines of b[*pos:n), whose first byte is at the absolute offset ``base``, at most
   ``max_lines`` of them (-1: all), as Units_lines describes; *pos moves past the last
   line cut.  -1 on error. */
static int
cut_lines(UnitsObject *self, const unsigned char *b, Py_ssize_t *pos, Py_ssize_t n,
          long long base, long sep, Py_ssize_t limit, Py_ssize_t max_lines, int each_offset,
          PyObject *offsets, packed_t *packed, strs_t *strs, long long *chars)
{
    Py_ssize_t i = *pos;
#if HAVE_AVX2
    const int avx2 = self->state->simd == SIMD_AVX2;
#else
    const int avx2 = 0;
#endif
    while (max_lines != 0) {
        Py_ssize_t e = line_stop(b, i, n, sep, 1);
        int ascii = 1;
        if (e < n && b[e] >= 0x80) {
            ascii = 0;
            e = line_stop(b, e, n, sep, 0);
        }
        if (e >= n) {
            break;
        }
        Py_ssize_t t = 1;
        if (sep < 0 && b[e] == '\r') {
            if (e + 1 == n) {
                break; /* perhaps the first half of \r\n */
            }
            t = b[e + 1] == '\n' ? 2 : 1;
        }
        if (e - i > limit) {
            break;
        }
        if (each_offset == 1 ? append_int(offsets, base + i) < 0
                             : each_offset == 2 && packed_push(packed, base + i) < 0) {
            return -1;
        }
        PyObject *s;
        if (ascii) {
            s = ascii_string(b + i, e - i);
        }
        else if (e - i <= SHORT_LINE_BYTES) {
            if ((s = short_line(b, i, e, n, avx2)) == NULL && !PyErr_Occurred()) {
                Py_ssize_t stop, unit;
                Py_UCS4 bits = 0;
                s = own_segment(self, b, i, e, n, base, 0, &stop, &bits, &unit);
            }
        }
#if HAVE_AVX2
        else if (avx2 && e - i <= UCS2_LINE_BYTES) {
            /* counted once: for the string of the two-byte kind decoded here, or for
               the general decoder */
            Py_ssize_t counted;
            unsigned int top;
            prescan_avx2(b, i, e, &counted, &top);
            s = NULL;
            if (top >= 0xC4 && top < 0xF0) {
                s = PyUnicode_New(counted, 0xFFFF);
                if (s != NULL && short_decode2_into(b + i, b + e, b + n, s, 1)) {
                    Py_CLEAR(s); /* a malformed unit: the general decoder reports it */
                }
            }
            if (s == NULL && !PyErr_Occurred()) {
                Py_ssize_t stop, unit;
                Py_UCS4 bits = 0;
                s = own_segment_counted(self, NOT_A_CHAR, b, i, e, n, base, 0, &stop, &bits,
                                        &unit, counted, top);
            }
        }
#endif
        else {
            Py_ssize_t stop, unit;
            Py_UCS4 bits = 0;
            s = own_segment(self, b, i, e, n, base, 0, &stop, &bits, &unit);
        }
        if (s == NULL) {
            return -1;
        }
        *chars += PyUnicode_GET_LENGTH(s) + t;
        if (strs_push(strs, s) < 0) {
            return -1;
        }
        i = e + t;
        *pos = i;
        if (max_lines > 0) {
            max_lines--;
        }
    }
    return 0;
}

/* Units.lines' arguments but head and data (see there): 0, or -1 with an exception. */
static int
lines_args(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs, int *each_offset,
           long *sep, Py_ssize_t *limit, long long *base)
{
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "lines(head: bytes, data: bytes-like, position: int, "
                                         "sep: int, limit: int[, each_offset: int])");
        return -1;
    }
    *each_offset = 1;
    if (nargs == 6 && (*each_offset = parse_each_offset(args[5], "lines")) < 0) {
        return -1;
    }
    if (refuse_reentry(self) < 0) {
        return -1;
    }
    *sep = parse_sep(self, args[3]);
    if (*sep == -2) {
        return -1;
    }
    *limit = PyLong_AsSsize_t(args[4]);
    if (*limit == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (*limit < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must be non-negative");
        return -1;
    }
    *base = PyLong_AsLongLong(args[2]);
    if (*base == -1 && PyErr_Occurred()) {
        return -1;
    }
    return 0;
}

/* lines(head, data, position, sep, limit[, each_offset]) -> (parts, offsets)

   For a reader that keeps the unfinished line itself (the line engine): the complete
   lines of a buffer, each cut from the bytes and decoded on its own (a newline byte is a
   character of its own, never part of a sequence or a unit, so cutting first and
   decoding each piece is the same as decoding first).  The buffer is head + data, whose
   first byte is at the absolute offset ``position``; the decoder holds nothing (no
   pending prefix).  ``data`` may be any contiguous buffer (a memoryview slice of a
   long read), read where it lies: only the line that ``head`` begins is joined (head
   and data are not copied into one buffer, unless head holds a newline itself).
   parts: the text of each line that ends in the buffer, without its newline: the byte
   ``sep`` (0..127), or with ``sep`` -1 universal newlines (\r\n, \r, \n); a \r that
   ends the buffer may be the first half of \r\n and does not end a line yet.
   Decoding stops before the first line whose content is longer than ``limit`` bytes:
   the caller handles that one.  offsets: the absolute offset of each line's first byte,
   then the offset just past the last line, where the undecoded rest begins.  With
   each_offset 0 (False), offsets holds only that last one: a reader that does not hand
   out offsets is spared an int object per line (a tenth of the time on short lines);
   with 2, all of them packed in a memoryview of int64 (format "q"), still no int
   object per line (the follower's C ``Line`` makes its offset's int when asked). */
static PyObject *
Units_lines(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int each_offset;
    long sep;
    Py_ssize_t limit;
    long long base;
    if (lines_args(self, args, nargs, &each_offset, &sep, &limit, &base) < 0) {
        return NULL;
    }
    PyObject *head = args[0], *data = args[1];
    if (!PyBytes_Check(head) || !(PyBytes_Check(data) || PyObject_CheckBuffer(data))) {
        PyErr_SetString(PyExc_TypeError, "pending and data must be bytes");
        return NULL;
    }
    if (ready_check(self->state) < 0) {
        return NULL;
    }
    /* data may be a memoryview (a slice of a long read, not copied): its buffer is
       held for the call, so it cannot be released under the decoding loop. */
    Py_buffer view;
    int viewed = 0;
    const unsigned char *b;
    Py_ssize_t n;
    if (PyBytes_Check(data)) {
        b = (const unsigned char *)PyBytes_AS_STRING(data);
        n = PyBytes_GET_SIZE(data);
    }
    else {
        if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        viewed = 1;
        b = (const unsigned char *)view.buf;
        n = view.len;
    }
    const unsigned char *h = (const unsigned char *)PyBytes_AS_STRING(head);
    Py_ssize_t nh = PyBytes_GET_SIZE(head);
    PyObject *buf = NULL; /* head + data, or head + the start of data */
    if (base < 0 || base > LLONG_MAX - nh - n) {
        if (viewed) {
            PyBuffer_Release(&view);
        }
        PyErr_SetString(PyExc_OverflowError, "lines: offsets past 2**63 - 1");
        return NULL;
    }
    self->fail_start = -1;
    packed_t packed = {NULL, 0, 0};
    strs_t strs = {NULL, 0, 0};
    PyObject *parts = NULL;
    PyObject *offsets = each_offset == 2 ? NULL : PyList_New(0);
    PyObject *result = NULL;
    if (offsets == NULL && each_offset != 2) {
        goto fail;
    }
    Py_INCREF(self);
    long long chars = 0;
    /* Where the lines of b continue (i), and the absolute offset of b[0]. */
    Py_ssize_t i = 0;
    long long b_base = base + nh;
    int more = 1;
    if (nh > 0) {
        /* The line that head begins: head cannot end a line of its own but by a \r
           at its end (the reader held it), so that line is head + data up to its first
           newline byte, and one byte more (to tell \r\n from \r).  Only these bytes are
           joined.  A head that does hold a newline is joined with all of data. */
        Py_ssize_t e_head = line_stop(h, 0, nh, sep, 0);
        int whole = e_head < nh && !(sep < 0 && e_head == nh - 1 && h[e_head] == '\r');
        Py_ssize_t take = n;
        if (!whole) {
            Py_ssize_t e0 = line_stop(b, 0, n, sep, 0);
            take = e0 + 2 < n ? e0 + 2 : n;
        }
        buf = PyBytes_FromStringAndSize(NULL, nh + take);
        if (buf == NULL) {
            goto fail_self;
        }
        memcpy(PyBytes_AS_STRING(buf), h, nh);
        memcpy(PyBytes_AS_STRING(buf) + nh, b, take);
        const unsigned char *j = (const unsigned char *)PyBytes_AS_STRING(buf);
        Py_ssize_t used = 0;
        if (cut_lines(self, j, &used, nh + take, base, sep, limit, whole ? -1 : 1,
                      each_offset, offsets, &packed, &strs, &chars) < 0) {
            goto fail_self;
        }
        if (whole || used == 0) {
            /* All of it was cut, or the first line is not complete (or too long). */
            more = 0;
            b_base = base;
            i = used;
        }
        else {
            i = used - nh; /* >= 0: the line ends at head's \r at the earliest */
        }
    }
    if (more && cut_lines(self, b, &i, n, b_base, sep, limit, -1, each_offset, offsets,
                          &packed, &strs, &chars) < 0) {
        if (self->fail_start >= 0) {
            self->fail_start += b_base - base; /* of head + data, as documented */
        }
        goto fail_self;
    }
    if (each_offset == 2) {
        if (packed_push(&packed, b_base + i) < 0 || (offsets = packed_view(&packed)) == NULL) {
            goto fail_self;
        }
    }
    else if (append_int(offsets, b_base + i) < 0) {
        goto fail_self;
    }
    if ((parts = strs_list(&strs, 0)) == NULL) {
        goto fail_self;
    }
    self->chars += chars;
    Py_INCREF(parts);
    Py_INCREF(offsets);
    result = pair(parts, offsets);
fail_self:
    Py_DECREF(self);
fail:
    PyMem_Free(packed.v);
    strs_list(&strs, 1); /* what is left of it on failure */
    Py_XDECREF(parts);
    Py_XDECREF(offsets);
    Py_XDECREF(buf);
    if (viewed) {
        PyBuffer_Release(&view);
    }
    return result;
}


/* The first code unit equal to ``u`` (``unit`` bytes) at or after ``i`` in b[0:n), at a
   multiple of ``unit`` (``i`` is one), or n.  memchr finds each candidate by the unit's
   last nonzero byte (its low byte in either order for ASCII), then the unit is compared
   whole where it is aligned. */
static inline Py_ssize_t
find_unit(const unsigned char *b, Py_ssize_t i, Py_ssize_t n, const unsigned char *u,
          Py_ssize_t unit)
{
    Py_ssize_t j = unit - 1;
    while (j > 0 && u[j] == 0) {
        j--;
    }
    while (i + unit <= n) {
        const unsigned char *q = memchr(b + i + j, u[j], (size_t)(n - i - j));
        if (q == NULL) {
            return n;
        }
        Py_ssize_t at = (q - b) - j;
        if (at % unit == 0 && at + unit <= n && memcmp(b + at, u, (size_t)unit) == 0) {
            return at;
        }
        i = at - at % unit + unit;
    }
    return n;
}

/* The newline units of split_lines: one fixed unit, or \r and \n (universal), each of
   the same size, which is the code unit. */
static int
newline_units(PyObject *arg, const unsigned char **nl, const unsigned char **lf,
              Py_ssize_t *unit)
{
    if (PyBytes_Check(arg) && PyBytes_GET_SIZE(arg) >= 1) {
        *nl = (const unsigned char *)PyBytes_AS_STRING(arg);
        *lf = NULL;
        *unit = PyBytes_GET_SIZE(arg);
        return 0;
    }
    if (PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) == 2) {
        PyObject *cr = PyTuple_GET_ITEM(arg, 0), *nlf = PyTuple_GET_ITEM(arg, 1);
        if (PyBytes_Check(cr) && PyBytes_Check(nlf) && PyBytes_GET_SIZE(cr) >= 1 &&
            PyBytes_GET_SIZE(cr) == PyBytes_GET_SIZE(nlf)) {
            *nl = (const unsigned char *)PyBytes_AS_STRING(cr);
            *lf = (const unsigned char *)PyBytes_AS_STRING(nlf);
            *unit = PyBytes_GET_SIZE(cr);
            return 0;
        }
    }
    PyErr_SetString(PyExc_TypeError, "split_lines: newline is one encoded code unit (bytes), "
                                     "or the pair (\\r, \\n) of them");
    return -1;
}

/* split_lines(data, text, newline, base, limit, each_offset) -> (contents, offsets) | None

   The line engine's cut of whole lines whose code units are each one character
   (UTF-16/32 without surrogate pairs, single-byte codecs): the newlines are searched in
   the encoded bytes ``data`` at code-unit offsets, as linesearch.line_ends searches
   them (``newline``: the encoded newline unit, or the pair of the \r and \n units for
   universal newlines, \r\n one newline), and each line's content is the slice of
   ``text``, the decoded ``data``, at the same units.  Returns the contents and the
   offset of each line's start (from ``base``) then of the end; with ``each_offset``
   false, the end only.  None if a line's content is longer than ``limit`` bytes (the
   caller cuts those lines another way). */
static PyObject *
split_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const unsigned char *nl, *lf;
    Py_ssize_t unit;
    if (nargs != 6 || !PyBytes_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "split_lines(data: bytes, text: str, newline, base, "
                                         "limit, each_offset)");
        return NULL;
    }
    if (newline_units(args[2], &nl, &lf, &unit) < 0) {
        return NULL;
    }
    PyObject *text = args[1];
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    long long base = PyLong_AsLongLong(args[3]);
    if (base == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    int each_offset = parse_each_offset(args[5], "split_lines");
    if (each_offset < 0) {
        return NULL;
    }
    if (PyUnicode_GET_LENGTH(text) * unit != n || limit < 0 || base < 0 ||
        n > LLONG_MAX - base) {
        PyErr_SetString(PyExc_ValueError, "split_lines: one character of text per code unit "
                                          "of data, limit >= 0, and offsets from base >= 0 "
                                          "below 2**63");
        return NULL;
    }
    packed_t packed = {NULL, 0, 0};
    PyObject *contents = PyList_New(0);
    PyObject *offsets = each_offset == 2 ? NULL : PyList_New(0);
    if (contents == NULL || (offsets == NULL && each_offset != 2)) {
        goto fail;
    }
    Py_ssize_t i = 0, next_lf = -1, next_cr = -1;
    for (;;) {
        Py_ssize_t e, t = unit;
        if (lf == NULL) {
            e = find_unit(b, i, n, nl, unit);
        }
        else {
            if (next_lf < i) {
                next_lf = find_unit(b, i, n, lf, unit);
            }
            if (next_cr < i) {
                next_cr = find_unit(b, i, n, nl, unit);
            }
            e = next_lf < next_cr ? next_lf : next_cr;
            if (e == next_cr && e + 2 * unit <= n && memcmp(b + e + unit, lf, unit) == 0) {
                t = 2 * unit;
            }
        }
        if (e >= n) {
            break; /* after the last newline: nothing, as the caller promises */
        }
        if (e - i > limit) {
            PyMem_Free(packed.v);
            Py_DECREF(contents);
            Py_XDECREF(offsets);
            Py_RETURN_NONE;
        }
        if (each_offset == 1 ? append_int(offsets, base + i) < 0
                             : each_offset == 2 && packed_push(&packed, base + i) < 0) {
            goto fail;
        }
        PyObject *line = PyUnicode_Substring(text, i / unit, e / unit);
        if (line == NULL) {
            goto fail;
        }
        int err = PyList_Append(contents, line);
        Py_DECREF(line);
        if (err < 0) {
            goto fail;
        }
        i = e + t;
    }
    if (each_offset == 2) {
        if (packed_push(&packed, base + i) < 0 || (offsets = packed_view(&packed)) == NULL) {
            goto fail;
        }
    }
    else if (append_int(offsets, base + i) < 0) {
        goto fail;
    }
    return pair(contents, offsets);
fail:
    PyMem_Free(packed.v);
    Py_XDECREF(contents);
    Py_XDECREF(offsets);
    return NULL;
}

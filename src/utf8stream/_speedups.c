/* Optional accelerator for utf8stream (the package works without it).

 * 1. Units: the C scanner (core/scanner.py), a UTF-8 decoder of our own.
 *    Units(replacement, callback).feed(pending, data, final, position) is the scanner
 *    call of one Utf8Decoder.decode; lines() cuts the complete lines of a buffer and
 *    decodes each as it goes.  Each malformed unit (a maximal subpart) is classified,
 *    counted and reported to the callback as a Malformed event, in order, exactly as
 *    the pure-Python scanner does, and replaced by the constant replacement ("replace":
 *    U+FFFD, "ignore": nothing) or, made with None (a mapping object: every other
 *    policy), by the str the callback returns.  When the callback raises, fail_start /
 *    resume_at tell where the failing unit was and partial is the text before it.
 *
 *    Why not CPython's decoder with an error handler: that costs an exception object
 *    and a result tuple per unit, and splitting lines means building the chunk's text
 *    and cutting it again.  Ours looks over the bytes once to choose each string's
 *    kind and length, then validates and decodes in one pass straight into it (16
 *    ASCII bytes at a time with SSE2, two- three- and four-byte characters in runs of
 *    their own; with AVX2, chosen at run time, 32 ASCII bytes and eight three-byte
 *    characters a step, and UCS-2 and UCS-4 text of mixed lengths 32 bytes a step:
 *    _simd.h); it keeps no buffer between calls.
 *
 * 2. PlainEncoder: Utf8Encoder.encode for plain UTF-8 in one C call per chunk.
 *
 * 3. BufferedAsyncIterator: `async for` over items that are mostly ready already.
 *    __anext__ hands out the next ready item through an awaitable that completes at once,
 *    and calls the Python coroutine function `refill` only when none is ready.  A Python
 *    `async def __anext__` costs a coroutine per item, an async generator a frame resume;
 *    this costs a C call.
 *
 * 4. split_lines(): the line engine's cut of decoded text into lines with offsets, for
 *    encodings whose code units are characters (UTF-16/32, single-byte codecs).
 *
 * Everything here returns plain data (texts, offsets): the follower's record type and
 * read buffers are the apps layer's own extension (apps/_follow_speedups.c).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_transcode.h"
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define HAVE_SSE2 1
#else
#define HAVE_SSE2 0
#endif

/* ---- module state ------------------------------------------------------------------ */

enum {
    K_UNEXPECTED_CONTINUATION,
    K_OVERLONG,
    K_SURROGATE,
    K_OUT_OF_RANGE,
    K_INVALID_BYTE,
    K_INCOMPLETE_SEQUENCE,
    K_TRUNCATED_AT_END,
    N_KINDS
};

/* Everything the module keeps lives here, one per module object (PEP 489 multi-phase
   initialisation): no static globals, so two module objects (a second import of the
   extension, a subinterpreter) share nothing.  The types are heap types created per
   module; each holds its module, so an object finds the state through its type. */
typedef struct {
    PyTypeObject *units_type;
    PyTypeObject *encoder_type;
    PyTypeObject *buffered_type;
    /* Set by setup(), from Python: */
    PyObject *kinds[N_KINDS]; /* MalformedKind members, in the order above */
    PyTypeObject *event_type; /* Malformed */
    Py_ssize_t slot_offset, slot_data, slot_kind; /* where its slots are */
    PyObject *empty; /* "" */
    PyObject *str_final, *str_c_failed; /* interned names */
    PyTypeObject *bound_decode_type;
    PyTypeObject *decoder_method_type;
    int ready;
    int simd; /* SIMD_AVX2, SIMD_SSE2 or SIMD_NONE: the kernels used (_simd.h) */
    int prefetchw; /* the CPU has PREFETCHW (with AVX2: ascii_copy_avx2) */
} module_state;

static inline module_state *
get_state(PyObject *module)
{
    return (module_state *)PyModule_GetState(module);
}

/* ---- Units -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *replacement; /* str */
    PyObject *callback;    /* callable or None */
    PyObject *partial;     /* after a failure at a unit: the text of the call before it */
    int maps;              /* no replacement: the callback's result is each unit's text */
    long long counts[N_KINDS];
    long long chars;       /* characters returned by feed() since the last drain */
    Py_ssize_t fail_start; /* -1: the call did not fail at a unit */
    long long resume_at;
    Py_ssize_t repl_len;   /* length of replacement: 0 or 1 */
    Py_UCS4 repl_char;
    int reporting;         /* the callback is running: this object refuses to decode */
    /* Decoder mode (enter()/leave(), decode()): this object holds its Utf8Decoder's
       position and held prefix, and decode() is that decoder's decode. */
    int dm;
    long long position;    /* in decoder mode: the decoder's position */
    PyObject *pending;     /* in decoder mode: the held proper prefix (bytes), else NULL */
    module_state *state;   /* of the module that made this object's type (which keeps
                              that module, and so the state, alive) */
} UnitsObject;

static int
classify(const unsigned char *buf, Py_ssize_t len, Py_ssize_t start, Py_ssize_t end)
{
    unsigned char b0 = buf[start];
    if (b0 < 0xC0) {
        return K_UNEXPECTED_CONTINUATION; /* never called for ASCII */
    }
    if (b0 < 0xC2) {
        return K_OVERLONG;
    }
    if (b0 >= 0xF8) {
        return K_INVALID_BYTE;
    }
    if (b0 >= 0xF5) {
        return K_OUT_OF_RANGE;
    }
    if (end < len) {
        if (end - start == 1 && buf[end] >= 0x80 && buf[end] <= 0xBF) {
            switch (b0) {
            case 0xE0:
            case 0xF0:
                return K_OVERLONG;
            case 0xED:
                return K_SURROGATE;
            case 0xF4:
                return K_OUT_OF_RANGE;
            default:
                break;
            }
        }
        return K_INCOMPLETE_SEQUENCE;
    }
    return K_TRUNCATED_AT_END;
}

static PyObject *
make_event(module_state *st, long long offset, const unsigned char *data, Py_ssize_t n,
           int kind)
{
    PyObject *off = PyLong_FromLongLong(offset);
    if (off == NULL) {
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)data, n);
    if (bytes == NULL) {
        Py_DECREF(off);
        return NULL;
    }
    PyObject *ev = st->event_type->tp_alloc(st->event_type, 0);
    if (ev == NULL) {
        Py_DECREF(off);
        Py_DECREF(bytes);
        return NULL;
    }
    /* The slots are empty: fill them directly (what the slot descriptors do). */
    *(PyObject **)((char *)ev + st->slot_offset) = off;
    *(PyObject **)((char *)ev + st->slot_data) = bytes;
    Py_INCREF(st->kinds[kind]);
    *(PyObject **)((char *)ev + st->slot_kind) = st->kinds[kind];
    /* An int, a bytes object and an enum member: the event can never be part of a
       reference cycle, so the collector need not track it (as CPython does for tuples
       of atomic values). */
    if (PyObject_IS_GC(ev)) {
        PyObject_GC_UnTrack(ev);
    }
    return ev;
}

/* ---- the decoder ------------------------------------------------------------------ */

/* A segment buf[i:e) of a buffer of n bytes is decoded in one pass: the common sequences
   inline, everything else through sequence_at (which follows the maximal-subpart rule),
   each malformed unit classified with the byte after it (which may lie past e: a newline
   byte that ends a line segment is such a byte) and reported in order.  The replacement
   is U+FFFD or nothing. */

#define ASCII_MASK 0x8080808080808080ULL

/* The sequence at buf[i] (i < n): its length with *cp set if well-formed; minus the
   length of the proper prefix that the end of the buffer cuts off; or, for a malformed
   unit (a maximal subpart), its length with *cp = NOT_A_CHAR. */
#define NOT_A_CHAR 0xFFFFFFFFu

static inline Py_ssize_t
sequence_at(const unsigned char *buf, Py_ssize_t i, Py_ssize_t n, Py_UCS4 *cp)
{
    unsigned int b0 = buf[i];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    unsigned int lo = 0x80, hi = 0xBF, need;
    Py_UCS4 c;
    if (b0 < 0xC2) {
        *cp = NOT_A_CHAR;
        return 1;
    }
    else if (b0 < 0xE0) {
        need = 1;
        c = b0 & 0x1F;
    }
    else if (b0 < 0xF0) {
        need = 2;
        c = b0 & 0x0F;
        if (b0 == 0xE0) {
            lo = 0xA0;
        }
        else if (b0 == 0xED) {
            hi = 0x9F;
        }
    }
    else if (b0 < 0xF5) {
        need = 3;
        c = b0 & 0x07;
        if (b0 == 0xF0) {
            lo = 0x90;
        }
        else if (b0 == 0xF4) {
            hi = 0x8F;
        }
    }
    else {
        *cp = NOT_A_CHAR;
        return 1;
    }
    Py_ssize_t j = i + 1;
    if (j >= n) {
        return -1;
    }
    unsigned int b = buf[j];
    if (b < lo || b > hi) {
        *cp = NOT_A_CHAR;
        return 1;
    }
    c = (c << 6) | (b & 0x3F);
    j++;
    while (--need) {
        if (j >= n) {
            return -(j - i);
        }
        b = buf[j];
        if ((b & 0xC0) != 0x80) {
            *cp = NOT_A_CHAR;
            return j - i;
        }
        c = (c << 6) | (b & 0x3F);
        j++;
    }
    *cp = c;
    return j - i;
}

static inline Py_ssize_t
skip_ascii(const unsigned char *buf, Py_ssize_t j, Py_ssize_t e)
{
    while (j + 32 <= e) {
        uint64_t w[4];
        memcpy(w, buf + j, 32);
        if ((w[0] | w[1] | w[2] | w[3]) & ASCII_MASK) {
            break;
        }
        j += 32;
    }
    while (j + 8 <= e) {
        uint64_t w;
        memcpy(&w, buf + j, 8);
        if (w & ASCII_MASK) {
            break;
        }
        j += 8;
    }
    while (j < e && buf[j] < 0x80) {
        j++;
    }
    return j;
}

/* One malformed unit buf[start:end]: count it and report it.  Returns the callback's
   result (None without a callback), or NULL when it raised. */
static PyObject *
own_unit(UnitsObject *self, const unsigned char *buf, Py_ssize_t n, long long base,
         Py_ssize_t start, Py_ssize_t end)
{
    int kind = classify(buf, n, start, end);
    self->counts[kind]++;
    if (self->callback == Py_None) {
        Py_RETURN_NONE;
    }
    self->fail_start = start;
    self->resume_at = base + end;
    PyObject *ev = make_event(self->state, base + start, buf + start, end - start, kind);
    if (ev == NULL) {
        return NULL;
    }
    /* The callback may replace itself (the decoder's on_malformed setter): our own
       reference keeps the running one alive until it returns. */
    PyObject *callback = self->callback;
    Py_INCREF(callback);
    self->reporting = 1;
    PyObject *res = PyObject_CallOneArg(callback, ev);
    self->reporting = 0;
    Py_DECREF(callback);
    Py_DECREF(ev);
    if (res == NULL) {
        return NULL;
    }
    if (self->maps && !PyUnicode_Check(res)) {
        PyErr_Format(PyExc_TypeError, "a mapping scanner's callback must return str, not %.100s",
                     Py_TYPE(res)->tp_name);
        Py_DECREF(res);
        return NULL;
    }
    self->fail_start = -1;
    return res;
}

/* Each segment is decoded straight into its string, in one pass, with no other copy of
   the text.  A first look at the bytes (prescan) chooses the string's kind from the
   largest byte (below C4: Latin-1; below F0: UCS-2; else UCS-4 if a well-formed
   four-byte sequence is there) and its length from the bytes that are not continuation
   bytes (80..BF): well-formed text has exactly one such byte per character, and each
   malformed unit that starts with one yields at most one character.  Malformed input
   can break either guess: a replacement wider than the kind (U+FFFD in a Latin-1 guess)
   widens the string, a lone continuation byte (a character without such a byte) grows
   it, and a kind left unused (every wide sequence malformed, with "ignore") is narrowed
   once at the end, so that the string is canonical (what str equality relies on). */

#if HAVE_SSE2
#define ASCII_BLOCK_UCS1(o, p, count)                                                  \
    do {                                                                               \
        __m128i v_ = _mm_loadu_si128((const __m128i *)(p));                            \
        _mm_storeu_si128((__m128i *)(o), v_);                                          \
        int m_ = _mm_movemask_epi8(v_);                                                \
        (count) = m_ ? __builtin_ctz((unsigned)m_) : 16;                               \
    } while (0)
#define ASCII_BLOCK_UCS2(o, p, count)                                                  \
    do {                                                                               \
        __m128i v_ = _mm_loadu_si128((const __m128i *)(p));                            \
        __m128i z_ = _mm_setzero_si128();                                              \
        _mm_storeu_si128((__m128i *)(o), _mm_unpacklo_epi8(v_, z_));                   \
        _mm_storeu_si128((__m128i *)((o) + 8), _mm_unpackhi_epi8(v_, z_));             \
        int m_ = _mm_movemask_epi8(v_);                                                \
        (count) = m_ ? __builtin_ctz((unsigned)m_) : 16;                               \
    } while (0)
#define ASCII_BLOCK_UCS4(o, p, count)                                                  \
    do {                                                                               \
        __m128i v_ = _mm_loadu_si128((const __m128i *)(p));                            \
        __m128i z_ = _mm_setzero_si128();                                              \
        __m128i lo_ = _mm_unpacklo_epi8(v_, z_), hi_ = _mm_unpackhi_epi8(v_, z_);      \
        _mm_storeu_si128((__m128i *)(o), _mm_unpacklo_epi16(lo_, z_));                 \
        _mm_storeu_si128((__m128i *)((o) + 4), _mm_unpackhi_epi16(lo_, z_));           \
        _mm_storeu_si128((__m128i *)((o) + 8), _mm_unpacklo_epi16(hi_, z_));           \
        _mm_storeu_si128((__m128i *)((o) + 12), _mm_unpackhi_epi16(hi_, z_));          \
        int m_ = _mm_movemask_epi8(v_);                                                \
        (count) = m_ ? __builtin_ctz((unsigned)m_) : 16;                               \
    } while (0)
#else
#define ASCII_BLOCK_UCS1(o, p, count) ((count) = 0)
#define ASCII_BLOCK_UCS2(o, p, count) ((count) = 0)
#define ASCII_BLOCK_UCS4(o, p, count) ((count) = 0)
#endif

/* The bytes of buf[a:e) that are not continuation bytes, and the largest byte. */
static void
prescan(const unsigned char *buf, Py_ssize_t a, Py_ssize_t e, Py_ssize_t *leads,
        unsigned int *top)
{
    Py_ssize_t j = a, count = 0;
    unsigned int largest = 0;
#if HAVE_SSE2
    if (j + 16 <= e) {
        const __m128i zero = _mm_setzero_si128();
        const __m128i last_continuation = _mm_set1_epi8((char)0xBF); /* -65 as signed */
        __m128i vmax = zero, total = zero;
        while (j + 16 <= e) {
            /* A byte counter per lane, summed before it can overflow (255 blocks); two
               blocks at a time. */
            Py_ssize_t blocks = (e - j) / 16;
            if (blocks > 254) {
                blocks = 254;
            }
            __m128i lanes = zero;
            for (Py_ssize_t k = 0; k + 2 <= blocks; k += 2, j += 32) {
                __m128i v0 = _mm_loadu_si128((const __m128i *)(buf + j));
                __m128i v1 = _mm_loadu_si128((const __m128i *)(buf + j + 16));
                vmax = _mm_max_epu8(vmax, _mm_max_epu8(v0, v1));
                /* signed: 80..BF are -128..-65, every other byte is above */
                lanes = _mm_sub_epi8(lanes, _mm_cmpgt_epi8(v0, last_continuation));
                lanes = _mm_sub_epi8(lanes, _mm_cmpgt_epi8(v1, last_continuation));
            }
            if (blocks & 1) {
                __m128i v = _mm_loadu_si128((const __m128i *)(buf + j));
                vmax = _mm_max_epu8(vmax, v);
                lanes = _mm_sub_epi8(lanes, _mm_cmpgt_epi8(v, last_continuation));
                j += 16;
            }
            total = _mm_add_epi64(total, _mm_sad_epu8(lanes, zero));
        }
        if (j < e) {
            /* The last bytes: the 16 that end at e, those before j masked off (all 16
               lie in buf[a:e): at least one block was read). */
            static const unsigned char tail_mask[32] = {
                0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                0,    0,    0,    0,    0,    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
            __m128i keep = _mm_loadu_si128((const __m128i *)(tail_mask + (e - j)));
            __m128i v = _mm_and_si128(_mm_loadu_si128((const __m128i *)(buf + e - 16)), keep);
            vmax = _mm_max_epu8(vmax, v);
            __m128i lanes = _mm_and_si128(_mm_cmpgt_epi8(v, last_continuation), keep);
            total = _mm_add_epi64(total, _mm_sad_epu8(_mm_sub_epi8(zero, lanes), zero));
            j = e;
        }
        uint64_t sums[2];
        _mm_storeu_si128((__m128i *)sums, total);
        count = (Py_ssize_t)(sums[0] + sums[1]);
        vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 8));
        vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 4));
        vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 2));
        vmax = _mm_max_epu8(vmax, _mm_srli_si128(vmax, 1));
        largest = (unsigned int)_mm_cvtsi128_si32(vmax) & 0xFF;
    }
#endif
    for (; j < e; j++) {
        unsigned int b = buf[j];
        count += (b & 0xC0) != 0x80;
        largest = b > largest ? b : largest;
    }
    *leads = count;
    *top = largest;
}

/* The four bytes at p as a little-endian word (one load where the compiler can). */
static inline uint32_t
le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The character of the four-byte sequence w (le32 of its bytes), or 0 if it is not a
   well-formed one: lead F0..F7 and three continuation bytes by one mask, then the range
   U+10000..U+10FFFF, which rules out F0's overlong forms, F4 90.. and F5..F7. */
static inline Py_UCS4
four_byte_char(uint32_t w)
{
    if ((w & 0xC0C0C0F8u) != 0x808080F0u) {
        return 0;
    }
    Py_UCS4 cp = ((w & 0x07u) << 18) | ((w & 0x3F00u) << 4) | ((w >> 10) & 0xFC0u) |
                 ((w >> 24) & 0x3Fu);
    return cp - 0x10000u < 0x100000u ? cp : 0;
}

/* Whether buf[a:e) holds a well-formed four-byte sequence (asked only when a byte F0..FF
   is there: a corrupted text has such bytes that are not sequences). */
static int
has_four_byte(const unsigned char *buf, Py_ssize_t a, Py_ssize_t e)
{
    Py_ssize_t j = a;
    while (j + 4 <= e) {
#if HAVE_SSE2
        if (j + 16 <= e) {
            __m128i v = _mm_loadu_si128((const __m128i *)(buf + j));
            __m128i high = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8((char)0xF0)), v);
            unsigned int m = (unsigned int)_mm_movemask_epi8(high);
            if (!m) {
                j += 16;
                continue;
            }
            j += __builtin_ctz(m);
            if (j + 4 > e) {
                break;
            }
        }
#endif
        if (buf[j] >= 0xF0 && four_byte_char(le32(buf + j))) {
            return 1;
        }
        j++;
    }
    return 0;
}

/* SSE2 kernels for runs of one sequence length, four characters per 16-byte load, each
   validated whole (a block with anything else in it is left to the scalar loops, so
   malformed input takes exactly the scalar path).  Each returns the characters written
   to out, four per block.  Out of line: the decoding loop calls them only where a run
   looks long enough (its fourth lead is where it should be), and stays small for the
   short runs of emoji among words. */
#if HAVE_SSE2
/* Four-byte characters: lead and continuation bits by one mask per 32-bit lane, then
   the range U+10000..U+10FFFF by two compares; stored as UCS-4 as they are. */
static Py_ssize_t __attribute__((noinline))
four_byte_blocks(const unsigned char *p, Py_ssize_t avail, Py_UCS4 *out)
{
    Py_ssize_t t = 0, c = 0;
    while (t + 16 <= avail) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + t));
        __m128i cp = _mm_or_si128(
            _mm_or_si128(_mm_slli_epi32(_mm_and_si128(v, _mm_set1_epi32(0x07)), 18),
                         _mm_slli_epi32(_mm_and_si128(v, _mm_set1_epi32(0x3F00)), 4)),
            _mm_or_si128(_mm_and_si128(_mm_srli_epi32(v, 10), _mm_set1_epi32(0xFC0)),
                         _mm_and_si128(_mm_srli_epi32(v, 24), _mm_set1_epi32(0x3F))));
        __m128i bits = _mm_cmpeq_epi32(_mm_and_si128(v, _mm_set1_epi32((int)0xC0C0C0F8u)),
                                       _mm_set1_epi32((int)0x808080F0u));
        __m128i range = _mm_and_si128(_mm_cmpgt_epi32(cp, _mm_set1_epi32(0xFFFF)),
                                      _mm_cmplt_epi32(cp, _mm_set1_epi32(0x110000)));
        if (_mm_movemask_epi8(_mm_and_si128(bits, range)) != 0xFFFF) {
            break;
        }
        _mm_storeu_si128((__m128i *)(out + c), cp);
        c += 4;
        t += 16;
    }
    return c;
}

/* Three-byte characters: the four 3-byte groups of 12 bytes spread into 32-bit lanes by
   byte shifts, checked like four_byte_blocks (no overlong form, no surrogate), stored as
   UCS-2 (width 2) or UCS-4 (width 4). */
static Py_ssize_t __attribute__((noinline))
three_byte_blocks(const unsigned char *p, Py_ssize_t avail, void *out, int width)
{
    Py_ssize_t t = 0, c = 0;
    while (t + 16 <= avail) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + t));
        __m128i x = _mm_unpacklo_epi64(_mm_unpacklo_epi32(v, _mm_srli_si128(v, 3)),
                                       _mm_unpacklo_epi32(_mm_srli_si128(v, 6),
                                                          _mm_srli_si128(v, 9)));
        __m128i cp = _mm_or_si128(
            _mm_or_si128(_mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(0x0F)), 12),
                         _mm_srli_epi32(_mm_and_si128(x, _mm_set1_epi32(0x3F00)), 2)),
            _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(0x3F)));
        __m128i bits = _mm_cmpeq_epi32(_mm_and_si128(x, _mm_set1_epi32(0x00C0C0F0)),
                                       _mm_set1_epi32(0x008080E0));
        __m128i surrogate = _mm_and_si128(_mm_cmpgt_epi32(cp, _mm_set1_epi32(0xD7FF)),
                                          _mm_cmplt_epi32(cp, _mm_set1_epi32(0xE000)));
        __m128i ok = _mm_andnot_si128(
            surrogate, _mm_and_si128(bits, _mm_cmpgt_epi32(cp, _mm_set1_epi32(0x7FF))));
        if (_mm_movemask_epi8(ok) != 0xFFFF) {
            break;
        }
        if (width == 4) {
            _mm_storeu_si128((__m128i *)((Py_UCS4 *)out + c), cp);
        }
        else {
            /* 16 significant bits per lane: sign-extend them so that the signed pack
               keeps them as they are */
            __m128i low = _mm_srai_epi32(_mm_slli_epi32(cp, 16), 16);
            _mm_storel_epi64((__m128i *)((Py_UCS2 *)out + c), _mm_packs_epi32(low, low));
        }
        c += 4;
        t += 12;
    }
    return c;
}
#else
static inline Py_ssize_t
four_byte_blocks(const unsigned char *p, Py_ssize_t avail, Py_UCS4 *out)
{
    (void)p, (void)avail, (void)out;
    return 0;
}
static inline Py_ssize_t
three_byte_blocks(const unsigned char *p, Py_ssize_t avail, void *out, int width)
{
    (void)p, (void)avail, (void)out, (void)width;
    return 0;
}
#endif

/* Two three-byte characters from one little-endian 64-bit load (8 bytes readable, 6
   used): the lead and continuation bits of both are checked with one mask; a lead's
   low nibble must be 1..C or E..F (the bit set in 0xDFFE), which makes every
   continuation pair valid (no overlong form, no surrogate). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define THREE_BYTE_PAIRS(TYPE)                                                           \
    while (j + 8 <= e) {                                                                 \
        uint64_t w_;                                                                     \
        memcpy(&w_, buf + j, 8);                                                         \
        if ((w_ & 0xC0C0F0C0C0F0ULL) != 0x8080E08080E0ULL) {                             \
            break;                                                                       \
        }                                                                                \
        unsigned int n0_ = (unsigned int)(w_ & 0x0F), n1_ = (unsigned int)(w_ >> 24) & 0x0F; \
        if (!((0xDFFEu >> n0_) & (0xDFFEu >> n1_) & 1u)) {                              \
            break;                                                                       \
        }                                                                                \
        Py_UCS4 c0_ = (n0_ << 12) | ((Py_UCS4)(w_ >> 2) & 0xFC0) | ((Py_UCS4)(w_ >> 16) & 0x3F); \
        Py_UCS4 c1_ = (n1_ << 12) | ((Py_UCS4)(w_ >> 26) & 0xFC0) | ((Py_UCS4)(w_ >> 40) & 0x3F); \
        o[0] = (TYPE)c0_;                                                                \
        o[1] = (TYPE)c1_;                                                                \
        o += 2;                                                                          \
        acc |= c0_ | c1_;                                                                \
        j += 6;                                                                          \
    }
/* Two two-byte characters from one 32-bit load: both leads C2..DF (C0..DF by the mask,
   and bits 1-4 not all zero), both continuation bytes 80..BF.  Latin-1 takes only the
   leads C2 and C3. */
#define TWO_BYTE_PAIRS(TYPE)                                                             \
    while (j + 4 <= e) {                                                                 \
        uint32_t w_;                                                                     \
        memcpy(&w_, buf + j, 4);                                                         \
        if ((w_ & 0xC0E0C0E0u) != 0x80C080C0u || !(w_ & 0x1Eu) || !(w_ & 0x1E0000u)) { \
            break;                                                                       \
        }                                                                                \
        Py_UCS4 c0_ = ((w_ & 0x1Fu) << 6) | ((w_ >> 8) & 0x3Fu);                         \
        Py_UCS4 c1_ = (((w_ >> 16) & 0x1Fu) << 6) | ((w_ >> 24) & 0x3Fu);                \
        if (sizeof(TYPE) == 1 && (c0_ | c1_) > 0xFF) {                                   \
            break;                                                                       \
        }                                                                                \
        o[0] = (TYPE)c0_;                                                                \
        o[1] = (TYPE)c1_;                                                                \
        o += 2;                                                                          \
        acc |= c0_ | c1_;                                                                \
        j += 4;                                                                          \
    }
#else
#define THREE_BYTE_PAIRS(TYPE)
#define TWO_BYTE_PAIRS(TYPE)
#endif

#include "_simd.h"

/* Why a decoding pass stopped before the end of its segment. */
enum { STOP_END, STOP_UNIT, STOP_WIDE, STOP_ROOM };

/* A decoding pass's position and results, carried from one pass to the next when the
   string is widened or grown. */
typedef struct {
    Py_ssize_t j;     /* the next byte to decode */
    Py_ssize_t extra; /* room beyond one character per non-continuation byte left */
    Py_ssize_t unit;  /* STOP_UNIT: the length of the unit in front of which it stopped */
    Py_UCS4 wide;     /* STOP_WIDE: the character that the kind cannot hold */
    Py_UCS4 acc;      /* the OR of every character written (a block kernel adds only the
                         smallest character of its length: acc tells ASCII, Latin-1,
                         UCS-2 and UCS-4 apart, all it is for) */
    int why;          /* STOP_END (also: in front of a held prefix), or why not */
} Cursor;

/* One decoding pass over buf[cur->j:e) (e <= n) into out, of kind TYPE whose largest
   character is MAXT; returns the characters written, or -1 when a callback raised.
   The common sequences are decoded inline, in runs, everything else through sequence_at
   (the maximal-subpart rule), each malformed unit classified with the byte after it
   (which may lie past e: a newline byte that ends a line segment is such a byte) and
   reported in order.  Room: one character per non-continuation byte, plus cur->extra;
   only a unit without such a byte (a lone continuation byte with a replacement) needs
   more (STOP_ROOM).  A prefix cut off by the end of the buffer (only when e == n) is a
   TRUNCATED_AT_END unit if final, else the pass stops in front of it.  A mapping object
   (maps) stops in front of each unit instead (STOP_UNIT). */
#define DEFINE_DECODE(NAME, TYPE, MAXT, ASCII_BLOCK, BLOCK, ATTR, TWO_BLOCKS, THREE_BLOCKS, \
                      FOUR_BLOCKS, MIXED_BLOCKS)                                         \
    static ATTR Py_ssize_t NAME(UnitsObject *self, const unsigned char *buf, Py_ssize_t e,    \
                           Py_ssize_t n, long long base, int final, TYPE *out,           \
                           TYPE *out_end, Cursor *cur)                                   \
    {                                                                                    \
        TYPE *o = out;                                                                   \
        Py_UCS4 acc = 0;                                                                 \
        Py_ssize_t j = cur->j;                                                           \
        const Py_ssize_t repl_len = self->repl_len;                                      \
        const Py_UCS4 repl = self->repl_char;                                            \
        const int maps = self->maps;                                                     \
        cur->why = STOP_END;                                                             \
        Py_ssize_t mixed_from_ = j; /* where MIXED_BLOCKS may be tried */               \
        (void)mixed_from_;                                                               \
        while (j < e) {                                                                  \
            MIXED_BLOCKS(TYPE)                                                           \
            unsigned int b0 = buf[j];                                                    \
            if (b0 < 0x80) {                                                             \
                /* Blocks of 16, and between two of them a lone two-byte character   \
                   (an accented letter among ASCII words): decoded here, so that       \
                   European text stays in this loop instead of passing through the     \
                   dispatch for every letter.  A run of them goes to the run loop. */  \
                if (HAVE_SSE2 && j + BLOCK <= e && out_end - o >= BLOCK) {               \
                    do {                                                                 \
                        Py_ssize_t c_;                                                   \
                        ASCII_BLOCK(o, buf + j, c_);                                     \
                        o += c_;                                                         \
                        j += c_;                                                         \
                        if (c_ == BLOCK) {                                               \
                            continue;                                                    \
                        }                                                                \
                        if (j + 3 > e) {                                                 \
                            break;                                                       \
                        }                                                                \
                        unsigned int c0_ = buf[j], c1_ = buf[j + 1];                     \
                        if (c0_ - 0xC2u <= 0xDFu - 0xC2u) {                              \
                            Py_ssize_t before_ = j;                                      \
                            TWO_BLOCKS(TYPE)                                             \
                            if (j != before_) {                                          \
                                continue;                                                \
                            }                                                            \
                        }                                                                \
                        if (MAXT > 0xFFFF && c0_ >= 0xF0) {                              \
                            /* emoji among words: their run, then ASCII again */         \
                            Py_ssize_t s_ = j;                                           \
                            while (j + 4 <= e) {                                         \
                                Py_UCS4 cp_ = four_byte_char(le32(buf + j));             \
                                if (!cp_) {                                              \
                                    break;                                               \
                                }                                                        \
                                *o++ = (TYPE)cp_;                                        \
                                acc |= cp_;                                              \
                                j += 4;                                                  \
                            }                                                            \
                            if (j == s_ || j >= e || buf[j] >= 0x80) {                   \
                                break;                                                   \
                            }                                                            \
                            continue;                                                    \
                        }                                                                \
                        if (c0_ - 0xC2u > 0xDFu - 0xC2u || (c1_ & 0xC0) != 0x80 ||       \
                            buf[j + 2] >= 0x80) {                                        \
                            break;                                                       \
                        }                                                                \
                        Py_UCS4 cp_ = ((c0_ & 0x1F) << 6) | (c1_ & 0x3F);                \
                        if (cp_ > MAXT) {                                                \
                            break;                                                       \
                        }                                                                \
                        *o++ = (TYPE)cp_;                                                \
                        acc |= cp_;                                                      \
                        j += 2;                                                          \
                    } while (j + BLOCK <= e && out_end - o >= BLOCK);                    \
                }                                                                        \
                else {                                                                   \
                    *o++ = (TYPE)b0;                                                     \
                    j++;                                                                 \
                }                                                                        \
                continue;                                                                \
            }                                                                            \
            if (b0 < 0xE0) {                                                             \
                /* a run of two-byte characters, in a loop of its own: two at a time,    \
                   then one */                                                           \
                Py_ssize_t j0_ = j;                                                      \
            two_byte_run_:                                                               \
                TWO_BLOCKS(TYPE)                                                         \
                TWO_BYTE_PAIRS(TYPE)                                                     \
                while (j + 2 <= e) {                                                     \
                    unsigned int c0 = buf[j], c1 = buf[j + 1];                           \
                    if (((c0 & 0xE0) != 0xC0) | (c0 < 0xC2) | ((c1 & 0xC0) != 0x80)) {   \
                        break;                                                           \
                    }                                                                    \
                    Py_UCS4 cp = ((c0 & 0x1F) << 6) | (c1 & 0x3F);                       \
                    if (cp > MAXT) {                                                     \
                        break;                                                           \
                    }                                                                    \
                    *o++ = (TYPE)cp;                                                     \
                    acc |= cp;                                                           \
                    j += 2;                                                              \
                }                                                                        \
                if (j != j0_) {                                                          \
                    /* one ASCII byte (a space between two words) and the run goes on */ \
                    if (j + 2 < e && buf[j] < 0x80 && (buf[j + 1] & 0xE0) == 0xC0) {     \
                        *o++ = (TYPE)buf[j];                                             \
                        j++;                                                             \
                        goto two_byte_run_;                                              \
                    }                                                                    \
                    continue;                                                            \
                }                                                                        \
            }                                                                            \
            else if (b0 < 0xF0) {                                                        \
                /* a run of three-byte characters (CJK text): two at a time while both   \
                   have an ordinary lead (not E0 or ED, whose second byte has a narrower \
                   range), then one at a time */                                         \
                if (MAXT >= 0xFFFF) {                                                    \
                    Py_ssize_t j0_ = j;                                                  \
                three_byte_run_:                                                         \
                    if (HAVE_SSE2 && j + 16 <= e &&                                      \
                        ((buf[j + 3] & buf[j + 6] & buf[j + 9]) & 0xF0) == 0xE0) {       \
                        Py_ssize_t c_ = THREE_BLOCKS(buf + j, e - j, o, (int)sizeof(TYPE)); \
                        o += c_;                                                         \
                        j += 3 * c_;                                                     \
                        acc |= c_ ? 0x800 : 0;                                           \
                    }                                                                    \
                    THREE_BYTE_PAIRS(TYPE)                                               \
                    while (j + 3 <= e) {                                                 \
                        unsigned int c0 = buf[j], c1 = buf[j + 1], c2 = buf[j + 2];      \
                        if (((c0 & 0xF0) != 0xE0) | ((c1 & 0xC0) != 0x80) |             \
                            ((c2 & 0xC0) != 0x80)) {                                     \
                            break;                                                       \
                        }                                                                \
                        Py_UCS4 cp = ((c0 & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F); \
                        if (cp < 0x800 || cp - 0xD800 < 0x800) {                         \
                            break; /* overlong or a surrogate: a unit, below */          \
                        }                                                                \
                        *o++ = (TYPE)cp;                                                 \
                        acc |= cp;                                                       \
                        j += 3;                                                          \
                    }                                                                    \
                    if (j != j0_) {                                                      \
                        if (j + 3 < e && buf[j] < 0x80 && (buf[j + 1] & 0xF0) == 0xE0) { \
                            *o++ = (TYPE)buf[j];                                         \
                            j++;                                                         \
                            goto three_byte_run_;                                        \
                        }                                                                \
                        continue;                                                        \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
            else if (MAXT > 0xFFFF) {                                                    \
                /* a run of four-byte characters (emoji): four per load, then one load \
                   and one mask check per character */                                   \
                Py_ssize_t j0_ = j;                                                      \
            four_byte_run_:                                                              \
                if (HAVE_SSE2 && j + 16 <= e &&                                          \
                    ((buf[j + 4] & buf[j + 8] & buf[j + 12]) & 0xF0) == 0xF0) {          \
                    Py_ssize_t c_ = FOUR_BLOCKS(buf + j, e - j, (Py_UCS4 *)(void *)o);  \
                    o += c_;                                                             \
                    j += 4 * c_;                                                         \
                    acc |= c_ ? 0x10000 : 0;                                             \
                }                                                                        \
                while (j + 4 <= e) {                                                     \
                    Py_UCS4 cp = four_byte_char(le32(buf + j));                          \
                    if (!cp) {                                                           \
                        break;                                                           \
                    }                                                                    \
                    *o++ = (TYPE)cp;                                                     \
                    acc |= cp;                                                           \
                    j += 4;                                                              \
                }                                                                        \
                if (j != j0_ && j + 4 < e && buf[j + 1] >= 0x80) {                       \
                    /* inside an emoji sequence: a space, or a joiner or variation       \
                       selector (U+200D, U+FE0F: three bytes), and the run goes on */    \
                    unsigned int c0 = buf[j];                                            \
                    if (c0 < 0x80 && buf[j + 1] >= 0xF0) {                               \
                        *o++ = (TYPE)c0;                                                 \
                        j++;                                                             \
                        goto four_byte_run_;                                             \
                    }                                                                    \
                    if ((c0 & 0xF0) == 0xE0 && buf[j + 3] >= 0xF0) {                     \
                        unsigned int c1 = buf[j + 1], c2 = buf[j + 2];                   \
                        Py_UCS4 cp = ((c0 & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F);\
                        if ((c1 & 0xC0) == 0x80 && (c2 & 0xC0) == 0x80 && cp >= 0x800 && \
                            cp - 0xD800 >= 0x800) {                                      \
                            *o++ = (TYPE)cp;                                             \
                            acc |= cp;                                                   \
                            j += 3;                                                      \
                            goto four_byte_run_;                                         \
                        }                                                                \
                    }                                                                    \
                }                                                                        \
                if (j != j0_) {                                                          \
                    continue;                                                            \
                }                                                                        \
            }                                                                            \
            Py_UCS4 cp;                                                                  \
            Py_ssize_t k = sequence_at(buf, j, n, &cp);                                  \
            if (k < 0) {                                                                 \
                if (!final) {                                                            \
                    break; /* a proper prefix: held */                                   \
                }                                                                        \
                k = -k;                                                                  \
                cp = NOT_A_CHAR;                                                         \
            }                                                                            \
            if (cp == NOT_A_CHAR) {                                                      \
                if (maps) {                                                              \
                    cur->unit = k;                                                       \
                    cur->why = STOP_UNIT;                                                \
                    break;                                                               \
                }                                                                        \
                /* Stop before reporting: the unit is reported once, by the pass that    \
                   writes its replacement. */                                            \
                int lone_ = (b0 & 0xC0) == 0x80;                                         \
                if (repl_len && repl > MAXT) {                                           \
                    cur->wide = repl;                                                    \
                    cur->why = STOP_WIDE;                                                \
                    break;                                                               \
                }                                                                        \
                if (repl_len && lone_ && cur->extra == 0) {                              \
                    cur->why = STOP_ROOM;                                                \
                    break;                                                               \
                }                                                                        \
                PyObject *r_ = own_unit(self, buf, n, base, j, j + k);                   \
                if (r_ == NULL) {                                                        \
                    return -1;                                                           \
                }                                                                        \
                Py_DECREF(r_);                                                           \
                if (repl_len) {                                                          \
                    cur->extra -= lone_;                                                 \
                    *o++ = (TYPE)repl;                                                   \
                    acc |= repl;                                                         \
                }                                                                        \
                else {                                                                   \
                    cur->extra += !lone_;                                                \
                }                                                                        \
            }                                                                            \
            else {                                                                       \
                if (cp > MAXT) {                                                         \
                    cur->wide = cp;                                                      \
                    cur->why = STOP_WIDE;                                                \
                    break;                                                               \
                }                                                                        \
                *o++ = (TYPE)cp;                                                         \
                acc |= cp;                                                               \
            }                                                                            \
            j += k;                                                                      \
        }                                                                                \
        cur->j = j;                                                                      \
        cur->acc |= acc;                                                                 \
        return o - out;                                                                  \
    }

#define NO_ATTR
#define NO_TWO_BLOCKS(TYPE)
#define NO_MIXED_BLOCKS(TYPE)
DEFINE_DECODE(own_decode1, Py_UCS1, 0xFFu, ASCII_BLOCK_UCS1, 16, NO_ATTR, NO_TWO_BLOCKS,
              three_byte_blocks, four_byte_blocks, NO_MIXED_BLOCKS)
DEFINE_DECODE(own_decode2, Py_UCS2, 0xFFFFu, ASCII_BLOCK_UCS2, 16, NO_ATTR, NO_TWO_BLOCKS,
              three_byte_blocks, four_byte_blocks, NO_MIXED_BLOCKS)
DEFINE_DECODE(own_decode4, Py_UCS4, 0x10FFFFu, ASCII_BLOCK_UCS4, 16, NO_ATTR, NO_TWO_BLOCKS,
              three_byte_blocks, four_byte_blocks, NO_MIXED_BLOCKS)
#if HAVE_AVX2
/* UCS-4 text (emoji among words, emoji sequences, web pages, European text with an
   emoji): mixed_blocks_avx2 takes 32 positions a step, whatever lengths they mix, with
   no branch on them; where it stops (a malformed unit, the end) the loops below go on,
   and it is tried again 64 bytes on, so that damaged text pays for few blocks that
   fail.  (It used to be kept to segments whose characters average more than 1.25 bytes,
   European text left to the loops; with 32 bytes a step it is faster there too: the
   loops mispredict a branch at each accented letter.) */
#define MIXED_BLOCKS_AVX2(TYPE)                                                          \
    if (j >= mixed_from_ && j + 32 <= e && out_end - o >= 32) {                          \
        Py_ssize_t c_ = mixed_blocks_avx2(buf, &j, e, (Py_UCS4 *)(void *)o, out_end - o, &acc); \
        o += c_;                                                                         \
        mixed_from_ = j + 64;                                                            \
        if (j == e) { /* its ASCII blocks may run to the end */                          \
            break;                                                                       \
        }                                                                                \
    }
/* UCS-2 text (CJK among ASCII punctuation, Cyrillic or Greek words, European text with
   a character beyond U+00FF): the same kernel into a UCS-2 string, which stops at any
   lead F0..FF. */
#define MIXED_BLOCKS2_AVX2(TYPE)                                                         \
    if (j >= mixed_from_ && j + 32 <= e && out_end - o >= 32) {                          \
        Py_ssize_t c_ = mixed_blocks2_avx2(buf, &j, e, (Py_UCS2 *)(void *)o, out_end - o, &acc); \
        o += c_;                                                                         \
        mixed_from_ = j + 64;                                                            \
        if (j == e) {                                                                    \
            break;                                                                       \
        }                                                                                \
    }
/* The same passes compiled for AVX2: 32 ASCII bytes a block, eight three-byte
   characters a step, and UCS-2 and UCS-4 text of mixed lengths by mixed_blocks_avx2
   (above);
   everything else (two- and four-byte runs, every malformed unit) as above.  (AVX2
   kernels for ASCII with two-byte characters and for four-byte runs were tried and
   measured slower than these loops on mixed European text, emoji and damaged text at
   64 KiB; they are not kept.) */
DEFINE_DECODE(own_decode1_avx2, Py_UCS1, 0xFFu, ASCII_BLOCK32_UCS1, 32, AVX2_FN,
              NO_TWO_BLOCKS, three_byte_blocks_avx2, four_byte_blocks, NO_MIXED_BLOCKS)
DEFINE_DECODE(own_decode2_avx2, Py_UCS2, 0xFFFFu, ASCII_BLOCK32_UCS2, 32, AVX2_FN,
              NO_TWO_BLOCKS, three_byte_blocks_avx2, four_byte_blocks, MIXED_BLOCKS2_AVX2)
DEFINE_DECODE(own_decode4_avx2, Py_UCS4, 0x10FFFFu, ASCII_BLOCK32_UCS4, 32, AVX2_FN,
              NO_TWO_BLOCKS, three_byte_blocks_avx2, four_byte_blocks, MIXED_BLOCKS_AVX2)
#endif

/* A str of the len ASCII bytes at buf.  PyUnicode_New with 0x7F makes a compact ASCII
   string, whose characters follow its PyASCIIObject header (what PyUnicode_DATA works
   out from the string's state bits at each call; once per line in the follower). */
static PyObject *
ascii_string(const unsigned char *buf, Py_ssize_t len)
{
    PyObject *a = PyUnicode_New(len, 0x7F);
    if (a != NULL) {
        assert(PyUnicode_IS_COMPACT_ASCII(a));
        memcpy((PyASCIIObject *)a + 1, buf, len);
    }
    return a;
}

/* The first len characters of src (of kind from) into dst (of kind to, as wide or
   wider). */
static void
widen_into(void *dst, int to, const void *src, int from, Py_ssize_t len)
{
    Py_ssize_t k;
    if (from == to) {
        memcpy(dst, src, (size_t)len * (size_t)to);
    }
    else if (to == PyUnicode_2BYTE_KIND) {
        const Py_UCS1 *s = src;
        Py_UCS2 *d = dst;
        for (k = 0; k < len; k++) {
            d[k] = s[k];
        }
    }
    else if (from == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = src;
        Py_UCS4 *d = dst;
        for (k = 0; k < len; k++) {
            d[k] = s[k];
        }
    }
    else {
        const Py_UCS1 *s = src;
        Py_UCS4 *d = dst;
        for (k = 0; k < len; k++) {
            d[k] = s[k];
        }
    }
}

/* The string for buf[i:e) (see DEFINE_DECODE), after the character ``first`` if it is
   not NOT_A_CHAR (the one that a held prefix and the first bytes of buf make: see
   Units_feed): *stop is where decoding stopped (e, a held prefix, or a unit that a
   mapping object leaves to its caller, of *unit bytes; else *unit is 0); *bits collects
   the OR of its characters.  ``counted`` >= 0: the caller has counted buf[i:e) as
   prescan() does (``counted`` bytes that are not continuation bytes, the largest
   ``counted_top``), which is not done again. */
static inline __attribute__((always_inline)) PyObject *
own_segment_counted(UnitsObject *self, Py_UCS4 first, const unsigned char *buf, Py_ssize_t i,
                    Py_ssize_t e, Py_ssize_t n, long long base, int final, Py_ssize_t *stop,
                    Py_UCS4 *bits, Py_ssize_t *unit, Py_ssize_t counted, unsigned int counted_top)
{
    Py_ssize_t a;
    const Py_ssize_t pre = first != NOT_A_CHAR;
#if HAVE_AVX2
    const int avx2 = self->state->simd == SIMD_AVX2;
#define SKIP_ASCII(buf, j, e) (avx2 ? skip_ascii_avx2(buf, j, e) : skip_ascii(buf, j, e))
#else
#define SKIP_ASCII(buf, j, e) skip_ascii(buf, j, e)
#endif
    *unit = 0;
    if (pre || counted >= 0) {
        a = SKIP_ASCII(buf, i, e);
    }
    else if (e - i >= 4096) {
        /* Likely ASCII: copy while checking, as CPython does (one pass over the data);
           if it is not, only the copy of the ASCII head was in vain. */
        PyObject *guess = PyUnicode_New(e - i, 0x7F);
        if (guess == NULL) {
            return NULL;
        }
        unsigned char *d = PyUnicode_DATA(guess);
        a = i;
#if HAVE_AVX2
        if (avx2) {
            a = ascii_copy_avx2(buf, a, e, d, self->state->prefetchw);
        }
#endif
#if HAVE_SSE2
        while (a + 32 <= e) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)(buf + a));
            __m128i v1 = _mm_loadu_si128((const __m128i *)(buf + a + 16));
            if (_mm_movemask_epi8(_mm_or_si128(v0, v1))) {
                break;
            }
            _mm_storeu_si128((__m128i *)(d + (a - i)), v0);
            _mm_storeu_si128((__m128i *)(d + (a - i) + 16), v1);
            a += 32;
        }
#else
        while (a + 32 <= e) {
            uint64_t w[4];
            memcpy(w, buf + a, 32);
            if ((w[0] | w[1] | w[2] | w[3]) & ASCII_MASK) {
                break;
            }
            memcpy(d + (a - i), w, 32);
            a += 32;
        }
#endif
        Py_ssize_t copied = a;
        a = SKIP_ASCII(buf, a, e);
        if (a == e) {
            memcpy(d + (copied - i), buf + copied, e - copied);
            *stop = e;
            return guess;
        }
        Py_DECREF(guess);
    }
    else {
        a = SKIP_ASCII(buf, i, e);
        if (a == e) {
            *stop = e;
            return ascii_string(buf + i, e - i);
        }
    }
    Py_ssize_t leads = 0;
    unsigned int top = 0;
    if (counted >= 0) {
        leads = counted - (a - i); /* less the ASCII head */
        top = counted_top;
    }
    else if (a < e) {
#if HAVE_AVX2
        if (avx2) {
            prescan_avx2(buf, a, e, &leads, &top);
        }
        else
#endif
        {
            prescan(buf, a, e, &leads, &top);
        }
    }
#undef SKIP_ASCII
    Py_UCS4 maxchar = top < 0x80                                 ? 0x7F
                      : top < 0xC4                               ? 0xFF
                      : top < 0xF0 || !has_four_byte(buf, a, e) ? 0xFFFF
                                                                 : 0x10FFFF;
    if (pre && first > maxchar) {
        maxchar = first;
    }
    if (a < e && !final && e == n) {
        /* A proper prefix at the end will be held: its lead yields no character here,
           and a string of the exact length needs no resizing at the end. */
        Py_ssize_t p = e - 1;
        while (p > a && p > e - 4 && (buf[p] & 0xC0) == 0x80) {
            p--;
        }
        Py_UCS4 unused;
        if (buf[p] >= 0xC2 && sequence_at(buf, p, n, &unused) < 0) {
            leads--;
        }
    }
    /* A long segment gets room for lone continuation bytes (a corrupted text has some in
       most 64 KiB chunks): growing the string then would copy it. */
    Py_ssize_t slack = e - a >= 4096 ? (e - a) / 64 : 0;
    Py_ssize_t head = a - i;
    /* Never 0: PyUnicode_New(0) is the shared empty string, which is not ours to resize. */
    Py_ssize_t cap = pre + head + leads + slack > 0 ? pre + head + leads + slack : 1;
    PyObject *s = PyUnicode_New(cap, maxchar);
    if (s == NULL) {
        return NULL;
    }
    int kind = PyUnicode_KIND(s);
    if (pre) {
        PyUnicode_WRITE(kind, PyUnicode_DATA(s), 0, first);
    }
    widen_into((char *)PyUnicode_DATA(s) + pre * kind, kind, buf + i, PyUnicode_1BYTE_KIND,
               head);
    Cursor cur = {a, cap - pre - head - leads, 0, 0, pre ? first : 0, STOP_END};
    Py_ssize_t len = pre + head;
    for (;;) {
        void *data = PyUnicode_DATA(s);
        Py_ssize_t m;
#if HAVE_AVX2
#define DECODE(NAME, TYPE)                                                                 \
    (avx2 ? NAME##_avx2(self, buf, e, n, base, final, (TYPE *)data + len, (TYPE *)data + cap, \
                        &cur)                                                              \
          : NAME(self, buf, e, n, base, final, (TYPE *)data + len, (TYPE *)data + cap, &cur))
#else
#define DECODE(NAME, TYPE)                                                                 \
    NAME(self, buf, e, n, base, final, (TYPE *)data + len, (TYPE *)data + cap, &cur)
#endif
        switch (PyUnicode_KIND(s)) {
        case PyUnicode_1BYTE_KIND:
            m = DECODE(own_decode1, Py_UCS1);
            break;
        case PyUnicode_2BYTE_KIND:
            m = DECODE(own_decode2, Py_UCS2);
            break;
        default:
            m = DECODE(own_decode4, Py_UCS4);
            break;
        }
#undef DECODE
        if (m < 0) {
            Py_DECREF(s);
            return NULL;
        }
        len += m;
        if (cur.why == STOP_WIDE) {
            PyObject *w = PyUnicode_New(cap, cur.wide > 0xFFFF ? 0x10FFFF : 0xFFFF);
            if (w == NULL) {
                Py_DECREF(s);
                return NULL;
            }
            widen_into(PyUnicode_DATA(w), PyUnicode_KIND(w), PyUnicode_DATA(s),
                       PyUnicode_KIND(s), len);
            Py_SETREF(s, w);
        }
        else if (cur.why == STOP_ROOM) {
            /* Lone continuation bytes: grow by an eighth, so that a text full of them
               costs few reallocations. */
            Py_ssize_t more = cap / 8 + 16;
            if (PyUnicode_Resize(&s, cap + more) < 0) {
                Py_DECREF(s);
                return NULL;
            }
            cap += more;
            cur.extra += more;
        }
        else {
            break;
        }
    }
    *stop = cur.j;
    if (cur.why == STOP_UNIT) {
        *unit = cur.unit;
    }
    if (len != cap && PyUnicode_Resize(&s, len) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    Py_UCS4 acc = cur.acc;
    *bits |= acc;
    kind = PyUnicode_KIND(s);
    int canonical = acc >= 0x10000   ? kind == PyUnicode_4BYTE_KIND
                    : acc >= 0x100   ? kind == PyUnicode_2BYTE_KIND
                    : acc >= 0x80    ? kind == PyUnicode_1BYTE_KIND && !PyUnicode_IS_ASCII(s)
                                     : PyUnicode_IS_ASCII(s);
    if (!canonical) {
        /* The kind guessed was wider than the text (its wide sequences were all malformed
           and dropped): CPython's own constructor finds the narrowest. */
        Py_SETREF(s, PyUnicode_FromKindAndData(kind, PyUnicode_DATA(s), len));
    }
    return s;
}

static PyObject *
own_segment_after(UnitsObject *self, Py_UCS4 first, const unsigned char *buf, Py_ssize_t i,
                  Py_ssize_t e, Py_ssize_t n, long long base, int final, Py_ssize_t *stop,
                  Py_UCS4 *bits, Py_ssize_t *unit)
{
    return own_segment_counted(self, first, buf, i, e, n, base, final, stop, bits, unit, -1, 0);
}

static inline PyObject *
own_segment(UnitsObject *self, const unsigned char *buf, Py_ssize_t i, Py_ssize_t e,
            Py_ssize_t n, long long base, int final, Py_ssize_t *stop, Py_UCS4 *bits,
            Py_ssize_t *unit)
{
    return own_segment_after(self, NOT_A_CHAR, buf, i, e, n, base, final, stop, bits, unit);
}

/* After the callback raised at the unit at fail_start: partial is the text of
   buf[0:fail_start), decoded again without the callback (a constant replacement makes
   that text the same) and without counting anything twice.  The exception stays set. */
static void
set_partial_by_replay(UnitsObject *self, const unsigned char *buf, long long base)
{
    if (self->fail_start < 0) {
        return;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    long long counts[N_KINDS];
    memcpy(counts, self->counts, sizeof(counts));
    PyObject *callback = self->callback;
    self->callback = Py_None;
    Py_ssize_t stop, unit, end = self->fail_start;
    Py_UCS4 bits = 0;
    PyObject *text = own_segment(self, buf, 0, end, end, base, 1, &stop, &bits, &unit);
    self->callback = callback;
    memcpy(self->counts, counts, sizeof(counts));
    if (text == NULL) {
        PyErr_Clear(); /* out of memory: the failure already being raised says enough */
    }
    else {
        Py_XSETREF(self->partial, text);
    }
    PyErr_Restore(type, value, traceback);
}

/* The text of buf[0:n) for a mapping object: the valid runs decoded here, each unit's
   text the callback's result.  On failure partial holds the text before the unit. */
static PyObject *
own_mapped(UnitsObject *self, const unsigned char *buf, Py_ssize_t n, long long base,
           int final, Py_ssize_t *stop)
{
    Py_ssize_t unit;
    Py_UCS4 bits = 0;
    PyObject *first = own_segment(self, buf, 0, n, n, base, final, stop, &bits, &unit);
    if (first == NULL || !unit) {
        return first; /* no unit at all: well-formed text (strict mode's common case) */
    }
    PyObject *pieces = PyList_New(0);
    if (pieces == NULL || PyList_Append(pieces, first) < 0) {
        Py_DECREF(first);
        Py_XDECREF(pieces);
        return NULL;
    }
    Py_DECREF(first);
    PyObject *text = NULL;
    for (;;) {
        /* Here a unit of ``unit`` bytes starts at *stop. */
        PyObject *t = own_unit(self, buf, n, base, *stop, *stop + unit);
        if (t == NULL) {
            if (self->fail_start >= 0) {
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);
                PyObject *before = PyUnicode_Join(self->state->empty, pieces);
                if (before == NULL) {
                    PyErr_Clear();
                }
                else {
                    Py_XSETREF(self->partial, before);
                }
                PyErr_Restore(type, value, traceback);
            }
            goto done;
        }
        int err = PyList_Append(pieces, t);
        Py_DECREF(t);
        if (err < 0) {
            goto done;
        }
        Py_ssize_t i = *stop + unit;
        PyObject *s = own_segment(self, buf, i, n, n, base, final, stop, &bits, &unit);
        if (s == NULL || PyList_Append(pieces, s) < 0) {
            Py_XDECREF(s);
            goto done;
        }
        Py_DECREF(s);
        if (!unit) {
            break;
        }
    }
    text = PyUnicode_Join(self->state->empty, pieces);
done:
    Py_DECREF(pieces);
    return text;
}

static int
ready_check(module_state *st)
{
    if (!st->ready) {
        PyErr_SetString(PyExc_RuntimeError, "utf8stream accelerator: setup() not called");
        return -1;
    }
    return 0;
}

/* head + data as one bytes object (a new reference); both must be bytes. */
static inline PyObject *
joined(UnitsObject *self, PyObject *head, PyObject *data)
{
    if (!PyBytes_Check(head) || !PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "pending and data must be bytes");
        return NULL;
    }
    if (ready_check(self->state) < 0) {
        return NULL;
    }
    Py_ssize_t nh = PyBytes_GET_SIZE(head), nd = PyBytes_GET_SIZE(data);
    if (nh == 0) {
        Py_INCREF(data);
        return data;
    }
    PyObject *buf = PyBytes_FromStringAndSize(NULL, nh + nd);
    if (buf != NULL) {
        memcpy(PyBytes_AS_STRING(buf), PyBytes_AS_STRING(head), nh);
        memcpy(PyBytes_AS_STRING(buf) + nh, PyBytes_AS_STRING(data), nd);
    }
    return buf;
}

/* The input of feed(): pending + data as one bytes object (a new reference; data
   alone if not ``join``), and the absolute offset of that buffer's first byte, given
   the offset ``position`` where it ends. */
static PyObject *
parse_input(UnitsObject *self, PyObject *head, PyObject *data, int join, long long position,
            long long *base)
{
    PyObject *buf;
    if (join) {
        buf = joined(self, head, data);
    }
    else {
        /* the caller checked that data is bytes */
        buf = ready_check(self->state) < 0 ? NULL : Py_NewRef(data);
    }
    if (buf == NULL) {
        return NULL;
    }
    *base = position - PyBytes_GET_SIZE(buf);
    self->fail_start = -1;
    Py_CLEAR(self->partial);
    return buf;
}

/* A callback cannot decode with the object that is reporting to it: the call in
   progress owns the string being filled and the counts (the decoder refuses it too). */
static int
refuse_reentry(UnitsObject *self)
{
    if (self->reporting) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a Utf8Decoder cannot decode from inside its own on_malformed callback");
        return -1;
    }
    return 0;
}

/* The separator argument of lines(): -1 (universal newlines) or an ASCII byte; it needs
   a one-character replacement, so that each byte that is not a character yields one
   (with "ignore", \r <bad byte> \n would be one newline in the text, two in the bytes).
   -2 on error. */
static long
parse_sep(UnitsObject *self, PyObject *arg)
{
    if (self->maps || self->repl_len != 1) {
        PyErr_SetString(PyExc_ValueError, "lines need a one-character replacement");
        return -2;
    }
    long sep = PyLong_AsLong(arg);
    if (sep == -1 && PyErr_Occurred()) {
        return -2;
    }
    if (sep < -1 || sep > 127) {
        PyErr_SetString(PyExc_ValueError, "sep must be -1 or an ASCII byte value");
        return -2;
    }
    return sep;
}

/* Append an int to a list; -1 on error. */
static int
append_int(PyObject *list, long long value)
{
    PyObject *v = PyLong_FromLongLong(value);
    if (v == NULL) {
        return -1;
    }
    int err = PyList_Append(list, v);
    Py_DECREF(v);
    return err;
}

static PyObject *
pair(PyObject *a, PyObject *b)
{
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    PyObject *t = PyTuple_New(2);
    if (t == NULL) {
        Py_DECREF(a);
        Py_DECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    return t;
}

/* feed(pending, data, final, position) -> (text, pending)

   One whole ordinary Utf8Decoder.decode call: ``pending`` (a held proper prefix) goes
   in front of ``data``, which ends at the absolute offset ``position``; what is left at
   the end is the new pending prefix.  When the callback raises, fail_start is relative
   to pending + data. */
/* How many bytes of data complete the held prefix ``head`` into one well-formed
   character (*cp); 0 if they do not (a malformed unit, or still a prefix: the caller
   then decodes head + data as one buffer). */
static Py_ssize_t
bridge(PyObject *head, PyObject *data, Py_UCS4 *cp)
{
    Py_ssize_t nh = PyBytes_GET_SIZE(head), nd = PyBytes_GET_SIZE(data);
    unsigned char joint[8];
    if (nh >= 4) {
        return 0;
    }
    Py_ssize_t take = nd < 4 ? nd : 4;
    memcpy(joint, PyBytes_AS_STRING(head), nh);
    memcpy(joint + nh, PyBytes_AS_STRING(data), take);
    Py_ssize_t k = sequence_at(joint, 0, nh + take, cp);
    return k > nh && *cp != NOT_A_CHAR ? k - nh : 0;
}

/* feed()'s work, shared with decode(): the text of head + data, which ends at
   ``position``; *held: the new held prefix (a new reference).  NULL on error. */
static PyObject *
feed_core(UnitsObject *self, PyObject *head, PyObject *data, int final, long long position,
          PyObject **held)
{
    /* A held prefix usually becomes one character with the first bytes of data: that
       character goes first, and data is decoded where it lies, not copied behind the
       prefix (a 64 KiB chunk of emoji or CJK text ends in a prefix more often than not). */
    Py_UCS4 first = NOT_A_CHAR;
    Py_ssize_t took = 0, nh = 0;
    *held = NULL;
    if (!self->maps && PyBytes_Check(head) && PyBytes_Check(data) &&
        (nh = PyBytes_GET_SIZE(head)) > 0) {
        took = bridge(head, data, &first);
    }
    long long base;
    PyObject *buf = parse_input(self, head, data, !took, position, &base);
    if (buf == NULL) {
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);
    Py_ssize_t n = PyBytes_GET_SIZE(buf);
    Py_ssize_t stop, unit;
    Py_UCS4 bits = 0;
    Py_INCREF(self);
    PyObject *text;
    if (self->maps) {
        text = own_mapped(self, b, n, base, final, &stop);
    }
    else if (took) {
        text = own_segment_after(self, first, b, took, n, n, base, final, &stop, &bits, &unit);
        if (text == NULL && self->fail_start >= 0) {
            /* fail_start and partial are the caller's: of pending + data. */
            self->fail_start += nh;
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyObject *whole = joined(self, head, data);
            if (whole == NULL) {
                PyErr_Clear(); /* the failure already being raised says enough */
            }
            PyErr_Restore(type, value, traceback);
            if (whole != NULL) {
                set_partial_by_replay(self, (const unsigned char *)PyBytes_AS_STRING(whole),
                                      base - nh);
                Py_DECREF(whole);
            }
        }
    }
    else {
        text = own_segment(self, b, 0, n, n, base, final, &stop, &bits, &unit);
        if (text == NULL) {
            set_partial_by_replay(self, b, base);
        }
    }
    if (text != NULL) {
        self->chars += PyUnicode_GET_LENGTH(text);
        *held = PyBytes_FromStringAndSize((const char *)b + stop, n - stop);
        if (*held == NULL) {
            Py_CLEAR(text);
        }
    }
    Py_DECREF(buf);
    Py_DECREF(self);
    return text;
}

/* feed(pending, data, final, position) -> (text, pending)

   One whole ordinary Utf8Decoder.decode call: ``pending`` (a held proper prefix) goes
   in front of ``data``, which ends at the absolute offset ``position``; what is left at
   the end is the new pending prefix.  When the callback raises, fail_start is relative
   to pending + data. */
static PyObject *
Units_feed(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "feed(pending: bytes, data: bytes, final, position)");
        return NULL;
    }
    if (refuse_reentry(self) < 0) {
        return NULL;
    }
    int final = PyObject_IsTrue(args[2]);
    if (final < 0) {
        return NULL;
    }
    long long position = PyLong_AsLongLong(args[3]);
    if (position == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *held;
    PyObject *text = feed_core(self, args[0], args[1], final, position, &held);
    return pair(text, held);
}

/* ---- decoder mode ------------------------------------------------------------------

   For the common configuration (decoder.py's _sync says which) a decoder's position and
   held prefix live in its Units object (enter()/leave()), and ``decoder.decode`` is a
   BoundDecode: one C call per chunk, doing the ready path of Utf8Decoder.decode
   (position += len(data); feed; the new prefix).  Everything else goes back to
   decoder.py, the one owner of the rules: any other input (not bytes, bytearray or a
   byte memoryview; keywords other than ``final``; a position that would reach
   ACCEL_MAX_POSITION) or a call after leave() runs Utf8Decoder.decode itself (which
   leaves decoder mode first); a failure (a raising callback, strict mode's error) calls
   the decoder's ``_c_failed`` with the exception, which leaves decoder mode and keeps
   what the failure leaves behind, as Utf8Decoder.decode does, before the exception
   propagates.

   Utf8Decoder.decode is a DecoderMethod, a descriptor over the Python function: for a
   decoder in decoder mode it gives a BoundDecode (which holds the decoder, as a bound
   method does, so ``f = Utf8Decoder().decode`` keeps it alive), else the ordinary bound
   method.  The decoder holds no reference to these: no reference cycle. */

#define DM_MAX_POSITION (1LL << 62) /* decoder.py's ACCEL_MAX_POSITION */

/* enter(position, pending): decoder mode, with the decoder's state. */
static PyObject *
Units_enter(UnitsObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "enter(position: int, pending: bytes)");
        return NULL;
    }
    long long position = PyLong_AsLongLong(args[0]);
    if (position == -1 && PyErr_Occurred()) {
        return NULL;
    }
    self->position = position;
    Py_XSETREF(self->pending, Py_NewRef(args[1]));
    self->dm = 1;
    Py_RETURN_NONE;
}

/* leave() -> (position, pending): out of decoder mode, the decoder's state handed back. */
static PyObject *
Units_leave(UnitsObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->dm) {
        PyErr_SetString(PyExc_RuntimeError, "not in decoder mode");
        return NULL;
    }
    self->dm = 0;
    PyObject *pending = self->pending;
    self->pending = NULL;
    return pair(PyLong_FromLongLong(self->position), pending);
}

typedef struct {
    PyObject_HEAD
    PyObject *func; /* the Python Utf8Decoder.decode */
    PyObject *name; /* "_dm": the decoder's attribute holding its Units in decoder mode */
} DecoderMethodObject;

typedef struct {
    PyObject_HEAD
    PyObject *func;      /* the Python Utf8Decoder.decode */
    PyObject *decoder;
    UnitsObject *units;
    vectorcallfunc vectorcall;
} BoundDecodeObject;

/* Utf8Decoder.decode(decoder, *args, **kwargs), the Python function. */
static PyObject *
bound_slow(BoundDecodeObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *small[8];
    PyObject **stack = small;
    if (nargs + nkw + 1 > 8) {
        stack = PyMem_Malloc((nargs + nkw + 1) * sizeof(PyObject *));
        if (stack == NULL) {
            return PyErr_NoMemory();
        }
    }
    stack[0] = self->decoder;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++) {
        stack[i + 1] = args[i];
    }
    PyObject *res = PyObject_Vectorcall(self->func, stack, nargs + 1, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    return res;
}

/* decoder.decode(input, final=False) -> str */
static PyObject *
BoundDecode_vectorcall(BoundDecodeObject *self, PyObject *const *args, size_t nargsf,
                       PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    UnitsObject *units = self->units;
    PyObject *final_arg = NULL;
    if (kwnames != NULL) {
        if (nargs != 1 || PyTuple_GET_SIZE(kwnames) != 1 ||
            PyTuple_GET_ITEM(kwnames, 0) != units->state->str_final) {
            return bound_slow(self, args, nargs, kwnames);
        }
        final_arg = args[1];
    }
    else if (nargs == 2) {
        final_arg = args[1];
    }
    else if (nargs != 1) {
        return bound_slow(self, args, nargs, kwnames);
    }
    PyObject *data = args[0];
    if (!PyBytes_CheckExact(data)) {
        /* What Utf8Decoder.decode takes as it is (_byte_view): bytearray, a 1-D
           memoryview of bytes.  Anything else, or a released view, is decoder.py's. */
        int plain = PyByteArray_CheckExact(data);
        if (!plain && PyMemoryView_Check(data)) {
            Py_buffer view;
            if (PyObject_GetBuffer(data, &view, PyBUF_FULL_RO) < 0) {
                PyErr_Clear();
            }
            else {
                const char *f = view.format;
                plain = view.ndim == 1 && (f == NULL || ((f[0] == 'B' || f[0] == 'b' ||
                                                          f[0] == 'c') && f[1] == 0));
                PyBuffer_Release(&view);
            }
        }
        if (!plain || !units->dm) {
            return bound_slow(self, args, nargs, kwnames);
        }
        data = PyBytes_FromObject(data);
        if (data == NULL) {
            return NULL;
        }
    }
    else {
        Py_INCREF(data);
    }
    if (!units->dm || units->position >= DM_MAX_POSITION - PyBytes_GET_SIZE(data)) {
        Py_DECREF(data);
        return bound_slow(self, args, nargs, kwnames);
    }
    PyObject *text = NULL;
    int final = 0;
    if (refuse_reentry(units) < 0 ||
        (final_arg != NULL && (final = PyObject_IsTrue(final_arg)) < 0)) {
        Py_DECREF(data);
        return NULL;
    }
    Py_INCREF(units);
    /* As Utf8Decoder.decode: position counts the chunk before the scanner runs (what
       statistics() shows inside a callback). */
    PyObject *pending = Py_NewRef(units->pending);
    units->position += PyBytes_GET_SIZE(data);
    PyObject *held;
    text = feed_core(units, pending, data, final, units->position, &held);
    if (text != NULL) {
        Py_SETREF(units->pending, held);
    }
    else {
        /* The prefix stays as it was; the decoder keeps what the failure leaves behind. */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != NULL && value != NULL) {
            PyException_SetTraceback(value, traceback);
        }
        if (value != NULL) {
            PyObject *stack[5] = {self->decoder, value, pending, data,
                                  final ? Py_True : Py_False};
            PyObject *res = PyObject_VectorcallMethod(
                units->state->str_c_failed, stack, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            if (res == NULL) {
                PyErr_WriteUnraisable(self->decoder);
            }
            Py_XDECREF(res);
        }
        PyErr_Restore(type, value, traceback);
    }
    Py_DECREF(pending);
    Py_DECREF(data);
    Py_DECREF(units);
    return text;
}

static PyObject *
BoundDecode_get_self(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->decoder);
}

static PyObject *
BoundDecode_get_func(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->func);
}

static PyObject *
BoundDecode_get_doc(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    return PyObject_GetAttrString(self->func, "__doc__");
}

/* inspect.signature() of it: that of the bound method it stands for (help(), IDEs). */
static PyObject *
BoundDecode_get_signature(BoundDecodeObject *self, void *Py_UNUSED(closure))
{
    PyObject *method = PyMethod_New(self->func, self->decoder);
    if (method == NULL) {
        return NULL;
    }
    PyObject *inspect = PyImport_ImportModule("inspect");
    PyObject *signature =
        inspect == NULL ? NULL : PyObject_CallMethod(inspect, "signature", "O", method);
    Py_XDECREF(inspect);
    Py_DECREF(method);
    return signature;
}

static PyGetSetDef BoundDecode_getset[] = {
    {"__self__", (getter)BoundDecode_get_self, NULL, "the decoder", NULL},
    {"__func__", (getter)BoundDecode_get_func, NULL, "Utf8Decoder.decode", NULL},
    {"__doc__", (getter)BoundDecode_get_doc, NULL, NULL, NULL},
    {"__signature__", (getter)BoundDecode_get_signature, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* As a bound method: equal when bound to the same decoder (identity) and function. */
static PyObject *
BoundDecode_richcompare(BoundDecodeObject *self, PyObject *other, int op)
{
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(other) != Py_TYPE(self)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    BoundDecodeObject *that = (BoundDecodeObject *)other;
    int equal = self->decoder == that->decoder;
    if (equal) {
        equal = PyObject_RichCompareBool(self->func, that->func, Py_EQ);
        if (equal < 0) {
            return NULL;
        }
    }
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static Py_hash_t
BoundDecode_hash(BoundDecodeObject *self)
{
    Py_hash_t y = PyObject_Hash(self->func);
    if (y == -1) {
        return -1;
    }
    size_t x = (size_t)(uintptr_t)self->decoder;
    x = (x >> 4) | (x << (8 * sizeof(size_t) - 4)); /* as CPython hashes a pointer */
    Py_hash_t h = (Py_hash_t)x ^ y;
    return h == -1 ? -2 : h;
}

static int
BoundDecode_traverse(BoundDecodeObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->func);
    Py_VISIT(self->decoder);
    Py_VISIT(self->units);
    return 0;
}

static int
BoundDecode_clear(BoundDecodeObject *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->decoder);
    Py_CLEAR(self->units);
    return 0;
}

static void
BoundDecode_dealloc(BoundDecodeObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    BoundDecode_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyObject *
BoundDecode_repr(BoundDecodeObject *self)
{
    return PyUnicode_FromFormat("<bound method decode of %R>", self->decoder);
}

static PyMemberDef BoundDecode_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BoundDecodeObject, vectorcall), READONLY,
     NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot BoundDecode_slots[] = {
    {Py_tp_doc, "Utf8Decoder.decode bound to a decoder in decoder mode"},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_dealloc, BoundDecode_dealloc},
    {Py_tp_traverse, BoundDecode_traverse},
    {Py_tp_clear, BoundDecode_clear},
    {Py_tp_getset, BoundDecode_getset},
    {Py_tp_members, BoundDecode_members},
    {Py_tp_repr, BoundDecode_repr},
    {Py_tp_richcompare, BoundDecode_richcompare},
    {Py_tp_hash, BoundDecode_hash},
    {0, NULL},
};

static PyType_Spec BoundDecode_spec = {
    .name = "utf8stream._speedups.BoundDecode",
    .basicsize = sizeof(BoundDecodeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = BoundDecode_slots,
};

static PyObject *
DecoderMethod_get(DecoderMethodObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self->func);
    }
    PyObject *units = PyObject_GetAttr(obj, self->name);
    if (units == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL;
        }
        PyErr_Clear(); /* not set up yet: the ordinary method */
    }
    module_state *st = (module_state *)PyType_GetModuleState(Py_TYPE(self));
    if (units == NULL || st == NULL || !Py_IS_TYPE(units, st->units_type) ||
        !((UnitsObject *)units)->dm) {
        Py_XDECREF(units);
        PyErr_Clear();
        return PyMethod_New(self->func, obj);
    }
    BoundDecodeObject *bound = PyObject_GC_New(BoundDecodeObject, st->bound_decode_type);
    if (bound == NULL) {
        Py_DECREF(units);
        return NULL;
    }
    bound->func = Py_NewRef(self->func);
    bound->decoder = Py_NewRef(obj);
    bound->units = (UnitsObject *)units; /* the reference moves here */
    bound->vectorcall = (vectorcallfunc)BoundDecode_vectorcall;
    PyObject_GC_Track(bound);
    return (PyObject *)bound;
}

static int
DecoderMethod_init(DecoderMethodObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *func;
    if (!PyArg_ParseTuple(args, "O:DecoderMethod", &func)) {
        return -1;
    }
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "DecoderMethod(func): func must be callable");
        return -1;
    }
    PyObject *name = PyUnicode_InternFromString("_dm");
    if (name == NULL) {
        return -1;
    }
    Py_XSETREF(self->func, Py_NewRef(func));
    Py_XSETREF(self->name, name);
    return 0;
}

static PyObject *
DecoderMethod_get_func(DecoderMethodObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->func != NULL ? self->func : Py_None);
}

static PyGetSetDef DecoderMethod_getset[] = {
    {"__func__", (getter)DecoderMethod_get_func, NULL, "the Python function", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int
DecoderMethod_traverse(DecoderMethodObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->func);
    return 0;
}

static int
DecoderMethod_clear(DecoderMethodObject *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->name);
    return 0;
}

static void
DecoderMethod_dealloc(DecoderMethodObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    DecoderMethod_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyType_Slot DecoderMethod_slots[] = {
    {Py_tp_doc, "DecoderMethod(func): Utf8Decoder.decode, one C call per chunk in decoder "
                "mode (a descriptor over the Python function func)"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, DecoderMethod_init},
    {Py_tp_descr_get, DecoderMethod_get},
    {Py_tp_dealloc, DecoderMethod_dealloc},
    {Py_tp_traverse, DecoderMethod_traverse},
    {Py_tp_clear, DecoderMethod_clear},
    {Py_tp_getset, DecoderMethod_getset},
    {0, NULL},
};

static PyType_Spec DecoderMethod_spec = {
    .name = "utf8stream._speedups.DecoderMethod",
    .basicsize = sizeof(DecoderMethodObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = DecoderMethod_slots,
};

static PyObject *
Units_get_pending(UnitsObject *self, void *Py_UNUSED(closure))
{
    if (self->pending == NULL) {
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    return Py_NewRef(self->pending);
}

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
           goes one way (the kernel takes more instructions there, measured). */
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
    if (nargs != 5 && nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "lines(head: bytes, data: bytes-like, position: int, "
                                         "sep: int, limit: int[, each_offset: int])");
        return NULL;
    }
    int each_offset = 1;
    if (nargs == 6 && (each_offset = parse_each_offset(args[5], "lines")) < 0) {
        return NULL;
    }
    if (refuse_reentry(self) < 0) {
        return NULL;
    }
    long sep = parse_sep(self, args[3]);
    if (sep == -2) {
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must be non-negative");
        return NULL;
    }
    long long base = PyLong_AsLongLong(args[2]);
    if (base == -1 && PyErr_Occurred()) {
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
        int whole = sep < 0 ? memchr(h, '\n', nh) != NULL || memchr(h, '\r', nh - 1) != NULL
                            : memchr(h, (int)sep, nh) != NULL;
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

static PyObject *
Units_drain(UnitsObject *self, PyObject *Py_UNUSED(ignored))
{
    /* The units counted since the last drain, by kind (the order given to setup()),
       then the characters feed() returned. */
    PyObject *t = PyTuple_New(N_KINDS + 1);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < N_KINDS; i++) {
        PyObject *n = PyLong_FromLongLong(self->counts[i]);
        if (n == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, n);
    }
    PyObject *chars = PyLong_FromLongLong(self->chars);
    if (chars == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    PyTuple_SET_ITEM(t, N_KINDS, chars);
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return t;
}

static PyObject *
Units_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    module_state *st = (module_state *)PyType_GetModuleState(type);
    if (st == NULL) {
        return NULL;
    }
    UnitsObject *self = (UnitsObject *)PyType_GenericNew(type, args, kwds);
    if (self != NULL) {
        self->state = st;
        self->fail_start = -1;
        Py_INCREF(Py_None);
        self->callback = Py_None;
        self->replacement = PyUnicode_FromOrdinal(0xFFFD);
        if (self->replacement == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        self->repl_len = 1;
        self->repl_char = 0xFFFD;
    }
    return (PyObject *)self;
}

static int
Units_init(UnitsObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"replacement", "callback", NULL};
    PyObject *replacement, *callback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", kwlist, &replacement, &callback)) {
        return -1;
    }
    self->maps = replacement == Py_None;
    if (self->maps) {
        /* No constant: the callback maps each unit to its text. */
        if (!PyCallable_Check(callback)) {
            PyErr_SetString(PyExc_TypeError, "without a replacement the callback maps units");
            return -1;
        }
        replacement = self->state->empty;
    }
    else if (!PyUnicode_Check(replacement)) {
        PyErr_SetString(PyExc_TypeError, "the replacement is a str or None");
        return -1;
    }
    if (PyUnicode_GET_LENGTH(replacement) > 1) {
        PyErr_SetString(PyExc_ValueError, "the replacement is one character or none");
        return -1;
    }
    Py_INCREF(replacement);
    Py_XSETREF(self->replacement, replacement);
    Py_INCREF(callback);
    Py_XSETREF(self->callback, callback);
    self->repl_len = PyUnicode_GET_LENGTH(replacement);
    self->repl_char = self->repl_len ? PyUnicode_READ_CHAR(replacement, 0) : 0;
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return 0;
}

static int
Units_traverse(UnitsObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->replacement);
    Py_VISIT(self->callback);
    Py_VISIT(self->partial);
    Py_VISIT(self->pending);
    return 0;
}

static int
Units_clear(UnitsObject *self)
{
    Py_CLEAR(self->replacement);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->partial);
    Py_CLEAR(self->pending);
    return 0;
}

static void
Units_dealloc(UnitsObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Units_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef Units_methods[] = {
    {"feed", (PyCFunction)(void (*)(void))Units_feed, METH_FASTCALL,
     "feed(pending, data, final, position) -> (text, pending)"},
    {"lines", (PyCFunction)(void (*)(void))Units_lines, METH_FASTCALL,
     "lines(head, data, position, sep, limit) -> (parts, offsets)"},
    {"drain", (PyCFunction)Units_drain, METH_NOARGS,
     "drain() -> tuple: units counted by kind since the last drain"},
    {"enter", (PyCFunction)(void (*)(void))Units_enter, METH_FASTCALL,
     "enter(position, pending): decoder mode, holding the decoder's state"},
    {"leave", (PyCFunction)Units_leave, METH_NOARGS,
     "leave() -> (position, pending): out of decoder mode, the state handed back"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Units_members[] = {
    {"fail_start", T_PYSSIZET, offsetof(UnitsObject, fail_start), READONLY,
     "start of the unit whose callback raised, in the data of that call; -1 if the call "
     "failed elsewhere"},
    {"resume_at", T_LONGLONG, offsetof(UnitsObject, resume_at), READONLY,
     "absolute offset just past that unit"},
    {"reporting", T_INT, offsetof(UnitsObject, reporting), READONLY,
     "true while the callback runs"},
    {"dm", T_INT, offsetof(UnitsObject, dm), READONLY, "true in decoder mode"},
    {"position", T_LONGLONG, offsetof(UnitsObject, position), 0,
     "in decoder mode: the decoder's position"},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *
Units_get_callback(UnitsObject *self, void *Py_UNUSED(closure))
{
    Py_INCREF(self->callback);
    return self->callback;
}

/* Replaced in place, from the next unit on, even from inside the callback: the counts
   of the call in progress stay in this object. */
static int
Units_set_callback(UnitsObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "callback cannot be deleted (set None)");
        return -1;
    }
    if (self->maps && !PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "a mapping scanner needs its callback");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(self->callback, value);
    return 0;
}

static PyObject *
Units_get_partial(UnitsObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->partial != NULL ? self->partial : self->state->empty);
}

static PyGetSetDef Units_getset[] = {
    {"pending", (getter)Units_get_pending, NULL,
     "in decoder mode: the held proper prefix", NULL},
    {"partial", (getter)Units_get_partial, NULL,
     "after the callback raised at a unit (fail_start >= 0): the text before that unit",
     NULL},
    {"callback", (getter)Units_get_callback, (setter)Units_set_callback,
     "called with each Malformed event (None: none)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Units_slots[] = {
    {Py_tp_doc, "Units(replacement, callback): the C scanner of one decoder (replacement None: "
                "the callback returns each unit's text)"},
    {Py_tp_new, Units_new},
    {Py_tp_init, Units_init},
    {Py_tp_dealloc, Units_dealloc},
    {Py_tp_traverse, Units_traverse},
    {Py_tp_clear, Units_clear},
    {Py_tp_methods, Units_methods},
    {Py_tp_members, Units_members},
    {Py_tp_getset, Units_getset},
    {0, NULL},
};

static PyType_Spec Units_spec = {
    .name = "utf8stream._speedups.Units",
    .basicsize = sizeof(UnitsObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Units_slots,
};

/* ---- PlainEncoder ------------------------------------------------------------------ */

/* Utf8Encoder.encode for plain UTF-8 with a policy CPython's codec applies by itself:
   one C call per chunk.  It counts the characters it encoded (drain() hands the count
   to the Python object's position) and passes every other case -- keyword arguments,
   a character the policy does not cover -- to ``fallback``, the Python method, which
   raises the project's error with the right position. */

typedef struct {
    PyObject_HEAD
    PyObject *errors;   /* str */
    PyObject *fallback; /* callable(input, final=False) */
    long long chars;
    int strict;
} EncoderObject;

static PyObject *
Encoder_encode(EncoderObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 1 || nargs > 2 || !PyUnicode_CheckExact(args[0])) {
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    PyObject *input = args[0];
    PyObject *out = self->strict ? PyUnicode_AsUTF8String(input)
                                 : PyUnicode_AsEncodedString(input, "utf-8",
                                                             PyUnicode_AsUTF8(self->errors));
    if (out == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            return NULL;
        }
        PyErr_Clear();
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    self->chars += PyUnicode_GET_LENGTH(input);
    return out;
}

static PyObject *
Encoder_drain(EncoderObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *n = PyLong_FromLongLong(self->chars);
    self->chars = 0;
    return n;
}

static int
Encoder_init(EncoderObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"errors", "fallback", NULL};
    PyObject *errors, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO", kwlist, &errors, &fallback)) {
        return -1;
    }
    Py_INCREF(errors);
    Py_XSETREF(self->errors, errors);
    Py_INCREF(fallback);
    Py_XSETREF(self->fallback, fallback);
    self->strict = PyUnicode_CompareWithASCIIString(errors, "strict") == 0;
    self->chars = 0;
    return 0;
}

static int
Encoder_traverse(EncoderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->errors);
    Py_VISIT(self->fallback);
    return 0;
}

static int
Encoder_clear(EncoderObject *self)
{
    Py_CLEAR(self->errors);
    Py_CLEAR(self->fallback);
    return 0;
}

static void
Encoder_dealloc(EncoderObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Encoder_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef Encoder_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))Encoder_encode, METH_FASTCALL | METH_KEYWORDS,
     "encode(input, final=False) -> bytes"},
    {"drain", (PyCFunction)Encoder_drain, METH_NOARGS,
     "drain() -> int: characters encoded since the last drain"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Encoder_slots[] = {
    {Py_tp_doc, "PlainEncoder(errors, fallback): Utf8Encoder.encode in one C call"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, Encoder_init},
    {Py_tp_dealloc, Encoder_dealloc},
    {Py_tp_traverse, Encoder_traverse},
    {Py_tp_clear, Encoder_clear},
    {Py_tp_methods, Encoder_methods},
    {0, NULL},
};

static PyType_Spec Encoder_spec = {
    .name = "utf8stream._speedups.PlainEncoder",
    .basicsize = sizeof(EncoderObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Encoder_slots,
};

/* ---- BufferedAsyncIterator ---------------------------------------------------------- */

/* `async for` over a list of ready items, taken from its end (list.pop() order), and a
   coroutine function that is called, with the iterator as its argument, when the list is
   empty.  The list is shared with the owner (it may pop from it too); refill() installs
   a new list with feed() and returns the next item, or raises StopAsyncIteration. */

typedef struct {
    PyObject_HEAD
    PyObject *items;  /* list or NULL */
    PyObject *refill; /* refill(iterator) -> awaitable of the next item */
} BufferedObject;

static PyObject *
Buffered_anext(BufferedObject *self)
{
    if (self->items != NULL && PyList_GET_SIZE(self->items) > 0) {
        /* The object itself is the awaitable; the item is taken when it is awaited, so
           an __anext__() result that is never awaited loses nothing. */
        Py_INCREF(self);
        return (PyObject *)self;
    }
    return PyObject_CallOneArg(self->refill, (PyObject *)self);
}

static PyObject *
Buffered_await(BufferedObject *self)
{
    Py_INCREF(self);
    return (PyObject *)self;
}

/* The next item (a new reference), or NULL with an exception set. */
static PyObject *
Buffered_pop(BufferedObject *self)
{
    Py_ssize_t n = self->items == NULL ? 0 : PyList_GET_SIZE(self->items);
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "BufferedAsyncIterator: the buffer was emptied between __anext__() "
                        "and await");
        return NULL;
    }
    /* list.pop(): the list's reference moves to the caller.  The allocation is kept
       (it only ever shrinks here, and the owner replaces the list per chunk). */
    PyObject *item = PyList_GET_ITEM(self->items, n - 1);
    Py_SET_SIZE(self->items, n - 1);
    return item;
}

/* Awaiting completes at once: PyIter_Send (the SEND opcode) gets the item as the
   awaitable's return value, without a StopIteration object. */
static PySendResult
Buffered_send(BufferedObject *self, PyObject *arg, PyObject **result)
{
    PyObject *item = Buffered_pop(self);
    if (item == NULL) {
        *result = NULL;
        return PYGEN_ERROR;
    }
    *result = item;
    return PYGEN_RETURN;
}

static PyObject *
Buffered_next(BufferedObject *self)
{
    /* The same through the iterator protocol: StopIteration(item). */
    PyObject *item = Buffered_pop(self);
    if (item == NULL) {
        return NULL;
    }
    /* Built explicitly so that a tuple item is not unpacked. */
    PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, item);
    Py_DECREF(item);
    if (stop == NULL) {
        return NULL;
    }
    PyErr_SetObject(PyExc_StopIteration, stop);
    Py_DECREF(stop);
    return NULL;
}

static PyObject *
Buffered_feed(BufferedObject *self, PyObject *items)
{
    if (!PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "feed(items: list)");
        return NULL;
    }
    Py_INCREF(items);
    Py_XSETREF(self->items, items);
    Py_RETURN_NONE;
}

static int
Buffered_init(BufferedObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"refill", NULL};
    PyObject *refill;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &refill)) {
        return -1;
    }
    Py_INCREF(refill);
    Py_XSETREF(self->refill, refill);
    Py_CLEAR(self->items);
    return 0;
}

static int
Buffered_traverse(BufferedObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->items);
    Py_VISIT(self->refill);
    return 0;
}

static int
Buffered_clear(BufferedObject *self)
{
    Py_CLEAR(self->items);
    Py_CLEAR(self->refill);
    return 0;
}

static void
Buffered_dealloc(BufferedObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Buffered_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef Buffered_methods[] = {
    {"feed", (PyCFunction)Buffered_feed, METH_O,
     "feed(items): hand out items from this list (shared, popped from its end)"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Buffered_slots[] = {
    {Py_tp_doc, "BufferedAsyncIterator(refill): async iteration over ready items"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, Buffered_init},
    {Py_tp_dealloc, Buffered_dealloc},
    {Py_tp_traverse, Buffered_traverse},
    {Py_tp_clear, Buffered_clear},
    {Py_am_await, Buffered_await},
    {Py_am_aiter, Buffered_await}, /* __aiter__ returns self */
    {Py_am_anext, Buffered_anext},
    {Py_am_send, Buffered_send},
    {Py_tp_iternext, Buffered_next},
    {Py_tp_methods, Buffered_methods},
    {0, NULL},
};

static PyType_Spec Buffered_spec = {
    .name = "utf8stream._speedups.BufferedAsyncIterator",
    .basicsize = sizeof(BufferedObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Buffered_slots,
};

/* ---- module --------------------------------------------------------------------------- */

static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyObject *kind_tuple, *type, *d_offset, *d_data, *d_kind;
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyTuple_Type, &kind_tuple, &PyType_Type, &type,
                          &d_offset, &d_data, &d_kind)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(kind_tuple) != N_KINDS) {
        PyErr_SetString(PyExc_ValueError, "setup: expected 7 kinds");
        return NULL;
    }
    PyObject *descrs[3] = {d_offset, d_data, d_kind};
    Py_ssize_t offsets[3];
    for (int i = 0; i < 3; i++) {
        if (!PyObject_TypeCheck(descrs[i], &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "setup: slot descriptors expected");
            return NULL;
        }
        PyMemberDef *def = ((PyMemberDescrObject *)descrs[i])->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY) ||
            PyDescr_TYPE(descrs[i]) != (PyTypeObject *)type) {
            PyErr_SetString(PyExc_TypeError, "setup: writable object slots of the type expected");
            return NULL;
        }
        offsets[i] = def->offset;
    }
    module_state *st = get_state(module);
    for (int i = 0; i < N_KINDS; i++) {
        PyObject *k = PyTuple_GET_ITEM(kind_tuple, i);
        Py_INCREF(k);
        Py_XSETREF(st->kinds[i], k);
    }
    Py_INCREF(type);
    Py_XSETREF(st->event_type, (PyTypeObject *)type);
    st->slot_offset = offsets[0];
    st->slot_data = offsets[1];
    st->slot_kind = offsets[2];
    st->ready = 1;
    Py_RETURN_NONE;
}

/* The first ``ch`` in text[i:n) (of ``kind``), or n. */
static inline Py_ssize_t
find_char(int kind, const void *data, Py_ssize_t i, Py_ssize_t n, Py_UCS4 ch)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        const Py_UCS1 *q = ch < 256 ? memchr(p + i, (int)ch, n - i) : NULL;
        return q ? q - p : n;
    }
    for (; i < n; i++) {
        if (PyUnicode_READ(kind, data, i) == ch) {
            return i;
        }
    }
    return n;
}

/* split_lines(text, newline, base, unit, limit, each_offset) -> (contents, offsets) | None

   The line engine's cut of decoded text when each code unit of the source is one
   character (UTF-16/32 without surrogate pairs, single-byte codecs): ``text`` holds
   whole lines; ``newline`` is None (universal: \r\n, \r, \n) or one character.  The
   contents of its lines, and the source offset of each line's start (a character index
   times ``unit``, from ``base``) then of the end; with ``each_offset`` false, the end
   only.  None if a line's content is longer than ``limit`` source bytes (the caller
   cuts those lines another way).  What text.split() and a list of offsets in Python
   did, with no Python object per line but its string. */
static PyObject *
split_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !PyUnicode_Check(args[0]) ||
        !(args[1] == Py_None ||
          (PyUnicode_Check(args[1]) && PyUnicode_GET_LENGTH(args[1]) == 1))) {
        PyErr_SetString(PyExc_TypeError, "split_lines(text: str, newline: str of one "
                                         "character | None, base, unit, limit, each_offset)");
        return NULL;
    }
    PyObject *text = args[0];
    int universal = args[1] == Py_None;
    Py_UCS4 nl = universal ? '\n' : PyUnicode_READ_CHAR(args[1], 0);
    long long base = PyLong_AsLongLong(args[2]);
    if (base == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t unit = PyLong_AsSsize_t(args[3]);
    if (unit == -1 && PyErr_Occurred()) {
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
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (unit < 1 || limit < 0 || base < 0 || n > (LLONG_MAX - base) / unit) {
        PyErr_SetString(PyExc_ValueError, "split_lines: unit >= 1, limit >= 0, and offsets "
                                          "from base >= 0 below 2**63");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    packed_t packed = {NULL, 0, 0};
    PyObject *contents = PyList_New(0);
    PyObject *offsets = each_offset == 2 ? NULL : PyList_New(0);
    if (contents == NULL || (offsets == NULL && each_offset != 2)) {
        goto fail;
    }
    Py_ssize_t i = 0, next_lf = -1, next_cr = -1;
    for (;;) {
        Py_ssize_t e, t = 1;
        if (!universal) {
            e = find_char(kind, data, i, n, nl);
        }
        else {
            if (next_lf < i) {
                next_lf = find_char(kind, data, i, n, '\n');
            }
            if (next_cr < i) {
                next_cr = find_char(kind, data, i, n, '\r');
            }
            e = next_lf < next_cr ? next_lf : next_cr;
            if (e + 1 < n && e == next_cr && PyUnicode_READ(kind, data, e + 1) == '\n') {
                t = 2;
            }
        }
        if (e >= n) {
            break; /* after the last newline: nothing, as the caller promises */
        }
        if ((e - i) > limit / unit) {
            PyMem_Free(packed.v);
            Py_DECREF(contents);
            Py_XDECREF(offsets);
            Py_RETURN_NONE;
        }
        long long at = base + (long long)i * unit;
        if (each_offset == 1 ? append_int(offsets, at) < 0
                             : each_offset == 2 && packed_push(&packed, at) < 0) {
            goto fail;
        }
        PyObject *line = PyUnicode_Substring(text, i, e);
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
        if (packed_push(&packed, base + (long long)i * unit) < 0 ||
            (offsets = packed_view(&packed)) == NULL) {
            goto fail;
        }
    }
    else if (append_int(offsets, base + (long long)i * unit) < 0) {
        goto fail;
    }
    return pair(contents, offsets);
fail:
    PyMem_Free(packed.v);
    Py_XDECREF(contents);
    Py_XDECREF(offsets);
    return NULL;
}

/* _classify_all(prefix, width) -> bytes

   For the tests that hold this file to the Python table (core/_bytes.py): the sequence
   at the start of every buffer ``prefix + x``, x running over all byte strings that
   make the buffer ``width`` bytes long (lexicographic order), as the decoding loop's
   general path sees it (sequence_at, then classify for a malformed unit).  One byte per
   buffer: the length plus 4 in the low nibble (negative: a proper prefix that the end of
   the buffer cuts off), and in the high nibble 0 for a character or 1 + the unit's kind
   (the order of setup()). */
static PyObject *
classify_all(PyObject *module, PyObject *args)
{
    const unsigned char *prefix;
    Py_ssize_t np;
    int width;
    if (!PyArg_ParseTuple(args, "y#i", &prefix, &np, &width)) {
        return NULL;
    }
    if (width < 1 || width > 4 || np > width || width - np > 3) {
        PyErr_SetString(PyExc_ValueError, "_classify_all: 1..4 bytes, at most 3 of them free");
        return NULL;
    }
    Py_ssize_t free_bytes = width - np, count = (Py_ssize_t)1 << (8 * free_bytes);
    PyObject *out = PyBytes_FromStringAndSize(NULL, count);
    if (out == NULL) {
        return NULL;
    }
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    unsigned char buf[4];
    memcpy(buf, prefix, np);
    for (Py_ssize_t x = 0; x < count; x++) {
        for (Py_ssize_t k = 0; k < free_bytes; k++) {
            buf[np + k] = (unsigned char)(x >> (8 * (free_bytes - 1 - k)));
        }
        Py_UCS4 cp;
        Py_ssize_t k = sequence_at(buf, 0, width, &cp);
        int kind = -1;
        if (k > 0 && cp == NOT_A_CHAR) {
            kind = classify(buf, width, 0, k);
        }
        o[x] = (unsigned char)(((k + 4) & 0x0F) | ((kind + 1) << 4));
    }
    return out;
}

static PyMethodDef module_methods[] = {
    {"_classify_all", (PyCFunction)classify_all, METH_VARARGS,
     "_classify_all(prefix, width) -> bytes: the decoder's view of every buffer (tests)"},
    {"setup", (PyCFunction)setup, METH_VARARGS,
     "setup(kinds, Malformed, offset_slot, data_slot, kind_slot)"},
    {"split_lines", (PyCFunction)(void (*)(void))split_lines, METH_FASTCALL,
     "split_lines(text, newline, base, unit, limit, each_offset) -> (contents, offsets) | None"},
    {NULL, NULL, 0, NULL},
};

static int
module_exec(PyObject *m)
{
    module_state *st = get_state(m);
    st->empty = PyUnicode_New(0, 0);
    if (st->empty == NULL) {
        return -1;
    }
    st->simd = simd_level();
#if HAVE_AVX2
    st->prefetchw = has_prefetchw();
#endif
    if (PyModule_AddStringConstant(m, "simd", simd_name(st->simd)) < 0) {
        return -1;
    }
    st->str_final = PyUnicode_InternFromString("final");
    st->str_c_failed = PyUnicode_InternFromString("_c_failed");
    if (st->str_final == NULL || st->str_c_failed == NULL) {
        return -1;
    }
    st->units_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Units_spec, NULL);
    if (st->units_type == NULL || PyModule_AddType(m, st->units_type) < 0) {
        return -1;
    }
    st->encoder_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Encoder_spec, NULL);
    if (st->encoder_type == NULL || PyModule_AddType(m, st->encoder_type) < 0) {
        return -1;
    }
    st->buffered_type = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Buffered_spec, NULL);
    if (st->buffered_type == NULL || PyModule_AddType(m, st->buffered_type) < 0) {
        return -1;
    }
    st->bound_decode_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(m, &BoundDecode_spec, NULL);
    if (st->bound_decode_type == NULL || PyModule_AddType(m, st->bound_decode_type) < 0) {
        return -1;
    }
    st->decoder_method_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(m, &DecoderMethod_spec, NULL);
    if (st->decoder_method_type == NULL || PyModule_AddType(m, st->decoder_method_type) < 0) {
        return -1;
    }
    return utf8stream_add_byte_transcoder(m);
}

static int
module_traverse(PyObject *m, visitproc visit, void *arg)
{
    module_state *st = get_state(m);
    Py_VISIT(st->units_type);
    Py_VISIT(st->encoder_type);
    Py_VISIT(st->buffered_type);
    for (int i = 0; i < N_KINDS; i++) {
        Py_VISIT(st->kinds[i]);
    }
    Py_VISIT(st->event_type);
    Py_VISIT(st->empty);
    Py_VISIT(st->str_final);
    Py_VISIT(st->bound_decode_type);
    Py_VISIT(st->decoder_method_type);
    Py_VISIT(st->str_c_failed);
    return 0;
}

static int
module_clear(PyObject *m)
{
    module_state *st = get_state(m);
    Py_CLEAR(st->units_type);
    Py_CLEAR(st->encoder_type);
    Py_CLEAR(st->buffered_type);
    for (int i = 0; i < N_KINDS; i++) {
        Py_CLEAR(st->kinds[i]);
    }
    Py_CLEAR(st->event_type);
    Py_CLEAR(st->empty);
    Py_CLEAR(st->str_final);
    Py_CLEAR(st->bound_decode_type);
    Py_CLEAR(st->decoder_method_type);
    Py_CLEAR(st->str_c_failed);
    st->ready = 0;
    return 0;
}

static void
module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_MOD_PER_INTERPRETER_GIL_SUPPORTED
    /* Nothing is shared between module objects (see module_state). */
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "utf8stream._speedups",
    .m_doc = "Optional C accelerator for utf8stream; the package works without it.",
    .m_size = sizeof(module_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module_def);
}

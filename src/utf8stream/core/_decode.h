/* The decoding loop: a segment of UTF-8 decoded straight into a str of the right kind,
   malformed units classified (Table 3-7, _table37.h), counted and reported in order.
   Part of the _speedups translation unit (see _speedups.c). */


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

/* An ASCII byte at j: blocks of BLOCK bytes, and between two of them a lone two-byte
   character (an accented letter among ASCII words), decoded here so that European
   text stays in this loop instead of passing through the dispatch for every letter;
   a run of them goes to DECODE_TWO_RUN, an emoji among words to its run.  (The parts
   of DEFINE_DECODE are macros, expanded in place: one function, as written.) */
#define DECODE_ASCII(TYPE, MAXT, ASCII_BLOCK, BLOCK, TWO_BLOCKS)                          \
        if (HAVE_SSE2 && j + BLOCK <= e && out_end - o >= BLOCK) {                        \
            do {                                                                          \
                Py_ssize_t c_;                                                            \
                ASCII_BLOCK(o, buf + j, c_);                                              \
                o += c_;                                                                  \
                j += c_;                                                                  \
                if (c_ == BLOCK) {                                                        \
                    continue;                                                             \
                }                                                                         \
                if (j + 3 > e) {                                                          \
                    break;                                                                \
                }                                                                         \
                unsigned int c0_ = buf[j], c1_ = buf[j + 1];                              \
                if (c0_ - 0xC2u <= 0xDFu - 0xC2u) {                                       \
                    Py_ssize_t before_ = j;                                               \
                    TWO_BLOCKS(TYPE)                                                      \
                    if (j != before_) {                                                   \
                        continue;                                                         \
                    }                                                                     \
                }                                                                         \
                if (MAXT > 0xFFFF && c0_ >= 0xF0) {                                       \
                    /* emoji among words: their run, then ASCII again */                  \
                    Py_ssize_t s_ = j;                                                    \
                    while (j + 4 <= e) {                                                  \
                        Py_UCS4 cp_ = four_byte_char(le32(buf + j));                      \
                        if (!cp_) {                                                       \
                            break;                                                        \
                        }                                                                 \
                        *o++ = (TYPE)cp_;                                                 \
                        acc |= cp_;                                                       \
                        j += 4;                                                           \
                    }                                                                     \
                    if (j == s_ || j >= e || buf[j] >= 0x80) {                            \
                        break;                                                            \
                    }                                                                     \
                    continue;                                                             \
                }                                                                         \
                if (c0_ - 0xC2u > 0xDFu - 0xC2u || (c1_ & 0xC0) != 0x80 ||                \
                    buf[j + 2] >= 0x80) {                                                 \
                    break;                                                                \
                }                                                                         \
                Py_UCS4 cp_ = ((c0_ & 0x1F) << 6) | (c1_ & 0x3F);                         \
                if (cp_ > MAXT) {                                                         \
                    break;                                                                \
                }                                                                         \
                *o++ = (TYPE)cp_;                                                         \
                acc |= cp_;                                                               \
                j += 2;                                                                   \
            } while (j + BLOCK <= e && out_end - o >= BLOCK);                             \
        }                                                                                 \
        else {                                                                            \
            *o++ = (TYPE)b0;                                                              \
            j++;                                                                          \
        }                                                                                 \
        continue;

/* A run of two-byte characters, in a loop of its own: two at a time, then one. */
#define DECODE_TWO_RUN(TYPE, MAXT, TWO_BLOCKS)                                            \
        /* a run of two-byte characters, in a loop of its own: two at a time,             \
           then one */                                                                    \
        Py_ssize_t j0_ = j;                                                               \
    two_byte_run_:                                                                        \
        TWO_BLOCKS(TYPE)                                                                  \
        TWO_BYTE_PAIRS(TYPE)                                                              \
        while (j + 2 <= e) {                                                              \
            unsigned int c0 = buf[j], c1 = buf[j + 1];                                    \
            if (((c0 & 0xE0) != 0xC0) | (c0 < 0xC2) | ((c1 & 0xC0) != 0x80)) {            \
                break;                                                                    \
            }                                                                             \
            Py_UCS4 cp = ((c0 & 0x1F) << 6) | (c1 & 0x3F);                                \
            if (cp > MAXT) {                                                              \
                break;                                                                    \
            }                                                                             \
            *o++ = (TYPE)cp;                                                              \
            acc |= cp;                                                                    \
            j += 2;                                                                       \
        }                                                                                 \
        if (j != j0_) {                                                                   \
            /* one ASCII byte (a space between two words) and the run goes on */          \
            if (j + 2 < e && buf[j] < 0x80 && (buf[j + 1] & 0xE0) == 0xC0) {              \
                *o++ = (TYPE)buf[j];                                                      \
                j++;                                                                      \
                goto two_byte_run_;                                                       \
            }                                                                             \
            continue;                                                                     \
        }

/* A run of three-byte characters (CJK text): two at a time while both have an ordinary
   lead (not E0 or ED, whose second byte has a narrower range), then one at a time. */
#define DECODE_THREE_RUN(TYPE, MAXT, THREE_BLOCKS)                                        \
        /* a run of three-byte characters (CJK text): two at a time while both            \
           have an ordinary lead (not E0 or ED, whose second byte has a narrower          \
           range), then one at a time */                                                  \
        if (MAXT >= 0xFFFF) {                                                             \
            Py_ssize_t j0_ = j;                                                           \
        three_byte_run_:                                                                  \
            if (HAVE_SSE2 && j + 16 <= e &&                                               \
                ((buf[j + 3] & buf[j + 6] & buf[j + 9]) & 0xF0) == 0xE0) {                \
                Py_ssize_t c_ = THREE_BLOCKS(buf + j, e - j, o, (int)sizeof(TYPE));       \
                o += c_;                                                                  \
                j += 3 * c_;                                                              \
                acc |= c_ ? 0x800 : 0;                                                    \
            }                                                                             \
            THREE_BYTE_PAIRS(TYPE)                                                        \
            while (j + 3 <= e) {                                                          \
                unsigned int c0 = buf[j], c1 = buf[j + 1], c2 = buf[j + 2];               \
                if (((c0 & 0xF0) != 0xE0) | ((c1 & 0xC0) != 0x80) |                       \
                    ((c2 & 0xC0) != 0x80)) {                                              \
                    break;                                                                \
                }                                                                         \
                Py_UCS4 cp = ((c0 & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F);      \
                if (cp < 0x800 || cp - 0xD800 < 0x800) {                                  \
                    break; /* overlong or a surrogate: a unit, below */                   \
                }                                                                         \
                *o++ = (TYPE)cp;                                                          \
                acc |= cp;                                                                \
                j += 3;                                                                   \
            }                                                                             \
            if (j != j0_) {                                                               \
                if (j + 3 < e && buf[j] < 0x80 && (buf[j + 1] & 0xF0) == 0xE0) {          \
                    *o++ = (TYPE)buf[j];                                                  \
                    j++;                                                                  \
                    goto three_byte_run_;                                                 \
                }                                                                         \
                continue;                                                                 \
            }                                                                             \
        }

/* A run of four-byte characters (emoji): four per load, then one load and one mask
   check per character. */
#define DECODE_FOUR_RUN(TYPE, MAXT, FOUR_BLOCKS)                                          \
        /* a run of four-byte characters (emoji): four per load, then one load            \
           and one mask check per character */                                            \
        Py_ssize_t j0_ = j;                                                               \
    four_byte_run_:                                                                       \
        if (HAVE_SSE2 && j + 16 <= e &&                                                   \
            ((buf[j + 4] & buf[j + 8] & buf[j + 12]) & 0xF0) == 0xF0) {                   \
            Py_ssize_t c_ = FOUR_BLOCKS(buf + j, e - j, (Py_UCS4 *)(void *)o);            \
            o += c_;                                                                      \
            j += 4 * c_;                                                                  \
            acc |= c_ ? 0x10000 : 0;                                                      \
        }                                                                                 \
        while (j + 4 <= e) {                                                              \
            Py_UCS4 cp = four_byte_char(le32(buf + j));                                   \
            if (!cp) {                                                                    \
                break;                                                                    \
            }                                                                             \
            *o++ = (TYPE)cp;                                                              \
            acc |= cp;                                                                    \
            j += 4;                                                                       \
        }                                                                                 \
        if (j != j0_ && j + 4 < e && buf[j + 1] >= 0x80) {                                \
            /* inside an emoji sequence: a space, or a joiner or variation                \
               selector (U+200D, U+FE0F: three bytes), and the run goes on */             \
            unsigned int c0 = buf[j];                                                     \
            if (c0 < 0x80 && buf[j + 1] >= 0xF0) {                                        \
                *o++ = (TYPE)c0;                                                          \
                j++;                                                                      \
                goto four_byte_run_;                                                      \
            }                                                                             \
            if ((c0 & 0xF0) == 0xE0 && buf[j + 3] >= 0xF0) {                              \
                unsigned int c1 = buf[j + 1], c2 = buf[j + 2];                            \
                Py_UCS4 cp = ((c0 & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F);      \
                if ((c1 & 0xC0) == 0x80 && (c2 & 0xC0) == 0x80 && cp >= 0x800 &&          \
                    cp - 0xD800 >= 0x800) {                                               \
                    *o++ = (TYPE)cp;                                                      \
                    acc |= cp;                                                            \
                    j += 3;                                                               \
                    goto four_byte_run_;                                                  \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        if (j != j0_) {                                                                   \
            continue;                                                                     \
        }

/* Anything else: the sequence at j by the maximal-subpart rule (sequence_at); a
   malformed unit reported and replaced, or the pass stopped in front of it. */
#define DECODE_SEQUENCE(TYPE, MAXT)                                                       \
        Py_UCS4 cp;                                                                       \
        Py_ssize_t k = sequence_at(buf, j, n, &cp);                                       \
        if (k < 0) {                                                                      \
            if (!final) {                                                                 \
                break; /* a proper prefix: held */                                        \
            }                                                                             \
            k = -k;                                                                       \
            cp = NOT_A_CHAR;                                                              \
        }                                                                                 \
        if (cp == NOT_A_CHAR) {                                                           \
            if (maps) {                                                                   \
                cur->unit = k;                                                            \
                cur->why = STOP_UNIT;                                                     \
                break;                                                                    \
            }                                                                             \
            /* Stop before reporting: the unit is reported once, by the pass that         \
               writes its replacement. */                                                 \
            int lone_ = (b0 & 0xC0) == 0x80;                                              \
            if (repl_len && repl > MAXT) {                                                \
                cur->wide = repl;                                                         \
                cur->why = STOP_WIDE;                                                     \
                break;                                                                    \
            }                                                                             \
            if (repl_len && lone_ && cur->extra == 0) {                                   \
                cur->why = STOP_ROOM;                                                     \
                break;                                                                    \
            }                                                                             \
            PyObject *r_ = own_unit(self, buf, n, base, j, j + k);                        \
            if (r_ == NULL) {                                                             \
                return -1;                                                                \
            }                                                                             \
            Py_DECREF(r_);                                                                \
            if (repl_len) {                                                               \
                cur->extra -= lone_;                                                      \
                *o++ = (TYPE)repl;                                                        \
                acc |= repl;                                                              \
            }                                                                             \
            else {                                                                        \
                cur->extra += !lone_;                                                     \
            }                                                                             \
        }                                                                                 \
        else {                                                                            \
            if (cp > MAXT) {                                                              \
                cur->wide = cp;                                                           \
                cur->why = STOP_WIDE;                                                     \
                break;                                                                    \
            }                                                                             \
            *o++ = (TYPE)cp;                                                              \
            acc |= cp;                                                                    \
        }

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
                DECODE_ASCII(TYPE, MAXT, ASCII_BLOCK, BLOCK, TWO_BLOCKS)                  \
            }                                                                             \
            if (b0 < 0xE0) {                                                             \
                DECODE_TWO_RUN(TYPE, MAXT, TWO_BLOCKS)                                    \
            }                                                                             \
            else if (b0 < 0xF0) {                                                        \
                DECODE_THREE_RUN(TYPE, MAXT, THREE_BLOCKS)                                \
            }                                                                             \
            else if (MAXT > 0xFFFF) {                                                    \
                DECODE_FOUR_RUN(TYPE, MAXT, FOUR_BLOCKS)                                  \
            }                                                                             \
            DECODE_SEQUENCE(TYPE, MAXT)                                                   \
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
   fail.  It runs on every UCS-4 segment, European text with one emoji included: the
   loops mispredict a branch at each accented letter (``benchmarks/bench_decoder.py``,
   the mixed and web corpora). */
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
   everything else (two- and four-byte runs, every malformed unit) as above: on mixed
   European text, emoji and damaged text these loops beat an AVX2 kernel for ASCII with
   two-byte characters or for four-byte runs (``benchmarks/ab_builds.py`` compares two
   builds of this file). */
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

#if HAVE_AVX2
#define SKIP_ASCII(buf, j, e) (avx2 ? skip_ascii_avx2(buf, j, e) : skip_ascii(buf, j, e))
#else
#define SKIP_ASCII(buf, j, e) skip_ascii(buf, j, e)
#endif

/* A segment buf[i:e) likely ASCII copied into a new str while it is checked (one pass,
   as CPython does): 1 with *out that str if it is all ASCII; else 0 with *a_out where
   its ASCII head ends (only the copy of the head was in vain); -1 on failure. */
static inline __attribute__((always_inline)) int
ascii_guess(UnitsObject *self, const unsigned char *buf, Py_ssize_t i, Py_ssize_t e, int avx2,
            Py_ssize_t *a_out, PyObject **out)
{
    PyObject *guess = PyUnicode_New(e - i, 0x7F);
    if (guess == NULL) {
        return -1;
    }
    unsigned char *d = PyUnicode_DATA(guess);
    Py_ssize_t a = i;
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
        *out = guess;
        return 1;
    }
    Py_DECREF(guess);
    *a_out = a;
    return 0;
}

/* The pass of own_decode (of the kind of s, which holds len characters of cap) over
   buf[cur->j:e), again after each stop that asks for a wider str (STOP_WIDE) or more
   room (STOP_ROOM): the str (a new one if it was widened), or NULL. */
static inline __attribute__((always_inline)) PyObject *
decode_segment(UnitsObject *self, PyObject *s, const unsigned char *buf, Py_ssize_t e,
               Py_ssize_t n, long long base, int final, Cursor *cur, Py_ssize_t *len_io,
               Py_ssize_t *cap_io, int avx2)
{
    Py_ssize_t len = *len_io, cap = *cap_io;
    for (;;) {
        void *data = PyUnicode_DATA(s);
        Py_ssize_t m;
#if HAVE_AVX2
#define DECODE(NAME, TYPE)                                                                 \
    (avx2 ? NAME##_avx2(self, buf, e, n, base, final, (TYPE *)data + len, (TYPE *)data + cap, \
                        cur)                                                              \
          : NAME(self, buf, e, n, base, final, (TYPE *)data + len, (TYPE *)data + cap, cur))
#else
#define DECODE(NAME, TYPE)                                                                 \
    NAME(self, buf, e, n, base, final, (TYPE *)data + len, (TYPE *)data + cap, cur)
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
        if (cur->why == STOP_WIDE) {
            PyObject *w = PyUnicode_New(cap, cur->wide > 0xFFFF ? 0x10FFFF : 0xFFFF);
            if (w == NULL) {
                Py_DECREF(s);
                return NULL;
            }
            widen_into(PyUnicode_DATA(w), PyUnicode_KIND(w), PyUnicode_DATA(s),
                       PyUnicode_KIND(s), len);
            Py_SETREF(s, w);
        }
        else if (cur->why == STOP_ROOM) {
            /* Lone continuation bytes: grow by an eighth, so that a text full of them
               costs few reallocations. */
            Py_ssize_t more = cap / 8 + 16;
            if (PyUnicode_Resize(&s, cap + more) < 0) {
                Py_DECREF(s);
                return NULL;
            }
            cap += more;
            cur->extra += more;
        }
        else {
            break;
        }
    }
    *len_io = len;
    *cap_io = cap;
    return s;
}

/* The segment's str, shrunk to its len characters (of cap), in the narrowest kind for
   the OR of its characters ``acc`` (as CPython's constructors make it), or NULL. */
static inline __attribute__((always_inline)) PyObject *
segment_result(PyObject *s, Py_ssize_t len, Py_ssize_t cap, Py_UCS4 acc)
{
    if (len != cap && PyUnicode_Resize(&s, len) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    int kind = PyUnicode_KIND(s);
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
#else
    const int avx2 = 0;
#endif
    *unit = 0;
    if (pre || counted >= 0) {
        a = SKIP_ASCII(buf, i, e);
    }
    else if (e - i >= 4096) {
        /* Likely ASCII: copy while checking, as CPython does (one pass over the data);
           if it is not, only the copy of the ASCII head was in vain. */
        PyObject *guess = NULL;
        int all = ascii_guess(self, buf, i, e, avx2, &a, &guess);
        if (all < 0) {
            return NULL;
        }
        if (all) {
            *stop = e;
            return guess;
        }
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
    s = decode_segment(self, s, buf, e, n, base, final, &cur, &len, &cap, avx2);
    if (s == NULL) {
        return NULL;
    }
    *stop = cur.j;
    if (cur.why == STOP_UNIT) {
        *unit = cur.unit;
    }
    *bits |= cur.acc;
    return segment_result(s, len, cap, cur.acc);
}

#undef SKIP_ASCII

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


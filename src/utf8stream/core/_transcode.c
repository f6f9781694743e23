/* ByteTranscoder: UTF-8 to UTF-16LE/BE or UTF-32LE/BE and back, bytes to bytes; and UTF-8
   to UTF-8, the repair (well-formed stretches copied, malformed units replaced).

 * Part of the optional accelerator (compiled into utf8stream._speedups; _speedups.c
 * registers the type).  The pure-Python twin is core/_native.py's ByteTranscoder.
 *
 * Why not Utf8Decoder + str.encode: that builds the text of every chunk as a str (a
 * scan to choose its kind, the decoding, a copy when widened) and then encodes it again;
 * here each sequence is decoded and written in the target encoding at once, ASCII runs
 * widened 16 bytes at a time with SSE2, into a buffer of the worst-case size (x2 for
 * UTF-16, x4 for UTF-32, x3 per byte back to UTF-8) kept until the end of the stream,
 * then copied into the bytes object returned.
 *
 * Malformed input is what the library's str path makes of it, unit for unit:
 *   - UTF-8 source: maximal subparts classified by Table 3-7, exactly as Utf8Decoder
 *     (a proper prefix at the end of a chunk is held for the next call);
 *   - UTF-16/32 source: CPython's codec's units and reasons, as transcode_file names
 *     them (core/direct.py): a lone low surrogate INVALID_BYTE, a high one not followed
 *     by a low one SURROGATE (the next unit is read again), a code point past U+10FFFF
 *     INVALID_BYTE, a UTF-32 surrogate SURROGATE, a cut unit at the end of the stream
 *     TRUNCATED_AT_END (a cut high surrogate with what follows it).
 * Each unit is counted by kind; it is built as a Malformed event only when there is a
 * callback or the policy is strict.  It becomes U+FFFD in the target ("replace"),
 * nothing ("ignore"), or ends the call ("strict": the output before it is returned and
 * ``failure`` holds its event).  After a strict failure or a callback that raised, the
 * input after the unit is kept and decoded first by the next call; when the callback
 * raised, the output of the call so far (with the unit's replacement) is returned in
 * front of the next call's output.  Nothing is lost either way.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_table37.h"
#include "_transcode.h"

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define TX_SSE2 1
#else
#define TX_SSE2 0
#endif

/* AVX2 kernels (UTF-16 to UTF-8 blocks, UTF-8 validation for the repair), compiled by a
   function attribute and used only when the module's decoder uses AVX2 too (_simd.h's
   simd_level(): the CPU has AVX2 and BMI2, UTF8STREAM_NO_AVX2 is not set), read from the
   module's ``simd`` when a transcoder is made. */
#if TX_SSE2 && (defined(__x86_64__) || defined(__i386__))
#define TX_AVX2 1
#include <immintrin.h>
#define TX_AVX2_FN __attribute__((target("avx2,bmi2,popcnt")))
#else
#define TX_AVX2 0
#endif


enum { ENC_UTF8, ENC_UTF16LE, ENC_UTF16BE, ENC_UTF32LE, ENC_UTF32BE, ENC_COUNT };
static const char *const encoding_names[ENC_COUNT] = {"utf-8", "utf-16-le", "utf-16-be",
                                                       "utf-32-le", "utf-32-be"};

enum { POLICY_REPLACE, POLICY_IGNORE, POLICY_STRICT };

/* Held input is at most 3 bytes (a UTF-8 proper prefix; a high surrogate and an odd
   byte; a cut UTF-32 unit). */
#define HELD_MAX 3
/* Bytes of a chunk joined to the held ones: enough to decide what they are. */
#define JOINT_TAKE 8

typedef struct {
    PyObject_HEAD
    int source, target, policy;
    PyObject *callback;   /* None or a callable taking a Malformed */
    PyObject *event_type; /* Malformed */
    PyObject *kinds;      /* tuple of the N_KINDS MalformedKind members */
    PyObject *failure;    /* the unit a strict call stopped at, or None */
    PyObject *unread;     /* bytes: the input after a failed unit, or NULL */
    int unread_final;     /* ... which ends the stream */
    PyObject *carry;      /* bytes: output of a call whose callback raised, or NULL */
    unsigned char held[HELD_MAX];
    int nheld;
    long long position; /* absolute offset just past the last byte received */
    long long counts[N_KINDS];
    long long chars; /* characters written since the last drain */
    int reporting;   /* the callback is running: calls are refused */
    int busy;        /* a call runs without the GIL: other threads are refused */
    /* Where a call writes its output before it is copied into the bytes returned: kept
       from call to call until the end of the stream (see Tx_transcode). */
    unsigned char *scratch;
    Py_ssize_t scratch_size;
    int avx2; /* the AVX2 kernels are used (the module's ``simd`` is "avx2") */
} TxObject;

/* ---- malformed units ----------------------------------------------------------------- */

/* The UTF-8 unit at buf[i] (i < n, buf[i] >= 0x80), which is not well-formed: the
   length of the malformed unit (a maximal subpart) that starts there, or minus the
   length of a proper prefix cut by the end of the buffer (Table 3-7, _table37.h). */
static inline Py_ssize_t
utf8_unit_at(const unsigned char *buf, Py_ssize_t i, Py_ssize_t n)
{
    Py_UCS4 unused;
    return sequence_at(buf, i, n, &unused);
}

/* One malformed unit: count it; with a callback or the strict policy, build its event
   (and report it).  0: go on (the caller writes the replacement); 1: strict, the call
   stops here (``failure`` holds the event); -1: the callback raised. */
static int __attribute__((noinline))
tx_unit(TxObject *self, const unsigned char *unit, Py_ssize_t len, long long offset, int kind)
{
    self->counts[kind]++;
    int strict = self->policy == POLICY_STRICT;
    if (self->callback == Py_None && !strict) {
        return 0;
    }
    PyObject *argv[3];
    argv[0] = PyLong_FromLongLong(offset);
    argv[1] = PyBytes_FromStringAndSize((const char *)unit, len);
    argv[2] = PyTuple_GET_ITEM(self->kinds, kind);
    PyObject *event = NULL;
    if (argv[0] != NULL && argv[1] != NULL) {
        event = PyObject_Vectorcall(self->event_type, argv, 3, NULL);
    }
    Py_XDECREF(argv[0]);
    Py_XDECREF(argv[1]);
    if (event == NULL) {
        return -1;
    }
    if (self->callback != Py_None) {
        PyObject *callback = Py_NewRef(self->callback);
        self->reporting = 1;
        PyObject *res = PyObject_CallOneArg(callback, event);
        self->reporting = 0;
        Py_DECREF(callback);
        if (res == NULL) {
            Py_DECREF(event);
            return -1;
        }
        Py_DECREF(res);
    }
    if (strict) {
        Py_XSETREF(self->failure, event);
        return 1;
    }
    Py_DECREF(event);
    return 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* One store per code unit: the byte order of this machine swapped when it is not the
   target's. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG 1
#else
#define HOST_BIG 0
#endif

static inline unsigned char *
put16(unsigned char *o, uint32_t u, int big)
{
    uint16_t v = (uint16_t)u;
    if (big != HOST_BIG) {
        v = (uint16_t)(v << 8 | v >> 8);
    }
    memcpy(o, &v, 2);
    return o + 2;
}

static inline unsigned char *
put32(unsigned char *o, uint32_t u, int big)
{
    if (big != HOST_BIG) {
        u = (u << 24) | ((u << 8) & 0xFF0000u) | ((u >> 8) & 0xFF00u) | (u >> 24);
    }
    memcpy(o, &u, 4);
    return o + 4;
}

/* A code point in UTF-16 (``width`` 2, a surrogate pair past U+FFFF) or UTF-32. */
static inline unsigned char *
put_wide(unsigned char *o, uint32_t cp, int width, int big)
{
    if (width == 4) {
        return put32(o, cp, big);
    }
    if (cp >= 0x10000) {
        cp -= 0x10000;
        o = put16(o, 0xD800 | (cp >> 10), big);
        return put16(o, 0xDC00 | (cp & 0x3FF), big);
    }
    return put16(o, cp, big);
}

/* A code point below U+10000 in UTF-16 or UTF-32. */
static inline unsigned char *
put_bmp(unsigned char *o, uint32_t cp, int width, int big)
{
    return width == 4 ? put32(o, cp, big) : put16(o, cp, big);
}

static inline unsigned char *
put_utf8(unsigned char *o, uint32_t cp)
{
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    }
    else if (cp < 0x800) {
        *o++ = (unsigned char)(0xC0 | (cp >> 6));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xE0 | (cp >> 12));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    else {
        *o++ = (unsigned char)(0xF0 | (cp >> 18));
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    return o;
}

static inline uint32_t
get16(const unsigned char *p, int big)
{
    return big ? (uint32_t)p[0] << 8 | p[1] : (uint32_t)p[1] << 8 | p[0];
}

static inline uint32_t
get32(const unsigned char *p, int big)
{
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The code point of the well-formed two-, three- or four-byte sequence at p (its bytes
   all there), or 0 when it is not one: another lead, a missing continuation byte, an
   overlong form, a surrogate, past U+10FFFF (Unicode Table 3-7, by the code point's
   range).  For the runs of well-formed sequences of utf8_to_utf16 and utf8_repair. */
static inline uint32_t
well_formed2(const unsigned char *p)
{
    uint32_t c0 = p[0], c1 = p[1];
    uint32_t cp = (c0 & 0x1F) << 6 | (c1 & 0x3F);
    return (c0 & 0xE0) != 0xC0 || (c1 & 0xC0) != 0x80 || cp < 0x80 ? 0 : cp;
}

static inline uint32_t
well_formed3(const unsigned char *p)
{
    uint32_t c0 = p[0], c1 = p[1], c2 = p[2];
    uint32_t cp = (c0 & 0x0F) << 12 | (c1 & 0x3F) << 6 | (c2 & 0x3F);
    return (c0 & 0xF0) != 0xE0 || ((c1 | c2 << 8) & 0xC0C0) != 0x8080 || cp < 0x800 ||
                   cp - 0xD800 < 0x800
               ? 0
               : cp;
}

static inline uint32_t
well_formed4(const unsigned char *p)
{
    uint32_t c0 = p[0], c1 = p[1], c2 = p[2], c3 = p[3];
    uint32_t cp = (c0 & 0x07) << 18 | (c1 & 0x3F) << 12 | (c2 & 0x3F) << 6 | (c3 & 0x3F);
    return (c0 & 0xF8) != 0xF0 || ((c1 | c2 << 8 | c3 << 16) & 0xC0C0C0) != 0x808080 ||
                   cp - 0x10000 >= 0x100000
               ? 0
               : cp;
}

#include "_transcode_simd.h"

/* ---- the loops --------------------------------------------------------------------------- */

/* Each loop transcodes buf[0:n), which starts at the absolute offset ``base``, writing at
   *op.  Returns 0 with *stop where a held tail begins (n if none), or tx_unit's 1 or -1
   with *stop just past the failed unit (its replacement written when the callback
   raised).  Written as one function per direction, inlined into one per target, so
   that the width and byte order are constants in each. */

static inline __attribute__((always_inline)) int
from_utf8(TxObject *self, const unsigned char *b, Py_ssize_t n, long long base, int final,
          unsigned char **op, Py_ssize_t *stop, int width, int big)
{
    unsigned char *o = *op;
    Py_ssize_t i = 0;
    long long chars = 0;
    int rc = 0;
    while (i < n) {
        unsigned int b0 = b[i];
        if (b0 < 0x80) {
#if TX_SSE2
            const __m128i zero = _mm_setzero_si128();
            Py_ssize_t start = i;
            while (i + 16 <= n) {
                __m128i v = _mm_loadu_si128((const __m128i *)(b + i));
                int mask = _mm_movemask_epi8(v);
                __m128i lo = big ? _mm_unpacklo_epi8(zero, v) : _mm_unpacklo_epi8(v, zero);
                __m128i hi = big ? _mm_unpackhi_epi8(zero, v) : _mm_unpackhi_epi8(v, zero);
                /* The whole block is widened and stored even when only its first
                   ``ascii`` bytes are ASCII: the bytes past them are overwritten next.
                   There is room: each input byte gives at most ``width`` output bytes
                   and the buffer has that for every byte (tx_bound), so the 16 bytes
                   from i leave room for 16 * width bytes at o. */
                int ascii = mask ? __builtin_ctz((unsigned int)mask) : 16;
                if (width == 2) {
                    _mm_storeu_si128((__m128i *)o, lo);
                    _mm_storeu_si128((__m128i *)(o + 16), hi);
                }
                else {
                    _mm_storeu_si128((__m128i *)o, big ? _mm_unpacklo_epi16(zero, lo)
                                                       : _mm_unpacklo_epi16(lo, zero));
                    _mm_storeu_si128((__m128i *)(o + 16), big ? _mm_unpackhi_epi16(zero, lo)
                                                              : _mm_unpackhi_epi16(lo, zero));
                    _mm_storeu_si128((__m128i *)(o + 32), big ? _mm_unpacklo_epi16(zero, hi)
                                                              : _mm_unpacklo_epi16(hi, zero));
                    _mm_storeu_si128((__m128i *)(o + 48), big ? _mm_unpackhi_epi16(zero, hi)
                                                              : _mm_unpackhi_epi16(hi, zero));
                }
                o += ascii * width;
                i += ascii;
                if (mask) {
                    break; /* a non-ASCII byte at i */
                }
            }
            chars += i - start;
#endif
            while (i < n && b[i] < 0x80) {
                o = put_wide(o, b[i], width, big);
                i++;
                chars++;
            }
            continue;
        }
        /* Runs of well-formed two-, three- or four-byte sequences, each written at
           once and checked by the range of its code point (overlong forms, surrogates
           and code points past U+10FFFF fall out); anything else (malformed, or cut by
           the end of the buffer) takes the general path below. */
        Py_ssize_t run_start = i;
        if (b0 < 0xE0) {
            uint32_t cp;
            while (i + 1 < n && (cp = well_formed2(b + i)) != 0) {
                o = put_bmp(o, cp, width, big);
                i += 2;
                chars++;
            }
        }
        else if (b0 < 0xF0) {
            uint32_t cp;
            while (i + 2 < n && (cp = well_formed3(b + i)) != 0) {
                o = put_bmp(o, cp, width, big);
                i += 3;
                chars++;
            }
        }
        else {
            uint32_t cp;
            while (i + 3 < n && (cp = well_formed4(b + i)) != 0) {
                o = put_wide(o, cp, width, big);
                i += 4;
                chars++;
            }
        }
        if (i > run_start) {
            continue;
        }
        /* The runs take every well-formed sequence: here is a malformed unit, or a
           proper prefix cut by the end of the buffer. */
        Py_ssize_t k = utf8_unit_at(b, i, n), end = i + k;
        if (k < 0) {
            if (!final) {
                break; /* held */
            }
            end = n;
        }
        rc = tx_unit(self, b + i, end - i, base + i, classify(b, n, i, end));
        i = end;
        if (rc == 1) {
            break;
        }
        if (self->policy == POLICY_REPLACE) {
            o = put_wide(o, 0xFFFD, width, big);
            chars++;
        }
        if (rc < 0) {
            break;
        }
    }
    self->chars += chars;
    *op = o;
    *stop = i;
    return rc;
}

/* Replacement of a unit of a UTF-16 or UTF-32 source, then what from_utf8 does. */
#define REVERSE_UNIT(START, END, KIND)                                                   \
    do {                                                                                 \
        rc = tx_unit(self, b + (START), (END) - (START), base + (START), (KIND));         \
        i = (END);                                                                       \
        if (rc == 1) {                                                                   \
            goto done;                                                                   \
        }                                                                                \
        if (self->policy == POLICY_REPLACE) {                                            \
            o = put_utf8(o, 0xFFFD);                                                     \
            chars++;                                                                     \
        }                                                                                \
        if (rc < 0) {                                                                    \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

static inline __attribute__((always_inline)) int
from_utf16(TxObject *self, const unsigned char *b, Py_ssize_t n, long long base, int final,
           unsigned char **op, Py_ssize_t *stop, int big)
{
    unsigned char *o = *op;
    Py_ssize_t i = 0;
    long long chars = 0;
    int rc = 0;
    for (;;) {
        /* The blocks, then the scalar loop up to ``until`` (one unit or pair after the
           SSE2 blocks; with AVX2, the 16 units of the block it stopped at). */
        Py_ssize_t until;
#if TX_AVX2
        if (self->avx2) {
            i += utf16_blocks_avx2(b + i, n - i, &o, &chars, big);
            until = i + 32;
        }
        else
#endif
        {
#if TX_SSE2
            /* Eight ASCII code units at a time: the high byte zero, the low one below
               0x80. */
            const __m128i not_ascii = _mm_set1_epi16(big ? 0x80FF : (short)0xFF80);
            const __m128i zero = _mm_setzero_si128();
            while (i + 16 <= n) {
                __m128i v = _mm_loadu_si128((const __m128i *)(b + i));
                int mask =
                    _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, not_ascii), zero));
                if (big) {
                    v = _mm_srli_epi16(v, 8);
                }
                /* Stored whole, advanced by the ASCII units before the first other one
                   (the rest is overwritten next; 16 input bytes leave room for 48 at
                   o). */
                _mm_storel_epi64((__m128i *)o, _mm_packus_epi16(v, v));
                if (mask != 0xFFFF) {
                    int ascii = __builtin_ctz((unsigned int)~mask) / 2;
                    o += ascii;
                    i += 2 * ascii;
                    chars += ascii;
                    break;
                }
                o += 8;
                i += 16;
                chars += 8;
            }
#endif
            until = i + 1;
        }
        do {
            if (n - i < 2) {
                if (i == n || !final) {
                    goto done; /* an odd byte is held */
                }
                REVERSE_UNIT(i, n, K_TRUNCATED_AT_END);
                continue;
            }
            uint32_t u = get16(b + i, big);
            if (u < 0xD800 || u > 0xDFFF) {
                o = put_utf8(o, u);
                i += 2;
                chars++;
            }
            else if (u >= 0xDC00) {
                REVERSE_UNIT(i, i + 2, K_INVALID_BYTE); /* CPython: "illegal encoding" */
            }
            else if (n - i < 4) {
                if (!final) {
                    goto done; /* a high surrogate, perhaps with an odd byte, is held */
                }
                REVERSE_UNIT(i, n, K_TRUNCATED_AT_END); /* "unexpected end of data" */
            }
            else {
                uint32_t u2 = get16(b + i + 2, big);
                if (u2 >= 0xDC00 && u2 <= 0xDFFF) {
                    o = put_utf8(o, 0x10000 + ((u - 0xD800) << 10) + (u2 - 0xDC00));
                    i += 4;
                    chars++;
                }
                else {
                    REVERSE_UNIT(i, i + 2, K_SURROGATE); /* "illegal UTF-16 surrogate" */
                }
            }
        } while (i < until);
    }
done:
    self->chars += chars;
    *op = o;
    *stop = i;
    return rc;
}

static inline __attribute__((always_inline)) int
from_utf32(TxObject *self, const unsigned char *b, Py_ssize_t n, long long base, int final,
           unsigned char **op, Py_ssize_t *stop, int big)
{
    unsigned char *o = *op;
    Py_ssize_t i = 0;
    long long chars = 0;
    int rc = 0;
    for (;;) {
#if TX_SSE2
        /* Four ASCII code units at a time. */
        const __m128i not_ascii = _mm_set1_epi32(big ? (int)0x80FFFFFF : (int)0xFFFFFF80);
        const __m128i zero = _mm_setzero_si128();
        while (i + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(b + i));
            if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, not_ascii), zero)) != 0xFFFF) {
                break;
            }
            if (big) {
                v = _mm_srli_epi32(v, 24);
            }
            __m128i w = _mm_packs_epi32(v, v);
            int32_t four = _mm_cvtsi128_si32(_mm_packus_epi16(w, w));
            memcpy(o, &four, 4);
            o += 4;
            i += 16;
            chars += 4;
        }
#endif
        if (n - i < 4) {
            if (i == n || !final) {
                break; /* a cut unit is held */
            }
            REVERSE_UNIT(i, n, K_TRUNCATED_AT_END); /* "truncated data" */
            continue;
        }
        uint32_t u = get32(b + i, big);
        if (u > 0x10FFFF) {
            REVERSE_UNIT(i, i + 4, K_INVALID_BYTE); /* "code point not in range" */
        }
        else if (u >= 0xD800 && u <= 0xDFFF) {
            REVERSE_UNIT(i, i + 4, K_SURROGATE);
        }
        else {
            o = put_utf8(o, u);
            i += 4;
            chars++;
        }
    }
done:
    self->chars += chars;
    *op = o;
    *stop = i;
    return rc;
}

#undef REVERSE_UNIT

/* UTF-8 to UTF-8, the repair: well-formed stretches are copied as they are (found by
   from_utf8's checks, without decoding), each malformed unit replaced by U+FFFD or
   dropped; the units, events and held prefixes are from_utf8's. */
static int
utf8_repair(TxObject *self, const unsigned char *b, Py_ssize_t n, long long base, int final,
            unsigned char **op, Py_ssize_t *stop)
{
    unsigned char *o = *op;
    Py_ssize_t i = 0, copied = 0; /* b[copied:i) is well-formed and not written yet */
    long long chars = 0;
    int rc = 0;
#if TX_AVX2
    /* With AVX2, whole blocks are validated first; from where the validation stops, the
       scalar loop takes over up to the next malformed unit, or for the next block's bytes
       (at least) when the validation vouched for nothing, before it is tried again. */
    const int avx2 = self->avx2;
    Py_ssize_t backoff = 18;
#endif
    for (;;) {
        Py_ssize_t limit = n; /* where the scalar loop stops for the validation */
#if TX_AVX2
        if (avx2 && n - i >= 32) {
            if (i > copied) {
                memcpy(o, b + copied, (size_t)(i - copied));
                o += i - copied;
            }
            Py_ssize_t flagged, from = i;
            Py_ssize_t s = utf8_valid_avx2(b + i, n - i, &chars, o, &flagged); /* copied */
            o += s;
            i += s;
            copied = i;
            /* The scalar loop takes the bytes up to the one found wrong (the unit there,
               or before it); when the validation vouched for nothing, many units may
               follow (binary input): twice as many bytes each time, up to 4 KiB. */
            if (flagged >= 0) {
                Py_ssize_t upto = flagged + 1;
                if (s > 0) {
                    backoff = 18;
                }
                else {
                    backoff = backoff < 4096 ? 2 * backoff : backoff;
                    upto = upto > backoff ? upto : backoff;
                }
                if (n - from > upto) {
                    limit = from + upto;
                }
            }
        }
#endif
        while (i < limit) {
            unsigned int b0 = b[i];
            if (b0 < 0x80) {
#if TX_SSE2
                while (i + 16 <= n) {
                    int mask = _mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(b + i)));
                    if (mask) {
                        int ascii = __builtin_ctz((unsigned int)mask);
                        i += ascii;
                        chars += ascii;
                        break;
                    }
                    i += 16;
                    chars += 16;
                }
#endif
                while (i < n && b[i] < 0x80) {
                    i++;
                    chars++;
                }
                continue;
            }
            Py_ssize_t run_start = i;
            if (b0 < 0xE0) {
                while (i + 1 < n && well_formed2(b + i)) {
                    i += 2;
                    chars++;
                }
            }
            else if (b0 < 0xF0) {
                while (i + 2 < n && well_formed3(b + i)) {
                    i += 3;
                    chars++;
                }
            }
            else {
                while (i + 3 < n && well_formed4(b + i)) {
                    i += 4;
                    chars++;
                }
            }
            if (i > run_start) {
                continue;
            }
            Py_ssize_t k = utf8_unit_at(b, i, n), end = i + k;
            if (k < 0) {
                if (!final) {
                    goto done; /* held */
                }
                end = n;
            }
            if (i > copied) {
                memcpy(o, b + copied, (size_t)(i - copied)); /* what precedes the unit */
                o += i - copied;
            }
            rc = tx_unit(self, b + i, end - i, base + i, classify(b, n, i, end));
            copied = i = end;
            if (rc == 1) {
                goto done;
            }
            if (self->policy == POLICY_REPLACE) {
                o = put_utf8(o, 0xFFFD);
                chars++;
            }
            if (rc < 0) {
                goto done;
            }
        }
        if (i >= n) {
            break;
        }
    }
done:
    if (i > copied) { /* (an empty chunk may come with a null pointer) */
        memcpy(o, b + copied, (size_t)(i - copied));
        o += i - copied;
    }
    self->chars += chars;
    *op = o;
    *stop = i;
    return rc;
}

static int
step(TxObject *self, const unsigned char *b, Py_ssize_t n, long long base, int final,
     unsigned char **op, Py_ssize_t *stop)
{
    if (self->source == ENC_UTF8) {
        switch (self->target) {
        case ENC_UTF8:
            return utf8_repair(self, b, n, base, final, op, stop);
        case ENC_UTF16LE:
            return from_utf8(self, b, n, base, final, op, stop, 2, 0);
        case ENC_UTF16BE:
            return from_utf8(self, b, n, base, final, op, stop, 2, 1);
        case ENC_UTF32LE:
            return from_utf8(self, b, n, base, final, op, stop, 4, 0);
        default:
            return from_utf8(self, b, n, base, final, op, stop, 4, 1);
        }
    }
    switch (self->source) {
    case ENC_UTF16LE:
        return from_utf16(self, b, n, base, final, op, stop, 0);
    case ENC_UTF16BE:
        return from_utf16(self, b, n, base, final, op, stop, 1);
    case ENC_UTF32LE:
        return from_utf32(self, b, n, base, final, op, stop, 0);
    default:
        return from_utf32(self, b, n, base, final, op, stop, 1);
    }
}

/* ---- the object -------------------------------------------------------------------------- */

/* Most output bytes one input byte can give (the held ones count as input). */
static Py_ssize_t
growth(TxObject *self)
{
    switch (self->target) {
    case ENC_UTF16LE:
    case ENC_UTF16BE:
        return 2; /* ASCII; a malformed byte becomes U+FFFD */
    case ENC_UTF32LE:
    case ENC_UTF32BE:
        return 4;
    default:
        return 3; /* a cut UTF-16/32 unit of one byte becomes EF BF BD */
    }
}

/* The rest of the input after a failed unit that ends at ``stop``, an index in
   held + data (the held bytes being ``held[0:nheld]``). */
static int
keep_unread(TxObject *self, const unsigned char *held, Py_ssize_t nheld,
            const unsigned char *data, Py_ssize_t nd, Py_ssize_t stop, int final)
{
    Py_ssize_t from_held = stop < nheld ? nheld - stop : 0;
    Py_ssize_t from_data = stop > nheld ? stop - nheld : 0;
    PyObject *rest = PyBytes_FromStringAndSize(NULL, from_held + nd - from_data);
    if (rest == NULL) {
        return -1;
    }
    if (from_held) {
        memcpy(PyBytes_AS_STRING(rest), held + nheld - from_held, (size_t)from_held);
    }
    memcpy(PyBytes_AS_STRING(rest) + from_held, data + from_data, (size_t)(nd - from_data));
    Py_XSETREF(self->unread, rest);
    self->unread_final = final;
    return 0;
}

/* Below this many input bytes a call keeps the GIL (releasing it costs more). */
#define NOGIL_MIN 16384

/* step(), without the GIL when nothing in it can touch a Python object: no callback
   and not strict, so that tx_unit only counts (``busy`` keeps other threads out). */
static int
step_maybe_nogil(TxObject *self, const unsigned char *b, Py_ssize_t n, long long base,
                 int final, unsigned char **op, Py_ssize_t *stop)
{
    if (n < NOGIL_MIN || self->callback != Py_None || self->policy == POLICY_STRICT) {
        return step(self, b, n, base, final, op, stop);
    }
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = step(self, b, n, base, final, op, stop);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    return rc;
}

/* The calls a transcoder refuses: from its own callback, from another thread while a
   call runs without the GIL, before __init__. */
static int
tx_refused(TxObject *self)
{
    if (self->reporting) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a ByteTranscoder cannot transcode from inside its own callback");
        return 1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the ByteTranscoder is in use by another thread");
        return 1;
    }
    if (self->kinds == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ByteTranscoder: __init__ was not called");
        return 1;
    }
    return 0;
}

/* The most output bytes a call with ``n`` input bytes can give: the output carried from
   a call whose callback raised, then ``growth`` per byte of the held input, the input
   left by a failed unit and ``n``.  -1 (OverflowError) past PY_SSIZE_T_MAX. */
static Py_ssize_t
tx_bound(TxObject *self, Py_ssize_t n)
{
    Py_ssize_t carried = self->carry != NULL ? PyBytes_GET_SIZE(self->carry) : 0;
    Py_ssize_t before = self->nheld + (self->unread != NULL ? PyBytes_GET_SIZE(self->unread) : 0);
    Py_ssize_t grow = growth(self);
    if (n < 0 || n > (PY_SSIZE_T_MAX - carried) / grow - before) {
        PyErr_SetString(PyExc_OverflowError, "ByteTranscoder: the output would be too large");
        return -1;
    }
    return carried + grow * (n + before);
}

/* One call: transcodes d[0:nd) (``final``: the stream ends) into ``start``, which has
   room for tx_bound(self, nd) bytes; *written is the output's length.  Returns 0, 1 (a
   strict failure: the output before the unit is written) or -1 (an exception; when the
   callback raised, the output so far, with the unit's replacement, is written and the
   caller keeps it as ``carry``; *written is -1 for any other error). */
static int
tx_run(TxObject *self, const unsigned char *d, Py_ssize_t nd, int final, unsigned char *start,
       Py_ssize_t *written)
{
    *written = -1;
    Py_XSETREF(self->failure, Py_NewRef(Py_None));
    Py_ssize_t received = nd;
    /* With input left by a failed call, that input goes first (a copy: a rare path). */
    PyObject *joined = NULL;
    if (self->unread != NULL) {
        joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(self->unread) + nd);
        if (joined == NULL) {
            return -1;
        }
        memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(self->unread),
               PyBytes_GET_SIZE(self->unread));
        memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(self->unread), d, nd);
        final = final || self->unread_final;
        Py_CLEAR(self->unread);
        d = (const unsigned char *)PyBytes_AS_STRING(joined);
        nd = PyBytes_GET_SIZE(joined);
    }
    long long base = self->position + received - nd; /* the offset of d[0] */
    self->position += received;

    unsigned char *o = start;
    if (self->carry != NULL) {
        memcpy(o, PyBytes_AS_STRING(self->carry), PyBytes_GET_SIZE(self->carry));
        o += PyBytes_GET_SIZE(self->carry);
        Py_CLEAR(self->carry);
    }

    /* The held bytes and the first bytes of the chunk are decoded in a small buffer of
       their own, so that the chunk is decoded where it lies, not copied behind them. */
    unsigned char held[HELD_MAX];
    Py_ssize_t nheld = self->nheld, stop, skip = 0;
    memcpy(held, self->held, (size_t)nheld);
    self->nheld = 0;
    int rc = 0, whole = 1;
    if (nheld) {
        unsigned char joint[HELD_MAX + JOINT_TAKE];
        Py_ssize_t take = nd < JOINT_TAKE ? nd : JOINT_TAKE;
        memcpy(joint, held, (size_t)nheld);
        memcpy(joint + nheld, d, (size_t)take);
        rc = step(self, joint, nheld + take, base - nheld, final && take == nd, &o, &stop);
        if (rc == 0 && take < nd) {
            /* JOINT_TAKE bytes decide what the held ones are: the rest starts in data. */
            skip = stop - nheld;
            whole = 0;
        }
        else if (rc == 0) {
            memcpy(self->held, joint + stop, (size_t)(nheld + take - stop));
            self->nheld = (int)(nheld + take - stop);
        }
        else if (keep_unread(self, held, nheld, d, nd, stop, final) < 0) {
            rc = -1;
        }
    }
    else {
        whole = 0;
    }
    if (!whole) {
        rc = step_maybe_nogil(self, d + skip, nd - skip, base + skip, final, &o, &stop);
        stop += skip;
        if (rc == 0) {
            memcpy(self->held, d + stop, (size_t)(nd - stop));
            self->nheld = (int)(nd - stop);
        }
        else if (keep_unread(self, NULL, 0, d, nd, stop, final) < 0) {
            rc = -1;
        }
    }
    Py_XDECREF(joined);
    *written = o - start;
    return rc;
}

/* The input of a call: a buffer held until the call ends. */
static int
tx_input(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t final_at, Py_buffer *view,
         int *final)
{
    *final = nargs > final_at ? PyObject_IsTrue(args[final_at]) : 0;
    if (*final < 0) {
        return -1;
    }
    return PyObject_GetBuffer(args[0], view, PyBUF_SIMPLE);
}

/* transcode(data, final=False) -> bytes */
static PyObject *
Tx_transcode(TxObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "transcode(data, final=False)");
        return NULL;
    }
    if (tx_refused(self)) {
        return NULL;
    }
    Py_buffer view;
    int final;
    if (tx_input(args, nargs, 1, &view, &final) < 0) {
        return NULL;
    }
    /* The output is written into a buffer of the worst-case size, kept for the next
       call, and copied into a bytes object of its exact size.  (A bytes object of the
       worst-case size shrunk in place costs more: glibc serves each such allocation
       with a fresh mmap, because the shrunk block it frees is smaller than the next
       request, and the page faults of the fresh memory cost as much as the
       transcoding.  transcode_into, into the caller's reused buffer, avoids both.) */
    Py_ssize_t need = tx_bound(self, view.len);
    if (need < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (need > self->scratch_size) {
        PyMem_RawFree(self->scratch);
        self->scratch = PyMem_RawMalloc((size_t)need + 1);
        self->scratch_size = self->scratch != NULL ? need : 0;
        if (self->scratch == NULL) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
    }
    Py_ssize_t written;
    int rc = tx_run(self, (const unsigned char *)view.buf, view.len, final, self->scratch,
                    &written);
    PyBuffer_Release(&view);
    if (written < 0) {
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)self->scratch, written);
    if (final && rc == 0) {
        /* The stream ended: nothing is kept. */
        PyMem_RawFree(self->scratch);
        self->scratch = NULL;
        self->scratch_size = 0;
    }
    if (rc < 0) {
        /* The callback raised: the output so far comes first in the next call's. */
        Py_XSETREF(self->carry, out);
        return NULL;
    }
    return out;
}

/* transcode_into(data, out, offset=0, final=False) -> int */
static PyObject *
Tx_transcode_into(TxObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "transcode_into(data, out, offset=0, final=False)");
        return NULL;
    }
    if (tx_refused(self)) {
        return NULL;
    }
    Py_ssize_t offset = 0;
    if (nargs > 2) {
        offset = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
        if (offset == -1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    Py_buffer view, outview;
    int final;
    if (tx_input(args, nargs, 3, &view, &final) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &outview, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t need = tx_bound(self, view.len);
    if (need < 0) {
        goto end;
    }
    if (offset < 0 || offset > outview.len || outview.len - offset < need) {
        PyErr_Format(PyExc_ValueError,
                     "ByteTranscoder.transcode_into: %zd bytes of room needed at offset %zd "
                     "of a buffer of %zd",
                     need, offset, outview.len);
        goto end;
    }
    unsigned char *dest = (unsigned char *)outview.buf + offset;
    const unsigned char *src = (const unsigned char *)view.buf;
    PyObject *copy = NULL;
    if (src < dest + need && dest < src + view.len) {
        /* The output would overwrite the input: the input is read from a copy. */
        copy = PyBytes_FromStringAndSize((const char *)src, view.len);
        if (copy == NULL) {
            goto end;
        }
        src = (const unsigned char *)PyBytes_AS_STRING(copy);
    }
    Py_ssize_t written;
    int rc = tx_run(self, src, view.len, final, dest, &written);
    Py_XDECREF(copy);
    if (rc < 0) {
        if (written >= 0) {
            /* The callback raised: the output so far comes first in the next call's. */
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            Py_XSETREF(self->carry, PyBytes_FromStringAndSize((const char *)dest, written));
            if (self->carry == NULL) {
                Py_XDECREF(type);
                Py_XDECREF(value);
                Py_XDECREF(traceback);
                goto end;
            }
            PyErr_Restore(type, value, traceback);
        }
        goto end;
    }
    result = PyLong_FromSsize_t(written);
end:
    PyBuffer_Release(&outview);
    PyBuffer_Release(&view);
    return result;
}

/* bound(n) -> int */
static PyObject *
Tx_bound(TxObject *self, PyObject *arg)
{
    Py_ssize_t n = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "ByteTranscoder.bound: n must not be negative");
        return NULL;
    }
    Py_ssize_t need = tx_bound(self, n);
    return need < 0 ? NULL : PyLong_FromSsize_t(need);
}

static PyObject *
Tx_drain(TxObject *self, PyObject *Py_UNUSED(ignored))
{
    /* The units counted since the last drain, by kind, then the characters written. */
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the ByteTranscoder is in use by another thread");
        return NULL;
    }
    PyObject *t = PyTuple_New(N_KINDS + 1);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i <= N_KINDS; i++) {
        PyObject *n = PyLong_FromLongLong(i < N_KINDS ? self->counts[i] : self->chars);
        if (n == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, n);
    }
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return t;
}

static PyObject *
Tx_get_buffered(TxObject *self, void *Py_UNUSED(closure))
{
    Py_ssize_t n = self->nheld + (self->unread != NULL ? PyBytes_GET_SIZE(self->unread) : 0);
    return PyLong_FromSsize_t(n);
}

static PyObject *
Tx_get_position(TxObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->position);
}

static int
encoding_index(PyObject *name, const char *what)
{
    if (PyUnicode_Check(name)) {
        for (int i = 0; i < ENC_COUNT; i++) {
            if (PyUnicode_CompareWithASCIIString(name, encoding_names[i]) == 0) {
                return i;
            }
        }
    }
    PyErr_Format(PyExc_ValueError, "ByteTranscoder: unsupported %s encoding %R", what, name);
    return -1;
}

static int
Tx_init(TxObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"source", "target", "errors", "callback",
                             "position", "event_type", "kinds", NULL};
    PyObject *source, *target, *callback, *event_type, *kinds;
    const char *errors;
    long long position;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the ByteTranscoder is in use by another thread");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOsOLOO!", kwlist, &source, &target, &errors,
                                     &callback, &position, &event_type, &PyTuple_Type, &kinds)) {
        return -1;
    }
    int s = encoding_index(source, "source"), t = s < 0 ? -1 : encoding_index(target, "target");
    if (t < 0) {
        return -1;
    }
    if (s != ENC_UTF8 && t != ENC_UTF8) {
        PyErr_SetString(PyExc_ValueError, "ByteTranscoder: source or target must be utf-8");
        return -1;
    }
    int policy;
    if (strcmp(errors, "replace") == 0) {
        policy = POLICY_REPLACE;
    }
    else if (strcmp(errors, "ignore") == 0) {
        policy = POLICY_IGNORE;
    }
    else if (strcmp(errors, "strict") == 0) {
        policy = POLICY_STRICT;
    }
    else {
        PyErr_Format(PyExc_ValueError,
                     "ByteTranscoder: errors must be replace, ignore or strict, not '%s'", errors);
        return -1;
    }
    if (callback != Py_None && !PyCallable_Check(callback)) {
        PyErr_SetString(PyExc_TypeError, "ByteTranscoder: the callback must be callable or None");
        return -1;
    }
    if (position < 0) {
        PyErr_SetString(PyExc_ValueError, "ByteTranscoder: position must not be negative");
        return -1;
    }
    if (PyTuple_GET_SIZE(kinds) != N_KINDS || !PyCallable_Check(event_type)) {
        PyErr_SetString(PyExc_TypeError, "ByteTranscoder: the event type and its 7 kinds");
        return -1;
    }
    self->source = s;
    self->target = t;
    self->policy = policy;
    Py_XSETREF(self->callback, Py_NewRef(callback));
    Py_XSETREF(self->event_type, Py_NewRef(event_type));
    Py_XSETREF(self->kinds, Py_NewRef(kinds));
    Py_XSETREF(self->failure, Py_NewRef(Py_None));
    Py_CLEAR(self->unread);
    Py_CLEAR(self->carry);
    self->unread_final = 0;
    self->nheld = 0;
    self->position = position;
    memset(self->counts, 0, sizeof(self->counts));
    self->chars = 0;
    return 0;
}

static int
Tx_traverse(TxObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->callback);
    Py_VISIT(self->event_type);
    Py_VISIT(self->kinds);
    Py_VISIT(self->failure);
    return 0;
}

static int
Tx_clear(TxObject *self)
{
    Py_CLEAR(self->callback);
    Py_CLEAR(self->event_type);
    Py_CLEAR(self->kinds);
    Py_CLEAR(self->failure);
    Py_CLEAR(self->unread);
    Py_CLEAR(self->carry);
    return 0;
}

static void
Tx_dealloc(TxObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Tx_clear(self);
    PyMem_RawFree(self->scratch);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyObject *
Tx_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    TxObject *self = (TxObject *)PyType_GenericNew(type, args, kwds);
    if (self != NULL) {
        self->callback = Py_NewRef(Py_None);
        self->failure = Py_NewRef(Py_None);
#if TX_AVX2
        /* The kernels of the module that made the type: its decoder's choice. */
        PyObject *module = PyType_GetModule(type);
        PyObject *simd = module != NULL ? PyObject_GetAttrString(module, "simd") : NULL;
        self->avx2 = simd != NULL && PyUnicode_Check(simd) &&
                     PyUnicode_CompareWithASCIIString(simd, "avx2") == 0;
        Py_XDECREF(simd);
        PyErr_Clear();
#endif
    }
    return (PyObject *)self;
}

static PyMethodDef Tx_methods[] = {
    {"transcode", (PyCFunction)(void (*)(void))Tx_transcode, METH_FASTCALL,
     "transcode(data, final=False) -> bytes"},
    {"transcode_into", (PyCFunction)(void (*)(void))Tx_transcode_into, METH_FASTCALL,
     "transcode_into(data, out, offset=0, final=False) -> the bytes written at out[offset:]"},
    {"bound", (PyCFunction)Tx_bound, METH_O,
     "bound(n) -> the most bytes the next call with n input bytes can write"},
    {"drain", (PyCFunction)Tx_drain, METH_NOARGS,
     "drain() -> the units counted by kind and the characters written since the last drain"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Tx_members[] = {
    {"failure", T_OBJECT, offsetof(TxObject, failure), READONLY,
     "the Malformed event a strict call stopped at, or None"},
    {"callback", T_OBJECT, offsetof(TxObject, callback), READONLY, "the callback, or None"},
    {"reporting", T_INT, offsetof(TxObject, reporting), READONLY,
     "true while the callback runs"},
    {"_avx2", T_INT, offsetof(TxObject, avx2), READONLY,
     "true when the AVX2 kernels are used (the module's simd is \"avx2\")"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Tx_getset[] = {
    {"buffered", (getter)Tx_get_buffered, NULL, "input bytes held for the next call", NULL},
    {"position", (getter)Tx_get_position, NULL, "absolute offset past the input received",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Tx_slots[] = {
    {Py_tp_doc, "ByteTranscoder(source, target, errors, callback, position, event_type, "
                "kinds): UTF-8 to UTF-16/32 or back, bytes to bytes"},
    {Py_tp_new, Tx_new},
    {Py_tp_init, Tx_init},
    {Py_tp_dealloc, Tx_dealloc},
    {Py_tp_traverse, Tx_traverse},
    {Py_tp_clear, Tx_clear},
    {Py_tp_methods, Tx_methods},
    {Py_tp_members, Tx_members},
    {Py_tp_getset, Tx_getset},
    {0, NULL},
};

static PyType_Spec Tx_spec = {
    .name = "utf8stream._speedups.ByteTranscoder",
    .basicsize = sizeof(TxObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Tx_slots,
};

int
utf8stream_add_byte_transcoder(PyObject *m)
{
#if TX_AVX2
    fill_pack12();
#endif
    PyObject *type = PyType_FromModuleAndSpec(m, &Tx_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    int rc = PyModule_AddType(m, (PyTypeObject *)type);
    Py_DECREF(type);
    return rc;
}

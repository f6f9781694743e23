/* AVX2 kernels for the C decoder (_speedups.c), chosen at run time.

   The extension is built without any -mavx2 flag, so that it loads on every x86-64 (and
   builds on other machines, where HAVE_AVX2 is 0 and none of this exists).  Each kernel
   here is compiled for AVX2 by a function attribute, and called only when the module
   found at initialisation that the CPU (and the OS) supports AVX2 and BMI2
   (simd_level(), kept in the module state).  UTF8STREAM_NO_AVX2=1 in the environment
   makes the module keep to the SSE2 and scalar code, so that both paths can be tested
   on one machine.

   The kernels take only clean stretches: a block that holds anything else (a malformed
   byte, a sequence of another length, the end of the segment) is left to the scalar
   loops of DEFINE_DECODE, which decide every malformed unit (the maximal subparts) as
   before.  So the two paths give the same strings, events and counts by construction;
   tests/test_simd.py checks it at every position of a block.

   Included by _speedups.c after its own helpers (HAVE_SSE2, four_byte_blocks,
   three_byte_blocks, prescan, skip_ascii). */

#ifndef UTF8STREAM_SIMD_H
#define UTF8STREAM_SIMD_H

#include <stdlib.h>

enum { SIMD_NONE, SIMD_SSE2, SIMD_AVX2 };

#if HAVE_SSE2 && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_AVX2 1
#include <immintrin.h>
#define AVX2_FN __attribute__((target("avx2,bmi2")))
#else
#define HAVE_AVX2 0
#endif

/* The kernels to use: SIMD_AVX2 when the CPU has AVX2 and BMI2 and the environment does
   not say UTF8STREAM_NO_AVX2 (any value but "" and "0"), else SSE2 where it is built
   in. */
static int
simd_level(void)
{
#if HAVE_AVX2
    const char *no = getenv("UTF8STREAM_NO_AVX2");
    int refused = no != NULL && no[0] != '\0' && !(no[0] == '0' && no[1] == '\0');
    __builtin_cpu_init();
    if (!refused && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")) {
        return SIMD_AVX2;
    }
#endif
    return HAVE_SSE2 ? SIMD_SSE2 : SIMD_NONE;
}

static const char *
simd_name(int level)
{
    return level == SIMD_AVX2 ? "avx2" : level == SIMD_SSE2 ? "sse2" : "none";
}

#if HAVE_AVX2

#define LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STORE256(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))

/* The first byte of buf[j:e) that is not ASCII, or e: 64 bytes a step, then the last 32
   bytes by one load that ends at e (the bytes before j in it are ASCII already). */
static AVX2_FN Py_ssize_t
skip_ascii_avx2(const unsigned char *buf, Py_ssize_t j, Py_ssize_t e)
{
    const Py_ssize_t start = j;
    while (j + 64 <= e) {
        __m256i v0 = LOAD256(buf + j), v1 = LOAD256(buf + j + 32);
        if (_mm256_movemask_epi8(_mm256_or_si256(v0, v1))) {
            uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(v0) |
                         (uint64_t)(uint32_t)_mm256_movemask_epi8(v1) << 32;
            return j + __builtin_ctzll(m);
        }
        j += 64;
    }
    if (j == e) {
        return e;
    }
    if (e - start < 32) {
        return skip_ascii(buf, j, e);
    }
    if (j + 32 <= e) {
        unsigned int m = (unsigned int)_mm256_movemask_epi8(LOAD256(buf + j));
        if (m) {
            return j + __builtin_ctz(m);
        }
        j += 32;
        if (j == e) {
            return e;
        }
    }
    unsigned int m = (unsigned int)_mm256_movemask_epi8(LOAD256(buf + e - 32));
    return m ? e - 32 + __builtin_ctz(m) : e;
}

/* Copies buf[a:e) to d while it is ASCII, 64 bytes a step; returns where it stopped
   (a multiple of 64 bytes from a, at or before the first byte that is not ASCII). */
static AVX2_FN Py_ssize_t
ascii_copy_avx2(const unsigned char *buf, Py_ssize_t a, Py_ssize_t e, unsigned char *d)
{
    Py_ssize_t a0 = a;
    while (a + 64 <= e) {
        __m256i v0 = LOAD256(buf + a), v1 = LOAD256(buf + a + 32);
        if (_mm256_movemask_epi8(_mm256_or_si256(v0, v1))) {
            break;
        }
        STORE256(d + (a - a0), v0);
        STORE256(d + (a - a0) + 32, v1);
        a += 64;
    }
    return a;
}

/* prescan() with 32-byte loads: the bytes of buf[a:e) that are not continuation bytes,
   and the largest byte.  Segments shorter than 32 bytes go to prescan(). */
static AVX2_FN void
prescan_avx2(const unsigned char *buf, Py_ssize_t a, Py_ssize_t e, Py_ssize_t *leads,
             unsigned int *top)
{
    if (e - a < 32) {
        prescan(buf, a, e, leads, top);
        return;
    }
    Py_ssize_t j = a;
    const __m256i zero = _mm256_setzero_si256();
    const __m256i last_continuation = _mm256_set1_epi8((char)0xBF); /* -65 signed */
    __m256i vmax = zero, total = zero;
    while (j + 32 <= e) {
        /* a byte counter per lane, summed before it can overflow (255 blocks) */
        Py_ssize_t blocks = (e - j) / 32;
        if (blocks > 254) {
            blocks = 254;
        }
        __m256i lanes = zero;
        Py_ssize_t k = 0;
        for (; k + 2 <= blocks; k += 2, j += 64) {
            __m256i v0 = LOAD256(buf + j), v1 = LOAD256(buf + j + 32);
            vmax = _mm256_max_epu8(vmax, _mm256_max_epu8(v0, v1));
            /* signed: 80..BF are -128..-65, every other byte is above */
            lanes = _mm256_sub_epi8(lanes, _mm256_cmpgt_epi8(v0, last_continuation));
            lanes = _mm256_sub_epi8(lanes, _mm256_cmpgt_epi8(v1, last_continuation));
        }
        if (k < blocks) {
            __m256i v = LOAD256(buf + j);
            vmax = _mm256_max_epu8(vmax, v);
            lanes = _mm256_sub_epi8(lanes, _mm256_cmpgt_epi8(v, last_continuation));
            j += 32;
        }
        total = _mm256_add_epi64(total, _mm256_sad_epu8(lanes, zero));
    }
    if (j < e) {
        /* the 32 bytes that end at e, those before j masked off */
        static const unsigned char tail_mask[64] = {
            0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
            0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
            0,    0,    0,    0,    0,    0,    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
        __m256i keep = LOAD256(tail_mask + (e - j));
        __m256i v = _mm256_and_si256(LOAD256(buf + e - 32), keep);
        vmax = _mm256_max_epu8(vmax, v);
        __m256i lanes = _mm256_and_si256(_mm256_cmpgt_epi8(v, last_continuation), keep);
        total = _mm256_add_epi64(total, _mm256_sad_epu8(_mm256_sub_epi8(zero, lanes), zero));
    }
    uint64_t sums[4];
    STORE256(sums, total);
    *leads = (Py_ssize_t)(sums[0] + sums[1] + sums[2] + sums[3]);
    __m128i m = _mm_max_epu8(_mm256_castsi256_si128(vmax), _mm256_extracti128_si256(vmax, 1));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 8));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 4));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 2));
    m = _mm_max_epu8(m, _mm_srli_si128(m, 1));
    *top = (unsigned int)_mm_cvtsi128_si32(m) & 0xFF;
}

/* Eight three-byte characters per step: 12 bytes into each 128-bit lane (two loads),
   one shuffle puts each character's three bytes in a 32-bit lane, checked as
   three_byte_blocks does (no overlong form, no surrogate); stored as UCS-2 (width 2) or
   UCS-4 (width 4).  The last bytes by three_byte_blocks. */
static AVX2_FN Py_ssize_t __attribute__((noinline))
three_byte_blocks_avx2(const unsigned char *p, Py_ssize_t avail, void *out, int width)
{
    Py_ssize_t t = 0, c = 0;
    const __m256i spread = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,
                                            0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
    while (t + 28 <= avail) {
        __m256i v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p + t))),
            _mm_loadu_si128((const __m128i *)(p + t + 12)), 1);
        __m256i x = _mm256_shuffle_epi8(v, spread);
        __m256i cp = _mm256_or_si256(
            _mm256_or_si256(
                _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x0F)), 12),
                _mm256_srli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x3F00)), 2)),
            _mm256_srli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x3F0000)), 16));
        __m256i bits = _mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x00C0C0F0)),
                                          _mm256_set1_epi32(0x008080E0));
        __m256i surrogate =
            _mm256_and_si256(_mm256_cmpgt_epi32(cp, _mm256_set1_epi32(0xD7FF)),
                             _mm256_cmpgt_epi32(_mm256_set1_epi32(0xE000), cp));
        __m256i ok = _mm256_andnot_si256(
            surrogate, _mm256_and_si256(bits, _mm256_cmpgt_epi32(cp, _mm256_set1_epi32(0x7FF))));
        if ((unsigned int)_mm256_movemask_epi8(ok) != 0xFFFFFFFFu) {
            return c; /* (trying the first half again with SSE2 costs CJK text more) */
        }
        if (width == 4) {
            STORE256((Py_UCS4 *)out + c, cp);
        }
        else {
            /* per 128-bit lane: its four characters twice; then the low halves of the
               two lanes side by side */
            __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(cp, cp), 0x08);
            _mm_storeu_si128((__m128i *)(void *)((Py_UCS2 *)out + c),
                             _mm256_castsi256_si128(packed));
        }
        c += 8;
        t += 24;
    }
    return c + three_byte_blocks(p + t, avail - t, (char *)out + c * width, width);
}

/* DEFINE_DECODE's ASCII block, 32 bytes: copied (widened) to o whatever they are, count
   set to the ASCII bytes at their head (32: all).  The room for 32 characters is
   checked by the caller. */
#define ASCII_BLOCK32_UCS1(o, p, count)                                                \
    do {                                                                               \
        __m256i v_ = LOAD256(p);                                                       \
        STORE256(o, v_);                                                               \
        unsigned int m_ = (unsigned int)_mm256_movemask_epi8(v_);                      \
        (count) = m_ ? __builtin_ctz(m_) : 32;                                         \
    } while (0)
#define ASCII_BLOCK32_UCS2(o, p, count)                                                \
    do {                                                                               \
        __m256i v_ = LOAD256(p);                                                       \
        STORE256(o, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v_)));                 \
        STORE256((o) + 16, _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v_, 1)));     \
        unsigned int m_ = (unsigned int)_mm256_movemask_epi8(v_);                      \
        (count) = m_ ? __builtin_ctz(m_) : 32;                                         \
    } while (0)
#define ASCII_BLOCK32_UCS4(o, p, count)                                                \
    do {                                                                               \
        __m256i v_ = LOAD256(p);                                                       \
        __m128i l_ = _mm256_castsi256_si128(v_), h_ = _mm256_extracti128_si256(v_, 1); \
        STORE256(o, _mm256_cvtepu8_epi32(l_));                                         \
        STORE256((o) + 8, _mm256_cvtepu8_epi32(_mm_srli_si128(l_, 8)));                \
        STORE256((o) + 16, _mm256_cvtepu8_epi32(h_));                                  \
        STORE256((o) + 24, _mm256_cvtepu8_epi32(_mm_srli_si128(h_, 8)));               \
        unsigned int m_ = (unsigned int)_mm256_movemask_epi8(v_);                      \
        (count) = m_ ? __builtin_ctz(m_) : 32;                                         \
    } while (0)

#endif /* HAVE_AVX2 */
#endif /* UTF8STREAM_SIMD_H */

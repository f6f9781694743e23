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
#include <cpuid.h>
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

/* Whether the CPU has PREFETCHW (CPUID 80000001H, ECX bit 8; Intel since Broadwell, AMD
   since long before AVX2). */
static int
has_prefetchw(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx)) {
        return 0;
    }
    return (ecx >> 8) & 1;
}

/* How far ahead ascii_copy_avx2 asks for the lines it is about to write. */
#define ASCII_COPY_AHEAD 4096

/* Copies buf[a:e) to d while it is ASCII, 64 bytes a step; returns where it stopped
   (a multiple of 64 bytes from a, at or before the first byte that is not ASCII).
   The string being filled is usually memory that is not in cache (a 64 KiB chunk's
   string, where the strings before it were kept): each store would wait for its line
   to be read in before it can be written.  Asking for each line 4 KiB ahead
   (PREFETCHW where the CPU has it, which fetches the line for writing; else an
   ordinary prefetch) overlaps those reads instead; the lines stay in cache for
   whoever reads the string next (unlike non-temporal stores).  Only lines of the
   string are asked for: the last 4 KiB are copied without. */
static __attribute__((target("avx2,bmi2,prfchw"))) Py_ssize_t
ascii_copy_avx2(const unsigned char *buf, Py_ssize_t a, Py_ssize_t e, unsigned char *d,
                int prefetchw)
{
    Py_ssize_t a0 = a;
    while (a + 64 + ASCII_COPY_AHEAD <= e) {
        __m256i v0 = LOAD256(buf + a), v1 = LOAD256(buf + a + 32);
        if (_mm256_movemask_epi8(_mm256_or_si256(v0, v1))) {
            return a;
        }
        if (prefetchw) {
            __builtin_prefetch(d + (a - a0) + ASCII_COPY_AHEAD, 1, 3);
        }
        else {
            _mm_prefetch((const char *)(d + (a - a0) + ASCII_COPY_AHEAD), _MM_HINT_T0);
        }
        STORE256(d + (a - a0), v0);
        STORE256(d + (a - a0) + 32, v1);
        a += 64;
    }
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

/* For each 8-bit mask, the lanes of its set bits, lowest first, one lane number a byte;
   the rest repeat the last one (a mask without a bit: all 0).  The permutation that packs
   the chosen 32-bit lanes of a vector at its head. */
static const uint64_t pack_lanes[256] = {
    0x0000000000000000ULL, 0x0000000000000000ULL, 0x0101010101010101ULL, 0x0101010101010100ULL,
    0x0202020202020202ULL, 0x0202020202020200ULL, 0x0202020202020201ULL, 0x0202020202020100ULL,
    0x0303030303030303ULL, 0x0303030303030300ULL, 0x0303030303030301ULL, 0x0303030303030100ULL,
    0x0303030303030302ULL, 0x0303030303030200ULL, 0x0303030303030201ULL, 0x0303030303020100ULL,
    0x0404040404040404ULL, 0x0404040404040400ULL, 0x0404040404040401ULL, 0x0404040404040100ULL,
    0x0404040404040402ULL, 0x0404040404040200ULL, 0x0404040404040201ULL, 0x0404040404020100ULL,
    0x0404040404040403ULL, 0x0404040404040300ULL, 0x0404040404040301ULL, 0x0404040404030100ULL,
    0x0404040404040302ULL, 0x0404040404030200ULL, 0x0404040404030201ULL, 0x0404040403020100ULL,
    0x0505050505050505ULL, 0x0505050505050500ULL, 0x0505050505050501ULL, 0x0505050505050100ULL,
    0x0505050505050502ULL, 0x0505050505050200ULL, 0x0505050505050201ULL, 0x0505050505020100ULL,
    0x0505050505050503ULL, 0x0505050505050300ULL, 0x0505050505050301ULL, 0x0505050505030100ULL,
    0x0505050505050302ULL, 0x0505050505030200ULL, 0x0505050505030201ULL, 0x0505050503020100ULL,
    0x0505050505050504ULL, 0x0505050505050400ULL, 0x0505050505050401ULL, 0x0505050505040100ULL,
    0x0505050505050402ULL, 0x0505050505040200ULL, 0x0505050505040201ULL, 0x0505050504020100ULL,
    0x0505050505050403ULL, 0x0505050505040300ULL, 0x0505050505040301ULL, 0x0505050504030100ULL,
    0x0505050505040302ULL, 0x0505050504030200ULL, 0x0505050504030201ULL, 0x0505050403020100ULL,
    0x0606060606060606ULL, 0x0606060606060600ULL, 0x0606060606060601ULL, 0x0606060606060100ULL,
    0x0606060606060602ULL, 0x0606060606060200ULL, 0x0606060606060201ULL, 0x0606060606020100ULL,
    0x0606060606060603ULL, 0x0606060606060300ULL, 0x0606060606060301ULL, 0x0606060606030100ULL,
    0x0606060606060302ULL, 0x0606060606030200ULL, 0x0606060606030201ULL, 0x0606060603020100ULL,
    0x0606060606060604ULL, 0x0606060606060400ULL, 0x0606060606060401ULL, 0x0606060606040100ULL,
    0x0606060606060402ULL, 0x0606060606040200ULL, 0x0606060606040201ULL, 0x0606060604020100ULL,
    0x0606060606060403ULL, 0x0606060606040300ULL, 0x0606060606040301ULL, 0x0606060604030100ULL,
    0x0606060606040302ULL, 0x0606060604030200ULL, 0x0606060604030201ULL, 0x0606060403020100ULL,
    0x0606060606060605ULL, 0x0606060606060500ULL, 0x0606060606060501ULL, 0x0606060606050100ULL,
    0x0606060606060502ULL, 0x0606060606050200ULL, 0x0606060606050201ULL, 0x0606060605020100ULL,
    0x0606060606060503ULL, 0x0606060606050300ULL, 0x0606060606050301ULL, 0x0606060605030100ULL,
    0x0606060606050302ULL, 0x0606060605030200ULL, 0x0606060605030201ULL, 0x0606060503020100ULL,
    0x0606060606060504ULL, 0x0606060606050400ULL, 0x0606060606050401ULL, 0x0606060605040100ULL,
    0x0606060606050402ULL, 0x0606060605040200ULL, 0x0606060605040201ULL, 0x0606060504020100ULL,
    0x0606060606050403ULL, 0x0606060605040300ULL, 0x0606060605040301ULL, 0x0606060504030100ULL,
    0x0606060605040302ULL, 0x0606060504030200ULL, 0x0606060504030201ULL, 0x0606050403020100ULL,
    0x0707070707070707ULL, 0x0707070707070700ULL, 0x0707070707070701ULL, 0x0707070707070100ULL,
    0x0707070707070702ULL, 0x0707070707070200ULL, 0x0707070707070201ULL, 0x0707070707020100ULL,
    0x0707070707070703ULL, 0x0707070707070300ULL, 0x0707070707070301ULL, 0x0707070707030100ULL,
    0x0707070707070302ULL, 0x0707070707030200ULL, 0x0707070707030201ULL, 0x0707070703020100ULL,
    0x0707070707070704ULL, 0x0707070707070400ULL, 0x0707070707070401ULL, 0x0707070707040100ULL,
    0x0707070707070402ULL, 0x0707070707040200ULL, 0x0707070707040201ULL, 0x0707070704020100ULL,
    0x0707070707070403ULL, 0x0707070707040300ULL, 0x0707070707040301ULL, 0x0707070704030100ULL,
    0x0707070707040302ULL, 0x0707070704030200ULL, 0x0707070704030201ULL, 0x0707070403020100ULL,
    0x0707070707070705ULL, 0x0707070707070500ULL, 0x0707070707070501ULL, 0x0707070707050100ULL,
    0x0707070707070502ULL, 0x0707070707050200ULL, 0x0707070707050201ULL, 0x0707070705020100ULL,
    0x0707070707070503ULL, 0x0707070707050300ULL, 0x0707070707050301ULL, 0x0707070705030100ULL,
    0x0707070707050302ULL, 0x0707070705030200ULL, 0x0707070705030201ULL, 0x0707070503020100ULL,
    0x0707070707070504ULL, 0x0707070707050400ULL, 0x0707070707050401ULL, 0x0707070705040100ULL,
    0x0707070707050402ULL, 0x0707070705040200ULL, 0x0707070705040201ULL, 0x0707070504020100ULL,
    0x0707070707050403ULL, 0x0707070705040300ULL, 0x0707070705040301ULL, 0x0707070504030100ULL,
    0x0707070705040302ULL, 0x0707070504030200ULL, 0x0707070504030201ULL, 0x0707050403020100ULL,
    0x0707070707070706ULL, 0x0707070707070600ULL, 0x0707070707070601ULL, 0x0707070707060100ULL,
    0x0707070707070602ULL, 0x0707070707060200ULL, 0x0707070707060201ULL, 0x0707070706020100ULL,
    0x0707070707070603ULL, 0x0707070707060300ULL, 0x0707070707060301ULL, 0x0707070706030100ULL,
    0x0707070707060302ULL, 0x0707070706030200ULL, 0x0707070706030201ULL, 0x0707070603020100ULL,
    0x0707070707070604ULL, 0x0707070707060400ULL, 0x0707070707060401ULL, 0x0707070706040100ULL,
    0x0707070707060402ULL, 0x0707070706040200ULL, 0x0707070706040201ULL, 0x0707070604020100ULL,
    0x0707070707060403ULL, 0x0707070706040300ULL, 0x0707070706040301ULL, 0x0707070604030100ULL,
    0x0707070706040302ULL, 0x0707070604030200ULL, 0x0707070604030201ULL, 0x0707060403020100ULL,
    0x0707070707070605ULL, 0x0707070707060500ULL, 0x0707070707060501ULL, 0x0707070706050100ULL,
    0x0707070707060502ULL, 0x0707070706050200ULL, 0x0707070706050201ULL, 0x0707070605020100ULL,
    0x0707070707060503ULL, 0x0707070706050300ULL, 0x0707070706050301ULL, 0x0707070605030100ULL,
    0x0707070706050302ULL, 0x0707070605030200ULL, 0x0707070605030201ULL, 0x0707060503020100ULL,
    0x0707070707060504ULL, 0x0707070706050400ULL, 0x0707070706050401ULL, 0x0707070605040100ULL,
    0x0707070706050402ULL, 0x0707070605040200ULL, 0x0707070605040201ULL, 0x0707060504020100ULL,
    0x0707070706050403ULL, 0x0707070605040300ULL, 0x0707070605040301ULL, 0x0707060504030100ULL,
    0x0707070605040302ULL, 0x0707060504030200ULL, 0x0707060504030201ULL, 0x0706050403020100ULL,
};

/* Eight positions of mixed_blocks_avx2: w holds, in each 32-bit lane, the payload bits
   of the four bytes from one position of the block (a lead's bits below its length
   marker, a continuation byte's six, an ASCII byte's seven), and shift in that lane how
   far the lane's first byte says to shift: 18 for ASCII, 12, 6, 0 for a lead of two,
   three, four bytes.  Returns the character of the sequence that starts there (the
   caller has checked the block: every sequence that starts in it is well-formed, so a
   lane where one starts is exact, and the bytes after the sequence's end are shifted
   out; the other lanes, continuation bytes, get a value without meaning, which the
   caller drops): lead << 18 | c1 << 12 | c2 << 6 | c3 (maddubs, madd), shifted. */
static AVX2_FN inline __m256i
mixed_lanes_avx2(__m256i w, __m256i shift)
{
    /* lead << 6 | c1 and c2 << 6 | c3 in 16-bit halves, then the two joined; bytes 1-3
       keep six bits (an ASCII byte after the sequence has seven, and its seventh would
       reach the lowest bit of the character) */
    w = _mm256_and_si256(w, _mm256_set1_epi32(0x3F3F3F7F));
    __m256i all = _mm256_madd_epi16(_mm256_maddubs_epi16(w, _mm256_set1_epi32(0x01400140)),
                                    _mm256_set1_epi32(0x00011000));
    return _mm256_srlv_epi32(all, shift);
}

/* The pairs of a lead and the byte after it that make a well-formed-looking sequence
   malformed (Unicode Table 3-7's narrower second-byte ranges), found by three lookups
   per byte as in Keiser and Lemire's validation ("Validating UTF-8 in less than one
   instruction per byte", 2021): by the previous byte's high and low nibbles and this
   byte's high nibble, a bit per kind, set in all three only where the pair is one of
   that kind.  The lengths (a lead followed by exactly the continuation bytes it asks
   for) are the caller's masks' business. */
enum {
    PAIR_OVERLONG_2 = 1,   /* C0 or C1, then 80..BF */
    PAIR_OVERLONG_3 = 2,   /* E0, then 80..9F */
    PAIR_SURROGATE = 4,    /* ED, then A0..BF */
    PAIR_OVERLONG_4 = 8,   /* F0, then 80..8F */
    PAIR_TOO_LARGE = 16,   /* F4, then 90..BF */
    PAIR_TOO_LARGE_5 = 32, /* F5..FF, then 80..BF */
};

/* Whether a pair of those kinds ends at any byte of v (32 bytes, their high nibbles in
   high; the byte before the first is taken as 00, which starts no pair). */
static AVX2_FN inline int
bad_pairs_avx2(__m256i v, __m256i high)
{
    enum {
        O2 = PAIR_OVERLONG_2,
        O3 = PAIR_OVERLONG_3,
        SU = PAIR_SURROGATE,
        O4 = PAIR_OVERLONG_4,
        TL = PAIR_TOO_LARGE,
        T5 = PAIR_TOO_LARGE_5,
    };
    const __m256i by_lead_high = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, O2, 0, O3 | SU, O4 | TL | T5,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, O2, 0, O3 | SU, O4 | TL | T5);
    const __m256i by_lead_low = _mm256_setr_epi8(
        O2 | O3 | O4, O2, 0, 0, TL, T5, T5, T5, T5, T5, T5, T5, T5, SU | T5, T5, T5,
        O2 | O3 | O4, O2, 0, 0, TL, T5, T5, T5, T5, T5, T5, T5, T5, SU | T5, T5, T5);
    const __m256i by_next_high = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, O2 | O3 | O4 | T5, O2 | O3 | TL | T5, O2 | SU | TL | T5,
        O2 | SU | TL | T5, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, O2 | O3 | O4 | T5, O2 | O3 | TL | T5, O2 | SU | TL | T5,
        O2 | SU | TL | T5, 0, 0, 0, 0);
    const __m256i low_nibble = _mm256_set1_epi8(0x0F);
    /* the bytes one place later: the first from the zero half */
    __m256i prev = _mm256_alignr_epi8(v, _mm256_permute2x128_si256(v, v, 0x08), 15);
    __m256i err = _mm256_and_si256(
        _mm256_and_si256(
            _mm256_shuffle_epi8(by_lead_high,
                                _mm256_and_si256(_mm256_srli_epi16(prev, 4), low_nibble)),
            _mm256_shuffle_epi8(by_lead_low, _mm256_and_si256(prev, low_nibble))),
        _mm256_shuffle_epi8(by_next_high, high));
    return !_mm256_testz_si256(err, err);
}

/* UCS-4 strings of mixed text (ASCII among two-, three- and four-byte characters in any
   order: web pages, emoji among words, emoji sequences with joiners), 32 positions a
   step with no branch on what they hold: each 32-bit lane decodes the sequence that
   would start at its position (mixed_lanes_avx2, four times eight lanes), and the lanes
   where one does start are packed into out (pack_lanes).  The block is checked first:
   by bit masks of its bytes' classes (ASCII, continuation, leads of each length), every
   continuation byte in it must be one that a lead asks for and every one asked for must
   be there, so each sequence that starts in the block is whole (the last one may run
   past it: it is left to the next step, which starts at its lead); and no lead with the
   byte after it may be an overlong form, a surrogate or beyond U+10FFFF
   (bad_pairs_avx2).  Two kinds of block take a shorter way: four four-byte characters
   (a run of emoji) and 16 ASCII bytes (markup).  A block with anything else (a
   malformed unit) stops the kernel in front of it, for the scalar loops to decide; so
   do the end (32 bytes readable) and the room (32 characters: the stores write whole
   vectors).  buf[*jp:e) in, *jp moved past what was decoded, the characters written to
   out returned, their OR (less the ASCII blocks') added to *acc. */
static AVX2_FN Py_ssize_t __attribute__((noinline))
mixed_blocks_avx2(const unsigned char *buf, Py_ssize_t *jp, Py_ssize_t e, Py_UCS4 *out,
                  Py_ssize_t room, Py_UCS4 *acc)
{
    Py_ssize_t j = *jp, c = 0;
    /* the four bytes from each of the positions 0..7 of a 16-byte load, in its copy in
       both 128-bit halves */
    const __m256i spread = _mm256_setr_epi8(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6,
                                            4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10);
    /* by high nibble: the payload bits of a byte, and the right shift of a lane that
       starts with it (a continuation byte's lane is dropped: any) */
    const __m256i bits_mask = _mm256_setr_epi8(
        0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x3F, 0x3F, 0x3F, 0x3F, 0x1F, 0x1F, 0x0F,
        0x07, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x3F, 0x3F, 0x3F, 0x3F, 0x1F, 0x1F,
        0x0F, 0x07);
    const __m256i right_shift = _mm256_setr_epi8(18, 18, 18, 18, 18, 18, 18, 18, 0, 0, 0, 0, 12,
                                                 12, 6, 0, 18, 18, 18, 18, 18, 18, 18, 18, 0, 0,
                                                 0, 0, 12, 12, 6, 0);
    __m256i seen = _mm256_setzero_si256();
    Py_UCS4 four = 0;
    while (j + 32 <= e && room - c >= 32) {
        const unsigned char *p = buf + j;
        __m256i v = LOAD256(p);
        {
            /* four four-byte characters (a run of emoji): as four_byte_blocks does */
            __m128i x = _mm256_castsi256_si128(v);
            __m128i bits = _mm_cmpeq_epi32(_mm_and_si128(x, _mm_set1_epi32((int)0xC0C0C0F8u)),
                                           _mm_set1_epi32((int)0x808080F0u));
            if (_mm_movemask_epi8(bits) == 0xFFFF) {
                __m128i cp = _mm_or_si128(
                    _mm_or_si128(_mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(0x07)), 18),
                                 _mm_slli_epi32(_mm_and_si128(x, _mm_set1_epi32(0x3F00)), 4)),
                    _mm_or_si128(_mm_and_si128(_mm_srli_epi32(x, 10), _mm_set1_epi32(0xFC0)),
                                 _mm_and_si128(_mm_srli_epi32(x, 24), _mm_set1_epi32(0x3F))));
                __m128i out_of_range =
                    _mm_or_si128(_mm_cmplt_epi32(cp, _mm_set1_epi32(0x10000)),
                                 _mm_cmpgt_epi32(cp, _mm_set1_epi32(0x10FFFF)));
                if (_mm_movemask_epi8(out_of_range)) {
                    break;
                }
                _mm_storeu_si128((__m128i *)(void *)(out + c), cp);
                four = 0x10000;
                c += 4;
                j += 16;
                continue;
            }
        }
        /* bit k: byte k's bits 7, 6, 5, 4 */
        uint32_t b7 = (uint32_t)_mm256_movemask_epi8(v);
        if (!(b7 & 0xFFFFu)) {
            /* 16 ASCII bytes (markup, words): widened as they are, and so are the 32-byte
               blocks of ASCII after them */
            __m128i a = _mm256_castsi256_si128(v);
            STORE256(out + c, _mm256_cvtepu8_epi32(a));
            STORE256(out + c + 8, _mm256_cvtepu8_epi32(_mm_srli_si128(a, 8)));
            c += 16;
            j += 16;
            while (j + 32 <= e && room - c >= 32) {
                __m256i w = LOAD256(buf + j);
                if (_mm256_movemask_epi8(w)) {
                    break;
                }
                __m128i l = _mm256_castsi256_si128(w), h = _mm256_extracti128_si256(w, 1);
                STORE256(out + c, _mm256_cvtepu8_epi32(l));
                STORE256(out + c + 8, _mm256_cvtepu8_epi32(_mm_srli_si128(l, 8)));
                STORE256(out + c + 16, _mm256_cvtepu8_epi32(h));
                STORE256(out + c + 24, _mm256_cvtepu8_epi32(_mm_srli_si128(h, 8)));
                c += 32;
                j += 32;
            }
            continue;
        }
        __m256i v2 = _mm256_add_epi8(v, v), v4 = _mm256_add_epi8(v2, v2);
        __m256i v8 = _mm256_add_epi8(v4, v4);
        uint32_t b6 = (uint32_t)_mm256_movemask_epi8(v2);
        uint32_t b5 = (uint32_t)_mm256_movemask_epi8(v4);
        uint32_t b4 = (uint32_t)_mm256_movemask_epi8(v8);
        uint32_t cont = b7 & ~b6;
        uint32_t lead = b7 & b6, l3 = lead & b5, l4 = l3 & b4;
        /* the continuation bytes the leads ask for, up to 3 past the block */
        uint64_t need = (uint64_t)lead << 1 | (uint64_t)l3 << 2 | (uint64_t)l4 << 3;
        __m256i high = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
        if (((uint32_t)need ^ cont) | bad_pairs_avx2(v, high)) {
            break;
        }
        /* the sequence that runs past the block (its lead the last byte that is not a
           continuation byte) is the next step's */
        uint32_t starts = ~cont;
        int last = 31 - __builtin_clz(starts);
        int past = (need >> 32) != 0;
        starts &= ~((uint32_t)past << last);
        Py_ssize_t step = past ? last : 32;
        /* each byte's payload bits and the shift its class asks for (by high nibble: 0-7
           ASCII, 8-B continuation, C-D, E, F leads), made once for the 32 bytes; the
           windows of the four groups of eight positions are cut from them */
        __m256i payload = _mm256_and_si256(v, _mm256_shuffle_epi8(bits_mask, high));
        __m256i shifts = _mm256_shuffle_epi8(right_shift, high);
        __m256i lo = _mm256_permute4x64_epi64(payload, 0x44);
        __m256i hi = _mm256_permute4x64_epi64(payload, 0xEE);
        __m128i s_lo = _mm256_castsi256_si128(shifts), s_hi = _mm256_extracti128_si256(shifts, 1);
        /* (the last group's window runs past the block: its bytes from there are no
           sequence's that is decoded in this step) */
        __m256i cp0 = mixed_lanes_avx2(_mm256_shuffle_epi8(lo, spread), _mm256_cvtepu8_epi32(s_lo));
        __m256i cp1 = mixed_lanes_avx2(_mm256_shuffle_epi8(_mm256_alignr_epi8(hi, lo, 8), spread),
                                       _mm256_cvtepu8_epi32(_mm_srli_si128(s_lo, 8)));
        __m256i cp2 = mixed_lanes_avx2(_mm256_shuffle_epi8(hi, spread), _mm256_cvtepu8_epi32(s_hi));
        __m256i cp3 = mixed_lanes_avx2(_mm256_shuffle_epi8(_mm256_alignr_epi8(hi, hi, 8), spread),
                                       _mm256_cvtepu8_epi32(_mm_srli_si128(s_hi, 8)));
        unsigned int s0 = starts & 0xFF, s1 = (starts >> 8) & 0xFF, s2 = (starts >> 16) & 0xFF,
                     s3 = starts >> 24;
        /* (no group of eight is without a start: at most three continuation bytes follow
           one, and the last group keeps its first five positions) */
        cp0 = _mm256_permutevar8x32_epi32(
            cp0, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&pack_lanes[s0])));
        cp1 = _mm256_permutevar8x32_epi32(
            cp1, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&pack_lanes[s1])));
        cp2 = _mm256_permutevar8x32_epi32(
            cp2, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&pack_lanes[s2])));
        cp3 = _mm256_permutevar8x32_epi32(
            cp3, _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&pack_lanes[s3])));
        seen = _mm256_or_si256(seen, _mm256_or_si256(_mm256_or_si256(cp0, cp1),
                                                     _mm256_or_si256(cp2, cp3)));
        Py_ssize_t n0 = __builtin_popcount(s0), n1 = __builtin_popcount(s1);
        Py_ssize_t n2 = __builtin_popcount(s2), n3 = __builtin_popcount(s3);
        STORE256(out + c, cp0);
        STORE256(out + c + n0, cp1);
        STORE256(out + c + n0 + n1, cp2);
        STORE256(out + c + n0 + n1 + n2, cp3);
        c += n0 + n1 + n2 + n3;
        j += step;
    }
    __m128i m = _mm_or_si128(_mm256_castsi256_si128(seen), _mm256_extracti128_si256(seen, 1));
    m = _mm_or_si128(m, _mm_srli_si128(m, 8));
    m = _mm_or_si128(m, _mm_srli_si128(m, 4));
    *acc |= (Py_UCS4)_mm_cvtsi128_si32(m) | four;
    *jp = j;
    return c;
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

/* The byte transcoder's AVX2 kernels (chosen at run time).  Part of the _transcode.c
   translation unit. */

/* ---- AVX2 kernels ------------------------------------------------------------------------ */

#if TX_AVX2

#define TX_LOAD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))

/* For eight UTF-16 code units below U+0800, each held in 16 bits as its UTF-8 bytes
   (an ASCII unit as itself, a two-byte one as 110xxxxx in the high byte and 10xxxxxx in
   the low one): by the mask of the ASCII units, the shuffle that packs their UTF-8 bytes
   in order, and how many there are.  Filled when the type is made. */
static struct {
    unsigned char shuffle[16];
    unsigned char length;
} pack12[256];

/* For four code units below U+10000 (no surrogate), each held in 32 bits as the bytes
   [ASCII byte or unused, last byte, lead of three, lead of two or middle of three]: by
   two bits per unit (bit 0 set: ASCII; bit 1 set: one or two bytes), the shuffle that
   packs their UTF-8 bytes in order, and how many there are. */
static struct {
    unsigned char shuffle[16];
    unsigned char length;
} pack123[256];

static void
fill_pack12(void)
{
    for (int mask = 0; mask < 256; mask++) {
        int k = 0;
        for (int unit = 0; unit < 4; unit++) {
            int bits = mask >> (2 * unit) & 3;
            if (bits & 1) {
                pack123[mask].shuffle[k++] = (unsigned char)(4 * unit);
            }
            else if (bits & 2) {
                pack123[mask].shuffle[k++] = (unsigned char)(4 * unit + 3);
                pack123[mask].shuffle[k++] = (unsigned char)(4 * unit + 1);
            }
            else {
                pack123[mask].shuffle[k++] = (unsigned char)(4 * unit + 2);
                pack123[mask].shuffle[k++] = (unsigned char)(4 * unit + 3);
                pack123[mask].shuffle[k++] = (unsigned char)(4 * unit + 1);
            }
        }
        pack123[mask].length = (unsigned char)k;
        while (k < 16) {
            pack123[mask].shuffle[k++] = 0x80;
        }
    }
    for (int mask = 0; mask < 256; mask++) {
        int k = 0;
        for (int unit = 0; unit < 8; unit++) {
            if (!(mask >> unit & 1)) {
                pack12[mask].shuffle[k++] = (unsigned char)(2 * unit + 1);
            }
            pack12[mask].shuffle[k++] = (unsigned char)(2 * unit);
        }
        pack12[mask].length = (unsigned char)k;
        while (k < 16) {
            pack12[mask].shuffle[k++] = 0x80; /* a zero byte, overwritten next */
        }
    }
}

/* UTF-16 (``big``: big-endian) to UTF-8, 16 code units a step while none of them is a
   surrogate (nothing for the scalar loop to decide): all ASCII, packed; all below
   U+0800, two shuffles; else each unit spread over 32 bits and four shuffles (the
   method of simdutf's SSE UTF-16 to UTF-8 conversion).  Returns the input bytes taken,
   a multiple of 32.  Each step stores up to 52 bytes at o whatever it writes (16 units
   give at most 48): the caller's buffer has room for 3 bytes per input byte. */
static TX_AVX2_FN Py_ssize_t
utf16_blocks_avx2(const unsigned char *b, Py_ssize_t n, unsigned char **op, long long *chars,
                  int big)
{
    unsigned char *o = *op;
    Py_ssize_t i = 0;
    const __m256i swap = _mm256_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14,
                                          1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    const __m256i not_ascii = _mm256_set1_epi16((short)0xFF80);
    const __m256i not_two = _mm256_set1_epi16((short)0xF800);
    while (i + 32 <= n) {
        __m256i v = TX_LOAD256(b + i);
        if (big) {
            v = _mm256_shuffle_epi8(v, swap);
        }
        if (_mm256_testz_si256(v, not_ascii)) {
            /* per 128-bit lane: its eight bytes twice; the low halves side by side */
            __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(v, v), 0x08);
            _mm_storeu_si128((__m128i *)(void *)o, _mm256_castsi256_si128(packed));
            o += 16;
            i += 32;
            continue;
        }
        if (!_mm256_testz_si256(v, not_two)) {
            /* Units of three UTF-8 bytes; a surrogate is the scalar loop's. */
            __m256i top = _mm256_and_si256(v, not_two);
            if (!_mm256_testz_si256(_mm256_cmpeq_epi16(top, _mm256_set1_epi16((short)0xD800)),
                                    _mm256_cmpeq_epi16(top, top))) {
                break;
            }
            /* [0bcccccc or ASCII, 10cccccc] and [1110aaaa, 110bbbbb or 10bbbbbb] */
            const __m256i dup_even = _mm256_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10,
                                                      12, 12, 14, 14, 0, 0, 2, 2, 4, 4, 6, 6,
                                                      8, 8, 10, 10, 12, 12, 14, 14);
            __m256i last = _mm256_or_si256(
                _mm256_and_si256(_mm256_shuffle_epi8(v, dup_even), _mm256_set1_epi16(0x3F7F)),
                _mm256_set1_epi16((short)0x8000));
            __m256i ascii = _mm256_cmpeq_epi16(_mm256_and_si256(v, not_ascii), _mm256_setzero_si256());
            __m256i upto2 = _mm256_cmpeq_epi16(_mm256_and_si256(v, not_two), _mm256_setzero_si256());
            __m256i lead = _mm256_maddubs_epi16(
                _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi16(0x0FFC)),
                _mm256_set1_epi16(0x0140));
            lead = _mm256_xor_si256(
                _mm256_or_si256(lead, _mm256_set1_epi16((short)0xC0E0)),
                _mm256_andnot_si256(upto2, _mm256_set1_epi16(0x4000)));
            /* per 128-bit lane: units 0-3 (8-11) and 4-7 (12-15) */
            __m256i lo = _mm256_unpacklo_epi16(last, lead), hi = _mm256_unpackhi_epi16(last, lead);
            unsigned int mask =
                ((unsigned int)_mm256_movemask_epi8(ascii) & 0x55555555u) |
                ((unsigned int)_mm256_movemask_epi8(upto2) & 0xAAAAAAAAu);
            __m128i parts[4] = {_mm256_castsi256_si128(lo), _mm256_castsi256_si128(hi),
                                _mm256_extracti128_si256(lo, 1), _mm256_extracti128_si256(hi, 1)};
            for (int q = 0; q < 4; q++) {
                unsigned int m = mask >> (8 * q) & 0xFF;
                __m128i sh = _mm_loadu_si128((const __m128i *)(const void *)pack123[m].shuffle);
                _mm_storeu_si128((__m128i *)(void *)o, _mm_shuffle_epi8(parts[q], sh));
                o += pack123[m].length;
            }
            i += 32;
            continue;
        }
        /* 110aaaaa 10bbbbbb in each unit, or the unit itself where it is ASCII */
        __m256i two = _mm256_or_si256(
            _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(v, 2), _mm256_set1_epi16(0x1F00)),
                            _mm256_and_si256(v, _mm256_set1_epi16(0x003F))),
            _mm256_set1_epi16((short)0xC080));
        __m256i ascii = _mm256_cmpeq_epi16(_mm256_and_si256(v, not_ascii), _mm256_setzero_si256());
        __m256i bytes = _mm256_blendv_epi8(two, v, ascii);
        unsigned int mask = (unsigned int)_mm256_movemask_epi8(_mm256_packs_epi16(ascii, ascii));
        unsigned int m0 = mask & 0xFF, m1 = (mask >> 16) & 0xFF;
        __m128i s0 = _mm_loadu_si128((const __m128i *)(const void *)pack12[m0].shuffle);
        __m128i s1 = _mm_loadu_si128((const __m128i *)(const void *)pack12[m1].shuffle);
        _mm_storeu_si128((__m128i *)(void *)o,
                         _mm_shuffle_epi8(_mm256_castsi256_si128(bytes), s0));
        o += pack12[m0].length;
        _mm_storeu_si128((__m128i *)(void *)o,
                         _mm_shuffle_epi8(_mm256_extracti128_si256(bytes, 1), s1));
        o += pack12[m1].length;
        i += 32;
    }
    *chars += i / 2;
    *op = o;
    return i;
}

/* UTF-8 validation, 32 bytes a step (the lookup algorithm of Keiser and Lemire,
   "Validating UTF-8 in less than one instruction per byte", 2021, as simdutf writes
   it): each byte is checked with the three before it against Unicode Table 3-7.
   Returns s, the length of the longest prefix of b[0:n) it can vouch for: whole
   well-formed sequences up to the first block with an error (or the last whole block),
   a sequence cut at that point left out.  b[0] must start a sequence (or be malformed).
   *chars counts the characters of b[0:s).  Each clean block is copied to out as it is
   checked (out[0:s) is b[0:s); the bytes after it, up to the last clean block, are
   b's too), which has room for n bytes.  *flagged is the offset of the first byte the
   check found wrong (a malformed unit starts there or before, not before s), or -1
   when it found none (the blocks reached the end). */
enum {
    V_TOO_SHORT = 1 << 0,  /* a lead or ASCII byte, then a lead or ASCII byte */
    V_TOO_LONG = 1 << 1,   /* ASCII, then a continuation byte */
    V_OVERLONG_3 = 1 << 2, /* E0 80..9F */
    V_TOO_LARGE = 1 << 3,  /* F4 90..BF, F5..FF 90..BF */
    V_SURROGATE = 1 << 4,  /* ED A0..BF */
    V_OVERLONG_2 = 1 << 5, /* C0..C1 80..BF */
    V_TOO_LARGE_1000 = 1 << 6, /* F5..FF 80..8F */
    V_OVERLONG_4 = 1 << 6,     /* F0 80..8F */
    V_TWO_CONTS = 1 << 7,      /* a continuation byte, then another (see below) */
    V_CARRY = V_TOO_SHORT | V_TOO_LONG | V_TWO_CONTS,
};

static TX_AVX2_FN Py_ssize_t
utf8_valid_avx2(const unsigned char *b, Py_ssize_t n, long long *chars, unsigned char *out,
                Py_ssize_t *flagged)
{
    const __m256i byte_1_high = _mm256_setr_epi8(
        V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG,
        V_TOO_LONG, (char)V_TWO_CONTS, (char)V_TWO_CONTS, (char)V_TWO_CONTS, (char)V_TWO_CONTS,
        V_TOO_SHORT | V_OVERLONG_2, V_TOO_SHORT, V_TOO_SHORT | V_OVERLONG_3 | V_SURROGATE,
        V_TOO_SHORT | V_TOO_LARGE | V_TOO_LARGE_1000 | V_OVERLONG_4,
        V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG,
        V_TOO_LONG, (char)V_TWO_CONTS, (char)V_TWO_CONTS, (char)V_TWO_CONTS, (char)V_TWO_CONTS,
        V_TOO_SHORT | V_OVERLONG_2, V_TOO_SHORT, V_TOO_SHORT | V_OVERLONG_3 | V_SURROGATE,
        V_TOO_SHORT | V_TOO_LARGE | V_TOO_LARGE_1000 | V_OVERLONG_4);
#define LOW_ROW                                                                              \
    (char)(V_CARRY | V_OVERLONG_3 | V_OVERLONG_2 | V_OVERLONG_4),                           \
        (char)(V_CARRY | V_OVERLONG_2), (char)V_CARRY, (char)V_CARRY,                       \
        (char)(V_CARRY | V_TOO_LARGE), (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),    \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000 | V_SURROGATE),                     \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000),                                   \
        (char)(V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000)
    const __m256i byte_1_low = _mm256_setr_epi8(LOW_ROW, LOW_ROW);
#undef LOW_ROW
#define CONT_8 (char)(V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_OVERLONG_3 | V_TOO_LARGE_1000 | V_OVERLONG_4)
#define CONT_9 (char)(V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_OVERLONG_3 | V_TOO_LARGE)
#define CONT_AB (char)(V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_SURROGATE | V_TOO_LARGE)
#define HIGH_ROW                                                                             \
    V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT,           \
        V_TOO_SHORT, V_TOO_SHORT, CONT_8, CONT_9, CONT_AB, CONT_AB, V_TOO_SHORT,            \
        V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT
    const __m256i byte_2_high = _mm256_setr_epi8(HIGH_ROW, HIGH_ROW);
#undef HIGH_ROW
#undef CONT_8
#undef CONT_9
#undef CONT_AB
    /* the last three bytes of a block that start a sequence it does not finish */
    static const unsigned char incomplete_max[32] = {
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,  255,  255,  255,  255,  255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,  255,  255,  0xEF, 0xDF, 0xBF};
    const __m256i max_tail = TX_LOAD256(incomplete_max);
    const __m256i low_nibble = _mm256_set1_epi8(0x0F);
    const __m256i zero = _mm256_setzero_si256();
    __m256i prev = zero, prev_incomplete = zero;
    Py_ssize_t p = 0;
    long long count = 0;
    *flagged = -1;
    while (p + 32 <= n) {
        __m256i in = TX_LOAD256(b + p);
        unsigned int high = (unsigned int)_mm256_movemask_epi8(in);
        if (high == 0) {
            if (!_mm256_testz_si256(prev_incomplete, prev_incomplete)) {
                *flagged = p;
                break; /* a sequence cut by ASCII */
            }
            prev_incomplete = zero;
            prev = in;
            _mm256_storeu_si256((__m256i *)(void *)(out + p), in);
            count += 32;
            p += 32;
            continue;
        }
        __m256i carried = _mm256_permute2x128_si256(prev, in, 0x21);
        __m256i prev1 = _mm256_alignr_epi8(in, carried, 15);
        __m256i prev2 = _mm256_alignr_epi8(in, carried, 14);
        __m256i prev3 = _mm256_alignr_epi8(in, carried, 13);
        __m256i sc = _mm256_and_si256(
            _mm256_and_si256(
                _mm256_shuffle_epi8(byte_1_high,
                                    _mm256_and_si256(_mm256_srli_epi16(prev1, 4), low_nibble)),
                _mm256_shuffle_epi8(byte_1_low, _mm256_and_si256(prev1, low_nibble))),
            _mm256_shuffle_epi8(byte_2_high,
                                _mm256_and_si256(_mm256_srli_epi16(in, 4), low_nibble)));
        /* a third or fourth byte is due: the continuation byte after a continuation
           byte that V_TWO_CONTS flagged is expected there, and only there */
        __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80)));
        __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80)));
        __m256i due = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
        __m256i error = _mm256_xor_si256(due, sc);
        if (!_mm256_testz_si256(error, error)) {
            unsigned int clean = (unsigned int)_mm256_movemask_epi8(_mm256_cmpeq_epi8(error, zero));
            *flagged = p + __builtin_ctz(~clean);
            break;
        }
        prev_incomplete = _mm256_subs_epu8(in, max_tail);
        /* the bytes that are not continuation bytes (signed: 80..BF are -128..-65) */
        unsigned int leads = (unsigned int)_mm256_movemask_epi8(
            _mm256_cmpgt_epi8(in, _mm256_set1_epi8((char)0xBF)));
        count += __builtin_popcount(leads);
        prev = in;
        _mm256_storeu_si256((__m256i *)(void *)(out + p), in);
        p += 32;
    }
    /* A sequence that the clean blocks leave unfinished is not vouched for. */
    Py_ssize_t s = p;
    for (Py_ssize_t k = 1; k <= 3 && k <= p; k++) {
        unsigned int c = b[p - k];
        if (c < 0x80) {
            break;
        }
        if (c >= 0xC0) {
            if ((c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2) > k) {
                s = p - k;
                count--;
            }
            break;
        }
    }
    *chars += count;
    return s;
}

#endif /* TX_AVX2 */

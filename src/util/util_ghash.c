/*  util_ghash - GCM's GHASH with VPCLMULQDQ (see util_ghash.h).

    The form. A GCM block b0..b127 (b0 the first byte's top bit) is the
    polynomial sum bi·x^i modulo g = x^128 + x^7 + x^2 + x + 1. Its 16
    bytes reversed and read as a little-endian 128-bit integer put bi at
    bit 127-i: the polynomial read backwards. In that form (z for the
    variable of the integer's bits) a product of two blocks is the
    carry-less product of the integers times z^-127, modulo the reversed
    g, g* = z^128 + z^127 + z^126 + z^121 + 1. Every block is taken into
    the form with one byte shuffle (VPSHUFB) and the result out of it
    with another; y, the running hash, stays in it.

    The multiply. The key keeps each power of H times z (H·z mod g*, a
    shift by one and, when a bit falls off, g*'s low 128 bits, which are
    0xC2000000_00000000_00000000_00000001): then a block times a stored
    power is the 256-bit carry-less product P (four 64x64 multiplies)
    times z^-128 modulo g*, the same reduction that POLYVAL (RFC 8452)
    uses, in two steps of 64 bits: the low 64 bits d of what is left are
    cancelled by adding d·g*, whose part that matters is d times
    0xC200000000000000 (one multiply) and d itself 128 bits up; twice,
    and the upper 128 bits are the result. The stored powers are
    themselves such products (H^2·z = (H·z)·(H·z)·z^-128).

    The loops. Blocks X1..Xn with the hash y before them hash to
    (y^X1)·H^n ^ X2·H^(n-1) ^ ... ^ Xn·H: n products, summed before the
    reduction (it is linear), so one reduction per n blocks. With AVX-512
    a register holds 4 blocks and the powers for them, so n = 32 blocks
    are 8 loads and 32 VPCLMULQDQ; the reduction is done in each 128-bit
    lane and the 4 lanes are summed into y. AVX2's registers hold 2, and
    its 16 hold 16 blocks and their powers. The blocks after the last
    whole group go one at a time (s_mul).

    Measured on this machine (AMD EPYC, Zen 4, 2 vCPUs), 1 MiB at a time:
    doc/benchmarks.md, "stop 46: a GHASH of our own".
*/
#include "util_ghash.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define S_X86 1
#include <immintrin.h>
#endif

#ifdef S_X86

#define S_T1 __attribute__((target("pclmul,ssse3")))
#define S_T2 __attribute__((target("avx2,vpclmulqdq,pclmul")))
#define S_T5 __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul")))

/* g*'s low 128 bits times z^-64's part that the reduction multiplies by:
   0xC200000000000000 in the high 64 bits, 1 in the low (s_lshift1's) */
#define S_POLY_HI ((long long) 0xC200000000000000ULL)

/* --- one block at a time ---------------------------------------------- */

/* 16 bytes in GCM's order into the form (reversed) */
S_T1 static inline __m128i
s_load1(const uint8_t *p)
{
    const __m128i rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) p), rev);
}

S_T1 static inline void
s_store1(uint8_t *p, __m128i v)
{
    const __m128i rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm_storeu_si128((__m128i *) p, _mm_shuffle_epi8(v, rev));
}

/* The 256-bit product hi:lo times z^-128 modulo g*: the 128-bit result */
S_T1 static inline __m128i
s_reduce1(__m128i lo, __m128i hi)
{
    const __m128i poly = _mm_set_epi64x(S_POLY_HI, 1);
    __m128i t = _mm_clmulepi64_si128(lo, poly, 0x10);   /* d0 · 0xC2.. */
    lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4E), t); /* d0 cancelled; d1' low */
    t = _mm_clmulepi64_si128(lo, poly, 0x10);           /* d1' · 0xC2.. */
    lo = _mm_xor_si128(_mm_shuffle_epi32(lo, 0x4E), t);
    return _mm_xor_si128(lo, hi);
}

/* a · b · z^-128 modulo g* (b a stored power: a block times H^k) */
S_T1 static inline __m128i
s_mul(__m128i a, __m128i b)
{
    __m128i lo = _mm_clmulepi64_si128(a, b, 0x00);
    __m128i hi = _mm_clmulepi64_si128(a, b, 0x11);
    __m128i mi = _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10));
    lo = _mm_xor_si128(lo, _mm_slli_si128(mi, 8));
    hi = _mm_xor_si128(hi, _mm_srli_si128(mi, 8));
    return s_reduce1(lo, hi);
}

/* nb blocks at p into *y, one at a time by H (pw[31]) */
S_T1 static void
s_blocks1(const util_ghash_key_t *k, uint8_t y[16], const uint8_t *p, size_t nb)
{
    __m128i h = _mm_loadu_si128((const __m128i *) k->pw[31]);
    __m128i acc = _mm_loadu_si128((const __m128i *) y);
    for (; nb > 0; nb--, p += 16)
        acc = s_mul(_mm_xor_si128(acc, s_load1(p)), h);
    _mm_storeu_si128((__m128i *) y, acc);
}

/* --- 16 blocks: AVX2, 2 per register (H^16..H^1: pw[16..31]) ------- */

S_T2 static size_t
s_blocks2(const util_ghash_key_t *k, uint8_t y[16], const uint8_t *p, size_t nb)
{
    const __m256i rev = _mm256_broadcastsi128_si256(
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m256i poly = _mm256_broadcastsi128_si256(_mm_set_epi64x(S_POLY_HI, 1));
    __m128i acc = _mm_loadu_si128((const __m128i *) y);
    size_t done = 0;
    for (; nb - done >= 16; done += 16, p += 256) {
        __m256i lo = _mm256_setzero_si256(), hi = lo, mi = lo;
        for (int j = 0; j < 8; j++) {
            __m256i x =
                _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *) (p + 32 * j)), rev);
            __m256i h = _mm256_loadu_si256((const __m256i *) k->pw[16 + 2 * j]);
            if (j == 0)
                x = _mm256_xor_si256(x, _mm256_zextsi128_si256(acc));
            lo = _mm256_xor_si256(lo, _mm256_clmulepi64_epi128(x, h, 0x00));
            hi = _mm256_xor_si256(hi, _mm256_clmulepi64_epi128(x, h, 0x11));
            mi = _mm256_xor_si256(mi, _mm256_xor_si256(_mm256_clmulepi64_epi128(x, h, 0x01),
                                                       _mm256_clmulepi64_epi128(x, h, 0x10)));
        }
        lo = _mm256_xor_si256(lo, _mm256_bslli_epi128(mi, 8));
        hi = _mm256_xor_si256(hi, _mm256_bsrli_epi128(mi, 8));
        __m256i t = _mm256_clmulepi64_epi128(lo, poly, 0x10);
        lo = _mm256_xor_si256(_mm256_shuffle_epi32(lo, 0x4E), t);
        t = _mm256_clmulepi64_epi128(lo, poly, 0x10);
        lo = _mm256_xor_si256(_mm256_shuffle_epi32(lo, 0x4E), t);
        lo = _mm256_xor_si256(lo, hi);
        acc = _mm_xor_si128(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    }
    _mm_storeu_si128((__m128i *) y, acc);
    _mm256_zeroupper(); /* the caller's SSE code would pay for dirty upper halves */
    return done;
}

/* --- 32 blocks: AVX-512, 4 per register ------------------------------ */

/* 32 rather than 16 blocks between reductions: each group's first
   block waits for the reduction (and the sum of the lanes) before it,
   and with 16 blocks the loop ran at 17.7 GB/s where the same work
   without that wait ran at 21.2; with 32, 21.9 (22.7 without the wait).
   Karatsuba's three multiplies for four gained 2-3% more, not kept. */
S_T5 static size_t
s_blocks5(const util_ghash_key_t *k, uint8_t y[16], const uint8_t *p, size_t nb)
{
    const __m512i rev =
        _mm512_broadcast_i32x4(_mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m512i poly = _mm512_broadcast_i32x4(_mm_set_epi64x(S_POLY_HI, 1));
    __m512i h[8];
    for (int j = 0; j < 8; j++)
        h[j] = _mm512_loadu_si512(k->pw[4 * j]);
    __m128i acc = _mm_loadu_si128((const __m128i *) y);
    size_t done = 0;
    for (; nb - done >= 32; done += 32, p += 512) {
        __m512i x = _mm512_shuffle_epi8(_mm512_loadu_si512(p), rev);
        x = _mm512_xor_si512(x, _mm512_zextsi128_si512(acc));
        __m512i lo = _mm512_clmulepi64_epi128(x, h[0], 0x00);
        __m512i hi = _mm512_clmulepi64_epi128(x, h[0], 0x11);
        __m512i mi = _mm512_xor_si512(_mm512_clmulepi64_epi128(x, h[0], 0x01),
                                      _mm512_clmulepi64_epi128(x, h[0], 0x10));
        for (int j = 1; j < 8; j++) {
            x = _mm512_shuffle_epi8(_mm512_loadu_si512(p + 64 * j), rev);
            lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(x, h[j], 0x00));
            hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(x, h[j], 0x11));
            /* 0x96: a ^ b ^ c */
            mi = _mm512_ternarylogic_epi64(mi, _mm512_clmulepi64_epi128(x, h[j], 0x01),
                                           _mm512_clmulepi64_epi128(x, h[j], 0x10), 0x96);
        }
        lo = _mm512_xor_si512(lo, _mm512_bslli_epi128(mi, 8));
        hi = _mm512_xor_si512(hi, _mm512_bsrli_epi128(mi, 8));
        /* s_reduce1 in each lane, then the 4 lanes summed */
        __m512i t = _mm512_clmulepi64_epi128(lo, poly, 0x10);
        lo = _mm512_xor_si512(_mm512_shuffle_epi32(lo, _MM_PERM_BADC), t);
        t = _mm512_clmulepi64_epi128(lo, poly, 0x10);
        lo = _mm512_ternarylogic_epi64(_mm512_shuffle_epi32(lo, _MM_PERM_BADC), t, hi, 0x96);
        __m256i l2 = _mm256_xor_si256(_mm512_castsi512_si256(lo), _mm512_extracti64x4_epi64(lo, 1));
        acc = _mm_xor_si128(_mm256_castsi256_si128(l2), _mm256_extracti128_si256(l2, 1));
    }
    _mm_storeu_si128((__m128i *) y, acc);
    _mm256_zeroupper();
    return done;
}

/* --- the key ----------------------------------------------------------- */

/* v·z modulo g*: the 128-bit shift left by one, and g*'s low bits when
   bit 127 falls off */
S_T1 static __m128i
s_times_z(__m128i v)
{
    __m128i carry = _mm_srli_epi64(v, 63);                            /* each half's top bit */
    __m128i top = _mm_shuffle_epi32(carry, 0xAA);                     /* bit 127's, in every lane */
    v = _mm_or_si128(_mm_slli_epi64(v, 1), _mm_slli_si128(carry, 8)); /* low half's into high */
    top = _mm_cmpeq_epi32(top, _mm_set1_epi32(1)); /* all ones when it fell off */
    return _mm_xor_si128(v, _mm_and_si128(top, _mm_set_epi64x(S_POLY_HI, 1)));
}

S_T1 static void
s_key(util_ghash_key_t *k, const uint8_t h[16])
{
    __m128i h1 = s_times_z(s_load1(h)), hk = h1;
    _mm_storeu_si128((__m128i *) k->pw[31], h1);
    for (int i = 30; i >= 0; i--) {
        hk = s_mul(hk, h1);
        _mm_storeu_si128((__m128i *) k->pw[i], hk);
    }
}

S_T1 static void
s_out(const uint8_t y[16], uint8_t out[16])
{
    s_store1(out, _mm_loadu_si128((const __m128i *) y));
}

#endif /* S_X86 */

int
util_ghash_best(void)
{
#ifdef S_X86
    static int best = -1; /* racing first callers store the same */
    int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
    if (b < 0) {
        __builtin_cpu_init();
        if (!__builtin_cpu_supports("vpclmulqdq") || !__builtin_cpu_supports("pclmul") ||
            !__builtin_cpu_supports("avx2"))
            b = 0;
        else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl"))
            b = UTIL_GHASH_AVX512;
        else
            b = UTIL_GHASH_AVX2;
        __atomic_store_n(&best, b, __ATOMIC_RELAXED);
    }
    return b;
#else
    return 0;
#endif
}

bool
util_ghash_here(void)
{
    return util_ghash_best() != 0;
}

void
util_ghash_key(util_ghash_key_t *k, const uint8_t h[16])
{
    memset(k, 0, sizeof *k);
    k->loop = util_ghash_best();
#ifdef S_X86
    if (k->loop)
        s_key(k, h);
#else
    (void) h;
#endif
}

void
util_ghash_start(util_ghash_t *g, const util_ghash_key_t *k)
{
    memset(g, 0, sizeof *g);
    g->key = k;
}

/* nb whole blocks at p into the hash */
static void
s_run(util_ghash_t *g, const uint8_t *p, size_t nb)
{
#ifdef S_X86
    size_t done = 0;
    if (g->key->loop == UTIL_GHASH_AVX512)
        done = s_blocks5(g->key, g->y, p, nb);
    else if (g->key->loop == UTIL_GHASH_AVX2)
        done = s_blocks2(g->key, g->y, p, nb);
    if (done < nb)
        s_blocks1(g->key, g->y, p + 16 * done, nb - done);
#else
    (void) g, (void) p, (void) nb;
#endif
}

void
util_ghash_add(util_ghash_t *g, const void *p, size_t n)
{
    const uint8_t *b = p;
    if (g->npart > 0) {
        size_t take = 16 - g->npart < n ? 16 - g->npart : n;
        memcpy(g->part + g->npart, b, take);
        g->npart += take;
        b += take;
        n -= take;
        if (g->npart < 16)
            return;
        s_run(g, g->part, 1);
        g->npart = 0;
    }
    if (n >= 16)
        s_run(g, b, n / 16);
    b += n / 16 * 16;
    n %= 16;
    memcpy(g->part, b, n);
    g->npart = n;
}

void
util_ghash_pad(util_ghash_t *g)
{
    if (g->npart == 0)
        return;
    memset(g->part + g->npart, 0, 16 - g->npart);
    s_run(g, g->part, 1);
    g->npart = 0;
}

void
util_ghash_end(util_ghash_t *g, uint64_t abytes, uint64_t cbytes, uint8_t out[16])
{
    uint8_t len[16];
    util_ghash_pad(g);
    for (int i = 0; i < 8; i++) {
        len[i] = (uint8_t) ((abytes * 8) >> (56 - 8 * i));
        len[8 + i] = (uint8_t) ((cbytes * 8) >> (56 - 8 * i));
    }
    s_run(g, len, 1);
#ifdef S_X86
    s_out(g->y, out);
#else
    memset(out, 0, 16);
#endif
    memset(g->y, 0, sizeof g->y);
}

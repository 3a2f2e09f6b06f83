/*  util_fp_simd - XXH3-128 compiled twice: once for the baseline (SSE2)
    and once with -mavx2 (UTIL_FP_AVX2), each exporting its own symbol;
    util_fp.c picks one at run time. */
#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <stddef.h>
#include <stdint.h>
#ifdef UTIL_FP_AVX2
#include <immintrin.h>
#endif

#ifdef UTIL_FP_AVX2
#define S_NAME util_fp_avx2
#else
#define S_NAME util_fp_base
#endif

void S_NAME(uint64_t out[2], const void *p, size_t n);

void
S_NAME(uint64_t out[2], const void *p, size_t n)
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    out[0] = h.low64;
    out[1] = h.high64;
#ifdef UTIL_FP_AVX2
    /* XXH3's AVX2 loop (inputs over 240 bytes) returns with the upper
       halves of the YMM registers in use, and GCC 12 adds no vzeroupper
       after it. Until something clears them, every SSE instruction the
       thread runs pays for the dirty state: a worker's next task ran its
       floating point 1.7x slower after returning a 2.5 KB result (ES
       rollouts, 9.6 -> 16.8 ms a task on this Zen 4 VM). */
    _mm256_zeroupper();
#endif
}

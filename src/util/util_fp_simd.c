/*  util_fp_simd - XXH3-128 compiled twice: once for the baseline (SSE2)
    and once with -mavx2 (UTIL_FP_AVX2), each exporting its own symbol;
    util_fp.c picks one at run time. */
#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <stddef.h>
#include <stdint.h>

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
}

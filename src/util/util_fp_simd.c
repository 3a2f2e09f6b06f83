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

#define S_CAT(a, b) a##b
#define S_CAT2(a, b) S_CAT(a, b)

void S_NAME(uint64_t out[2], const void *p, size_t n);
void S_CAT2(S_NAME, _add)(void *state, const void *p, size_t n);
void S_CAT2(S_NAME, _end)(const void *state, uint64_t out[2]);

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

/* The same hash in steps (util_fp_stream_*): XXH3's streaming state
   gives the one-shot digest of the bytes added, in order, however they
   were cut. */
void
S_CAT2(S_NAME, _add)(void *state, const void *p, size_t n)
{
    XXH3_128bits_update(state, p, n);
#ifdef UTIL_FP_AVX2
    _mm256_zeroupper();
#endif
}

void
S_CAT2(S_NAME, _end)(const void *state, uint64_t out[2])
{
    XXH128_hash_t h = XXH3_128bits_digest(state);
    out[0] = h.low64;
    out[1] = h.high64;
#ifdef UTIL_FP_AVX2
    _mm256_zeroupper();
#endif
}

#ifndef UTIL_FP_AVX2
/* The state, made and freed once (the layout is the same in both builds). */
void *util_fp_state_new(void);
void util_fp_state_free(void *state);

void *
util_fp_state_new(void)
{
    XXH3_state_t *st = XXH3_createState();
    if (st)
        XXH3_128bits_reset(st);
    return st;
}

void
util_fp_state_free(void *state)
{
    XXH3_freeState(state);
}
#endif

/* 0003-util-fp: content fingerprints are XXH3-128, from either build of
   the hash, and the AVX2 build leaves the vector registers clean.

   util_fp picks the AVX2 build of XXH3 at run time. Its loop over inputs
   longer than 240 bytes returns with the upper halves of the YMM
   registers in use, and the compiler adds no vzeroupper after it; until
   something clears them, every SSE instruction the thread runs is slower
   (an ES worker's floating point ran 1.7x slower after each task that
   returned a 2.5 KB result). XGETBV with ECX=1 reads the processor's
   XINUSE bitmap, whose bit 2 says whether that AVX state is in use, so
   the test can see it directly, where the processor reports it. */
#include "tap.h"
#include "util/util_fp.h"

#include <cpuid.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

void util_fp_avx2(uint64_t out[2], const void *p, size_t n);
void util_fp_base(uint64_t out[2], const void *p, size_t n);

/* XGETBV with ECX=1 is there (CPUID 0Dh.1:EAX bit 2, and the OS enabled
   XSAVE: CPUID 1:ECX bit 27). */
static int
s_xinuse_known(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
        return 0;
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d))
        return 0;
    return (a >> 2) & 1;
}

static uint64_t
s_xinuse(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return ((uint64_t) hi << 32) | lo;
}

static void
s_le(uint8_t out[16], uint64_t lo, uint64_t hi)
{
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t) (lo >> (8 * i));
        out[8 + i] = (uint8_t) (hi >> (8 * i));
    }
}

int
main(void)
{
    static const size_t sizes[] = {0, 1, 16, 17, 128, 129, 240, 241, 1024, 4096, 100003};
    size_t max = 100003;
    uint8_t *buf = malloc(max), *dst = malloc(max);
    for (size_t i = 0; i < max; i++)
        buf[i] = (uint8_t) (i * 2654435761u >> 13);
    int avx2 = __builtin_cpu_supports("avx2");

    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        /* the library's own function, not inlined here: the reference */
        XXH128_hash_t ref = XXH3_128bits(buf, n);
        uint8_t want[16], got[16], copied[16];
        uint64_t h[2];
        s_le(want, ref.low64, ref.high64);
        util_fp(got, buf, n);
        ok(memcmp(got, want, 16) == 0, "util_fp of %zu bytes is XXH3-128 (little-endian)", n);
        util_fp_base(h, buf, n);
        ok(h[0] == ref.low64 && h[1] == ref.high64, "the baseline build agrees for %zu bytes", n);
        if (avx2) {
            util_fp_avx2(h, buf, n);
            ok(h[0] == ref.low64 && h[1] == ref.high64, "the AVX2 build agrees for %zu bytes", n);
        } else {
            skip("no AVX2 here: the AVX2 build");
        }
        memset(dst, 0, n ? n : 1);
        util_fp_copy(copied, dst, buf, n);
        ok(memcmp(copied, want, 16) == 0 && memcmp(dst, buf, n) == 0,
           "util_fp_copy of %zu bytes copies and gives the same fingerprint", n);
    }

    if (!avx2 || !s_xinuse_known()) {
        skip("the processor does not report XINUSE or has no AVX2: upper-state check");
        skip("upper-state check after util_fp_copy");
    } else {
        uint8_t out[16];
        __asm__ volatile("vzeroupper" ::: "memory");
        uint64_t before = s_xinuse();
        util_fp(out, buf, 4096); /* the long path: XXH3's AVX2 loop */
        uint64_t after = s_xinuse();
        ok(!(after & 4),
           "after util_fp of 4 KiB the YMM upper halves are clear (XINUSE 0x%llx before, "
           "0x%llx after)",
           (unsigned long long) before, (unsigned long long) after);
        __asm__ volatile("vzeroupper" ::: "memory");
        util_fp_copy(out, dst, buf, 4096);
        after = s_xinuse();
        ok(!(after & 4), "and after util_fp_copy (XINUSE 0x%llx)", (unsigned long long) after);
    }
    free(buf);
    free(dst);
    return done_testing();
}

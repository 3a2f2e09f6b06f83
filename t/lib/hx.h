/*  hx - the values of the harsh random graphs: bytes of any size made from
    a 64-bit seed (hx_fill) and checked whole (hx_digest). One definition
    for both sides: the remote functions of t/lib/testmod.c make them, and
    t/3108-exec-harsh.c computes the same sequentially to compare. */
#ifndef HX_H_INCLUDED
#define HX_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t
hx_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline void
hx_fill(uint8_t *p, size_t n, uint64_t h)
{
    size_t i = 0;
    for (uint64_t k = 0; i + 8 <= n; i += 8, k++) {
        uint64_t w = hx_mix(h ^ (k * 0x2545f4914f6cdd1dULL));
        memcpy(p + i, &w, 8);
    }
    if (i < n) {
        uint64_t w = hx_mix(h ^ ((uint64_t) (i / 8) * 0x2545f4914f6cdd1dULL));
        memcpy(p + i, &w, n - i);
    }
}

static inline uint64_t
hx_digest(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t d = hx_mix(n), w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        d = (d ^ w) * 0x100000001b3ULL + (d >> 29);
    }
    if (i < n) {
        w = 0;
        memcpy(&w, p + i, n - i);
        d = (d ^ w) * 0x100000001b3ULL + (d >> 29);
    }
    return hx_mix(d);
}

/* HAcc's step (t/lib/testmod.c) over one argument of n bytes, its first:
   the running hash after it. */
static inline uint64_t
hx_acc_step(uint64_t h, const void *p, size_t n)
{
    return hx_mix(h ^ (hx_digest(p, n) + 0));
}

#endif

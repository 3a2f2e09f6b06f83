/*  es_rng - the deterministic random numbers of the ES example.

    Everything random in ES (the noise table, the initial weights, the
    environments' initial states, which slice of noise a rollout uses) must
    be a pure function of a seed, so that any process, in any order, draws
    the same numbers. libc's rand() has hidden global state and differs
    between C libraries, so this header provides its own:

      - es_mix64: the splitmix64 finaliser (Steele, Lea and Flood, "Fast
        splittable pseudorandom number generators", 2014), a bijection that
        spreads every input bit over the output; es_derive() chains it to
        turn (seed, a, b, ...) into an independent-looking 64-bit seed.
      - es_rng_t: xoshiro256** (Blackman and Vigna, "Scrambled linear
        pseudorandom number generators", 2018), seeded from splitmix64 as
        its authors recommend. Fast, 256 bits of state, period 2^256 - 1.

    All functions are static inline and touch only the state they are given.
*/
#ifndef ES_RNG_H_INCLUDED
#define ES_RNG_H_INCLUDED

#include <math.h>
#include <stdint.h>

/* The splitmix64 step constant: the golden ratio as a 64-bit fraction. */
#define ES_GOLDEN64 0x9e3779b97f4a7c15ULL

typedef struct {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
} es_rng_t;

/* splitmix64's output function: a well-spread bijection of one word. */
static inline uint64_t
es_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The uses of a seed, kept apart by es_derive(). Stored results depend
   on these numbers: never renumber, only add. */
enum es_domain {
    ES_DOMAIN_NOISE = 1,     /* noise table block (a = block) */
    ES_DOMAIN_INIT = 2,      /* initial policy weights */
    ES_DOMAIN_NOISE_IDX = 3, /* a rollout's noise index (a = iteration, b = rollout) */
    ES_DOMAIN_ENV = 4,       /* a rollout's environment seed (a = iteration, b = rollout) */
    ES_DOMAIN_EPISODE = 5,   /* episode k of a rollout (seed = its env seed, a = k) */
    ES_DOMAIN_EVAL = 6,      /* evaluation episodes (a = iteration, b = episode) */
};

/* A seed for the stream named by (seed, domain, a, b): a pure function,
   well spread even for neighbouring inputs. */
static inline uint64_t
es_derive(uint64_t seed, uint64_t domain, uint64_t a, uint64_t b)
{
    uint64_t h = es_mix64(seed + ES_GOLDEN64);
    h = es_mix64(h ^ (domain + 1) * ES_GOLDEN64);
    h = es_mix64(h ^ (a + 1) * 0xd1b54a32d192ed03ULL);
    return es_mix64(h ^ (b + 1) * 0xaef17502108ef2d9ULL);
}

static inline uint64_t
es__rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* Seed r from one word by running splitmix64 four times. */
static inline void
es_rng_seed(es_rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        seed += ES_GOLDEN64;
        r->s[i] = es_mix64(seed);
    }
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) /* cannot happen; cheap to be sure */
        r->s[0] = 1;
}

/* The next 64 random bits (xoshiro256**). */
static inline uint64_t
es_rng_next(es_rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t out = es__rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = es__rotl64(s[3], 45);
    return out;
}

/* Uniform in [0, 1): the top 53 bits as a double, exact and unbiased. */
static inline double
es_rng_uniform(es_rng_t *r)
{
    return (double)(es_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [lo, hi). */
static inline double
es_rng_range(es_rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * es_rng_uniform(r);
}

/* Uniform integer in [0, n), n > 0, without modulo bias (rejects the
   incomplete top block of the 64-bit range). */
static inline uint64_t
es_rng_below(es_rng_t *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = es_rng_next(r);
    while (x >= limit);
    return x % n;
}

/* Two independent standard normal deviates (Marsaglia's polar method). */
static inline void
es_rng_gauss2(es_rng_t *r, double *a, double *b)
{
    double u, v, s;
    do {
        u = 2.0 * es_rng_uniform(r) - 1.0;
        v = 2.0 * es_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = sqrt(-2.0 * log(s) / s);
    *a = u * f;
    *b = v * f;
}

#endif

/*  es_noise - the shared noise table of ES.

    Salimans et al. (2017, section 2.1) avoid sending perturbations between
    machines: every worker holds the same large table of N(0, 1) samples,
    built from a seed at start-up, and a perturbation of a d-parameter
    policy is just the slice table[idx .. idx + d), named by idx. A rollout
    result then carries an index and two returns instead of d floats, and
    the driver rebuilds the gradient from the indices.

    The table is a pure function of (seed, len): it is filled in blocks of
    ES_NOISE_BLOCK floats, each from its own generator seeded by (seed,
    block number), so any process can build it, or any slice of it, in any
    order or in parallel, and get the same floats. After it is filled it is
    read-only; a worker may equally map one shared copy.

    Samples come from es_rng_gauss2 (doubles, using the maths library's log
    and sqrt) rounded to float. Two machines with different maths libraries
    could in principle differ in the last bit of a sample; es_noise_hash()
    lets a distributed driver check that its workers agree.
*/
#ifndef ES_NOISE_H_INCLUDED
#define ES_NOISE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* Floats per independently seeded block. Changing it changes every table. */
#define ES_NOISE_BLOCK 65536

/* 16 Mi floats = 64 MiB, built in about 0.2 s on one core of the 2-core
   development machine. Tables of hundreds of MB suit policies of 10^5-10^6
   parameters; the policies here have a few hundred, and 16 M slice starts
   make two rollouts of a run share a slice rarely (see README). */
#define ES_NOISE_DEFAULT_LEN ((size_t)1 << 24)

/* The seed of the default table. Runs with different run seeds share it. */
#define ES_NOISE_DEFAULT_SEED 20170310u

typedef struct {
    float *data;   /* len samples of N(0, 1), owned */
    size_t len;    /* number of floats */
    uint64_t seed; /* the seed it was built from */
} es_noise_t;

/* Build a table of len floats from seed. NULL when out of memory or len
   is 0. */
es_noise_t *es_noise_new(uint64_t seed, size_t len);

/* Free the table and null the caller's pointer; NULL is fine. */
void es_noise_destroy(es_noise_t **self_p);

/* Fill block number block (floats [block * ES_NOISE_BLOCK, ...) clipped
   to len) of the table at table, which has len floats in all. */
void es_noise_fill_block(float *table, size_t len, uint64_t seed, size_t block);

/* Fill all of table (len floats): every block in turn. */
void es_noise_fill(float *table, size_t len, uint64_t seed);

/* A 64-bit fingerprint of the table's contents (es_hash_floats). */
uint64_t es_noise_hash(const es_noise_t *noise);

/* FNV-1a 64 of the little-endian IEEE-754 bytes of n floats: the same on
   every machine for the same values, and easy to recompute elsewhere
   (python: struct.pack('<%df' % n, *w), then FNV-1a 64). */
uint64_t es_hash_floats(const float *v, size_t n);

/* FNV-1a 64 of n bytes. */
uint64_t es_fnv1a64(const void *p, size_t n);

#endif

/*  es_noise - building the noise table, and the FNV-1a hash used to
    fingerprint tables and weights.

    FNV-1a (Fowler, Noll and Vo): start from the 64-bit offset basis
    14695981039346656037, and for each byte xor it in and multiply by the
    64-bit FNV prime 1099511628211. Not for adversaries, only to tell
    whether two arrays are bit-identical.
*/
#include "es_noise.h"
#include "es_rng.h"

#include <stdlib.h>
#include <string.h>

#define FNV64_OFFSET 14695981039346656037ULL
#define FNV64_PRIME 1099511628211ULL

void
es_noise_fill_block(float *table, size_t len, uint64_t seed, size_t block)
{
    size_t from = block * ES_NOISE_BLOCK;
    if (from >= len)
        return;
    size_t to = len - from < ES_NOISE_BLOCK ? len : from + ES_NOISE_BLOCK;
    es_rng_t r;
    es_rng_seed(&r, es_derive(seed, ES_DOMAIN_NOISE, block, 0));
    for (size_t i = from; i < to; i += 2) {
        double a, b;
        es_rng_gauss2(&r, &a, &b);
        table[i] = (float)a;
        if (i + 1 < to) /* an odd tail drops the pair's second sample */
            table[i + 1] = (float)b;
    }
}

void
es_noise_fill(float *table, size_t len, uint64_t seed)
{
    size_t blocks = (len + ES_NOISE_BLOCK - 1) / ES_NOISE_BLOCK;
    for (size_t b = 0; b < blocks; b++)
        es_noise_fill_block(table, len, seed, b);
}

es_noise_t *
es_noise_new(uint64_t seed, size_t len)
{
    if (len == 0 || len > SIZE_MAX / sizeof(float))
        return NULL;
    es_noise_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->data = malloc(len * sizeof(float));
    if (!self->data) {
        free(self);
        return NULL;
    }
    self->len = len;
    self->seed = seed;
    es_noise_fill(self->data, len, seed);
    return self;
}

void
es_noise_destroy(es_noise_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->data);
    free(*self_p);
    *self_p = NULL;
}

uint64_t
es_fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = FNV64_OFFSET;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV64_PRIME;
    }
    return h;
}

uint64_t
es_hash_floats(const float *v, size_t n)
{
    uint64_t h = FNV64_OFFSET;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        for (int k = 0; k < 4; k++) { /* little-endian, whatever the host */
            h ^= (bits >> (8 * k)) & 0xff;
            h *= FNV64_PRIME;
        }
    }
    return h;
}

uint64_t
es_noise_hash(const es_noise_t *noise)
{
    return es_hash_floats(noise->data, noise->len);
}

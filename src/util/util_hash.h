/*  util_hash - hashing: BLAKE2b (libsodium) where a hash must be hard to
    forge (the log's hash chain, content fingerprints, deterministic IDs), a
    fast 64-bit mix where it only has to spread (shards, hash tables), and
    hex.
*/
#ifndef UTIL_HASH_H_INCLUDED
#define UTIL_HASH_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* BLAKE2b of in into out (outlen 16..64 bytes). */
void util_blake(void *out, size_t outlen, const void *in, size_t inlen);

/* Incremental BLAKE2b, for hashing pieces without copying them together. */
typedef struct {
    unsigned char opaque[384] __attribute__((aligned(64)));
} util_blake_t;
void util_blake_init(util_blake_t *h, size_t outlen);
void util_blake_update(util_blake_t *h, const void *in, size_t inlen);
void util_blake_final(util_blake_t *h, void *out, size_t outlen);

/* A fast, well-spread, non-cryptographic 64-bit hash. Its input is read
   as little-endian words, so the value is the same on every host: it
   places events on shards (doc/protocol.md 11.1). Never change it: shard
   files hold events by its value. */
uint64_t util_hash64(const void *p, size_t n);

/* splitmix64's finaliser: spreads the bits of one word. */
static inline uint64_t
util_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Lower-case hex of n bytes into out (2n+1 bytes with the NUL). */
void util_hex(char *out, const void *p, size_t n);
/* Parse exactly 2n hex digits into n bytes; 0 or LUX_EINVAL. */
int util_unhex(void *out, size_t n, const char *hex);

#endif

/*  util_ghash - GCM's GHASH (NIST SP 800-38D, 6.4) with the wide
    carry-less multiply (VPCLMULQDQ), for the bulk path's integrity-only
    records (GMAC, doc/DESIGN.md 7.3), which OpenSSL 3.0 hashes with the
    128-bit PCLMULQDQ only.

    GHASH_H(X1..Xm) = (((X1·H) ^ X2)·H ^ ...)·H in GF(2^128), the blocks
    and H in GCM's bit order. The loops here multiply many blocks at a
    time by powers of H precomputed in the key, 4 blocks per VPCLMULQDQ
    with AVX-512 (32 blocks per reduction) or 2 with AVX2 (16), and
    reduce once per group; the last blocks, and the key's powers, go one
    at a time with PCLMULQDQ. The result is GHASH's, bit for bit,
    whichever loop ran.

    Only x86-64 CPUs with VPCLMULQDQ (and AVX2) can: util_ghash_here()
    says whether this one does; nothing else here may be called where it
    says no (the caller keeps another GHASH: OpenSSL's).
*/
#ifndef UTIL_GHASH_H_INCLUDED
#define UTIL_GHASH_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The loops: 32 blocks in 8 AVX-512 registers, 16 in 8 AVX2 ones, or
   one block at a time (PCLMULQDQ alone: the tail's way, and a check). */
enum { UTIL_GHASH_1 = 1, UTIL_GHASH_AVX2 = 2, UTIL_GHASH_AVX512 = 3 };

/* H's powers for one key (H = E_K(0^128)). */
typedef struct {
    uint8_t pw[32][16]; /* H^32 .. H^1, in the .c's form */
    int loop;           /* UTIL_GHASH_*: which loop hashes */
} util_ghash_key_t;

/* One hash in progress: bytes added in parts, padded where asked. */
typedef struct {
    const util_ghash_key_t *key; /* borrowed: lives while the hash does */
    uint8_t y[16];               /* the hash so far, in the .c's form */
    uint8_t part[16];            /* a block begun: npart bytes of it */
    size_t npart;
} util_ghash_t;

/* Whether this CPU and build can (VPCLMULQDQ with AVX2 or AVX-512F). */
bool util_ghash_here(void);
/* The loop util_ghash_key picks here: UTIL_GHASH_AVX512 where the CPU
   has AVX-512F/BW/VL, else UTIL_GHASH_AVX2; 0 where util_ghash_here()
   is false. */
int util_ghash_best(void);
/* k for the hash key h (16 bytes, E_K(0^128)), with the best loop; a
   caller may set k->loop to another this CPU has (a bench, a test). */
void util_ghash_key(util_ghash_key_t *k, const uint8_t h[16]);

/* Begin a hash under k. */
void util_ghash_start(util_ghash_t *g, const util_ghash_key_t *k);
/* n more bytes: the same hash however the bytes are cut into parts. */
void util_ghash_add(util_ghash_t *g, const void *p, size_t n);
/* Zeros to the end of a block begun (between GCM's additional data and
   its ciphertext); nothing when none is. */
void util_ghash_pad(util_ghash_t *g);
/* Pad, hash GCM's length block (abytes of additional data, cbytes of
   ciphertext, as bits, big-endian), and the 16 bytes of GHASH into out.
   g may be started again. */
void util_ghash_end(util_ghash_t *g, uint64_t abytes, uint64_t cbytes, uint8_t out[16]);

#endif

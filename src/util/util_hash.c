/*  util_hash - BLAKE2b through libsodium, a fast 64-bit hash, and hex.

    libsodium needs sodium_init() once per process before use; it is done
    here lazily with pthread_once so callers never think about it.
*/
#include "util_hash.h"
#include "util_buf.h"
#include "util_err.h"

#include <pthread.h>
#include <stdlib.h>
#include <sodium.h>
#include <string.h>

_Static_assert(sizeof(util_blake_t) >= sizeof(crypto_generichash_state),
               "util_blake_t too small for libsodium's state");

static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static void
s_init(void)
{
    if (sodium_init() < 0)
        abort();
}

void
util_blake(void *out, size_t outlen, const void *in, size_t inlen)
{
    pthread_once(&s_once, s_init);
    crypto_generichash(out, outlen, in, inlen, NULL, 0);
}

void
util_blake_init(util_blake_t *h, size_t outlen)
{
    pthread_once(&s_once, s_init);
    crypto_generichash_init((crypto_generichash_state *) h->opaque, NULL, 0, outlen);
}

void
util_blake_update(util_blake_t *h, const void *in, size_t inlen)
{
    crypto_generichash_update((crypto_generichash_state *) h->opaque, in, inlen);
}

void
util_blake_final(util_blake_t *h, void *out, size_t outlen)
{
    crypto_generichash_final((crypto_generichash_state *) h->opaque, out, outlen);
}

/* Words are read little-endian whatever the host's byte order: the hash
   picks an event's shard (util_id_shard), so every machine of a cluster,
   and every client in another language, must compute the same value
   (doc/protocol.md 11.1 gives the algorithm and an example). */
uint64_t
util_hash64(const void *p, size_t n)
{
    const uint8_t *s = p;
    uint64_t h = 0x6a09e667f3bcc908ULL ^ (n * 0x9e3779b97f4a7c15ULL);
    while (n >= 8) {
        h = (h ^ util_mix64(util_rd64(s))) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        for (size_t i = 0; i < n; i++) /* the tail, little-endian, zero-padded */
            w |= (uint64_t) s[i] << (8 * i);
        h = (h ^ util_mix64(w ^ n)) * 0x9e3779b97f4a7c15ULL;
    }
    return util_mix64(h);
}

void
util_hex(char *out, const void *p, size_t n)
{
    sodium_bin2hex(out, 2 * n + 1, p, n);
}

int
util_unhex(void *out, size_t n, const char *hex)
{
    size_t len = strlen(hex), got = 0;
    const char *end = NULL;
    if (len != 2 * n)
        return util_err(LUX_EINVAL, "expected %zu hex digits, got %zu", 2 * n, len);
    if (sodium_hex2bin(out, n, hex, len, NULL, &got, &end) != 0 || got != n)
        return util_err(LUX_EINVAL, "not a hex digit at position %zu",
                        end && end > hex ? (size_t) (end - hex) : (size_t) 0);
    return 0;
}

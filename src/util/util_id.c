/*  util_id - random and deterministic 16-byte IDs (see util_id.h). */
#include "util_id.h"
#include "util_hash.h"

#include <sodium.h>

void
util_id_random(util_id_t *id)
{
    /* util_blake initialises libsodium once; randombytes needs it too */
    uint8_t tmp[16];
    util_blake(tmp, sizeof tmp, "", 0);
    randombytes_buf(id->b, sizeof id->b);
}

void
util_id_child(util_id_t *out, const util_id_t *a, const util_id_t *b, uint64_t counter)
{
    uint8_t scope[2 * UTIL_ID_LEN];
    uint8_t h[16];
    memcpy(scope, a->b, UTIL_ID_LEN);
    memcpy(scope + UTIL_ID_LEN, b->b, UTIL_ID_LEN);
    util_blake(h, sizeof h, scope, sizeof scope);
    memcpy(out->b, h, 8);
    for (int i = 0; i < 8; i++)
        out->b[15 - i] = (uint8_t) (counter >> (8 * i));
}

uint32_t
util_id_shard(const util_id_t *key, uint32_t n)
{
    if (n <= 1)
        return 0;
    return (uint32_t) (util_hash64(key->b, sizeof key->b) % n);
}

char *
util_id_hex(const util_id_t *id, char out[UTIL_ID_HEX])
{
    util_hex(out, id->b, sizeof id->b);
    return out;
}

int
util_id_parse(util_id_t *id, const char *hex)
{
    return util_unhex(id->b, sizeof id->b, hex);
}

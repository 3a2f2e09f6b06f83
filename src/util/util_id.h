/*  util_id - 16-byte identifiers.

    IDs are deterministic where the design needs replay to reproduce them
    (DESIGN section 1): a child ID is made from a scope (the job and the
    parent) and the parent's counter. Its first 8 bytes are a BLAKE2b hash of
    the scope, its last 8 the counter, big-endian. So every child of one
    parent shares a prefix and sorts in submission order, which keeps the
    log's ID index append-mostly: SQLite inserts such IDs about 8x faster
    than uniformly random ones (measured, see README "The log"). Uniqueness
    is that of the 64-bit scope hash plus the exact counter.

    Random IDs (clients, nodes, jobs) come from the system's CSPRNG.
*/
#ifndef UTIL_ID_H_INCLUDED
#define UTIL_ID_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define UTIL_ID_LEN 16
#define UTIL_ID_HEX 33 /* 32 digits and the NUL */

typedef struct {
    uint8_t b[UTIL_ID_LEN];
} util_id_t;

static inline bool
util_id_is_zero(const util_id_t *id)
{
    static const util_id_t zero;
    return memcmp(id, &zero, sizeof zero) == 0;
}

static inline bool
util_id_eq(const util_id_t *a, const util_id_t *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* A fresh random ID. */
void util_id_random(util_id_t *id);

/* The counter-th child of scope (a, b): deterministic. */
void util_id_child(util_id_t *out, const util_id_t *a, const util_id_t *b, uint64_t counter);

/* Which of n shards owns key: spread over all 16 bytes. */
uint32_t util_id_shard(const util_id_t *key, uint32_t n);

/* 32 lower-case hex digits. */
char *util_id_hex(const util_id_t *id, char out[UTIL_ID_HEX]);
/* Parse 32 hex digits; 0 or LUX_EINVAL. */
int util_id_parse(util_id_t *id, const char *hex);

#endif

/*  util_idmap - a hash map from IDs (16 bytes, or any fixed length such as
    a 20-byte object ID) to a fixed-size value.

    Open addressing with linear probing and backward-shift deletion, so no
    tombstones accumulate in long runs. Values are copied in and out; the
    value size is fixed at creation. Keys are already hashes or counters, so
    the slot is util_hash64 of the key.
*/
#ifndef UTIL_IDMAP_H_INCLUDED
#define UTIL_IDMAP_H_INCLUDED

#include "util_id.h"

#include <stddef.h>

typedef struct util_idmap_t util_idmap_t;

util_idmap_t *util_idmap_new(size_t value_size);
/* A map whose keys are key_len bytes (at most 32). */
util_idmap_t *util_idmap_new_keyed(size_t key_len, size_t value_size);
void util_idmap_destroy(util_idmap_t **self_p);

/* Pointer to the value stored for key, or NULL. Valid until the next put
   or delete. */
void *util_idmap_get(util_idmap_t *self, const void *key);

/* Pointer to the value for key, inserted zero-filled if absent (*fresh set
   to 1 then); NULL when memory ran out. */
void *util_idmap_put(util_idmap_t *self, const void *key, int *fresh);

/* Remove key; 1 if it was there. */
int util_idmap_del(util_idmap_t *self, const void *key);

/* Remove every entry, keeping the table's room. */
void util_idmap_clear(util_idmap_t *self);

size_t util_idmap_size(const util_idmap_t *self);

/* Visit every entry; fn returns nonzero to stop. Do not modify the map
   from fn. */
void util_idmap_each(util_idmap_t *self, int (*fn)(void *arg, const void *key, void *value),
                     void *arg);

#endif

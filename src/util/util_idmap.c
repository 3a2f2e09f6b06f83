/*  util_idmap - open-addressing hash map from IDs to fixed-size values.

    Each slot is a used flag, the key and the value, packed in one array so
    that a probe touches one cache line or two. The table doubles at 3/4
    load. Deletion shifts later members of the cluster back, keeping every
    probe sequence unbroken without tombstones.
*/
#include "util_idmap.h"
#include "util_hash.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct util_idmap_t {
    uint8_t *slots;   /* cap slots of slot_size bytes */
    size_t cap;       /* a power of two */
    size_t size;      /* entries in use */
    size_t klen;      /* key bytes */
    size_t vsize;     /* value bytes */
    size_t koff;      /* key bytes rounded to 8: where the value starts after the key */
    size_t slot_size; /* 8 (used flag, padded) + koff + vsize rounded to 8 */
};

#define S_USED(self, i) ((self)->slots + (i) * (self)->slot_size)
#define S_KEY(self, i) (S_USED(self, i) + 8)
#define S_VAL(self, i) (S_USED(self, i) + 8 + (self)->koff)

util_idmap_t *
util_idmap_new(size_t value_size)
{
    return util_idmap_new_keyed(UTIL_ID_LEN, value_size);
}

util_idmap_t *
util_idmap_new_keyed(size_t key_len, size_t value_size)
{
    if (key_len == 0 || key_len > 32)
        return NULL;
    util_idmap_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->klen = key_len;
    self->koff = (key_len + 7) & ~(size_t) 7;
    self->vsize = value_size;
    self->slot_size = (8 + self->koff + value_size + 7) & ~(size_t) 7;
    self->cap = 16;
    self->slots = calloc(self->cap, self->slot_size);
    if (!self->slots) {
        free(self);
        return NULL;
    }
    return self;
}

void
util_idmap_destroy(util_idmap_t **self_p)
{
    if (*self_p) {
        free((*self_p)->slots);
        free(*self_p);
        *self_p = NULL;
    }
}

void
util_idmap_clear(util_idmap_t *self)
{
    memset(self->slots, 0, self->cap * self->slot_size);
    self->size = 0;
}

static size_t
s_home(const util_idmap_t *self, const void *key)
{
    return (size_t) util_hash64(key, self->klen) & (self->cap - 1);
}

static size_t
s_find(const util_idmap_t *self, const void *key, int *found)
{
    size_t i = s_home(self, key);
    for (;;) {
        if (!*S_USED(self, i)) {
            *found = 0;
            return i;
        }
        if (memcmp(S_KEY(self, i), key, self->klen) == 0) {
            *found = 1;
            return i;
        }
        i = (i + 1) & (self->cap - 1);
    }
}

static int
s_grow(util_idmap_t *self)
{
    util_idmap_t old = *self;
    self->cap *= 2;
    self->slots = calloc(self->cap, self->slot_size);
    if (!self->slots) {
        *self = old;
        return -1;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (!*S_USED(&old, i))
            continue;
        int found;
        size_t j = s_find(self, S_KEY(&old, i), &found);
        memcpy(S_USED(self, j), S_USED(&old, i), self->slot_size);
    }
    free(old.slots);
    return 0;
}

void *
util_idmap_get(util_idmap_t *self, const void *key)
{
    int found;
    size_t i = s_find(self, key, &found);
    return found ? S_VAL(self, i) : NULL;
}

void *
util_idmap_put(util_idmap_t *self, const void *key, int *fresh)
{
    int found;
    size_t i;
    if ((self->size + 1) * 4 > self->cap * 3 && s_grow(self) < 0)
        return NULL;
    i = s_find(self, key, &found);
    if (fresh)
        *fresh = !found;
    if (!found) {
        memset(S_USED(self, i), 0, self->slot_size);
        *S_USED(self, i) = 1;
        memcpy(S_KEY(self, i), key, self->klen);
        self->size++;
    }
    return S_VAL(self, i);
}

int
util_idmap_del(util_idmap_t *self, const void *key)
{
    int found;
    size_t i = s_find(self, key, &found), j;
    if (!found)
        return 0;
    /* backward shift: move each later cluster member whose home is not in
       (i, j] into the hole */
    j = i;
    for (;;) {
        j = (j + 1) & (self->cap - 1);
        if (!*S_USED(self, j))
            break;
        size_t h = s_home(self, S_KEY(self, j));
        bool between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (between)
            continue;
        memcpy(S_USED(self, i), S_USED(self, j), self->slot_size);
        i = j;
    }
    memset(S_USED(self, i), 0, self->slot_size);
    self->size--;
    return 1;
}

size_t
util_idmap_size(const util_idmap_t *self)
{
    return self->size;
}

void
util_idmap_each(util_idmap_t *self, int (*fn)(void *arg, const void *key, void *value),
                void *arg)
{
    for (size_t i = 0; i < self->cap; i++)
        if (*S_USED(self, i) && fn(arg, S_KEY(self, i), S_VAL(self, i)))
            return;
}

/*  exec_alloc - best-fit allocation of offsets, with eager coalescing.

    Every block, live or free, is a node in one growable array, addressed
    by a 32-bit index so that a node stays small (40 bytes) and the array
    may move when it grows. Three structures link the nodes:

      - a doubly linked list of all blocks in offset order: the blocks tile
        [0, size) exactly, so a block's neighbours are its list neighbours,
        and coalescing needs no search;
      - the free blocks, by size: those of up to S_NCLASS * 64 bytes
        (4 KiB) in one list per exact size, with a bitmap of the non-empty
        lists, and the larger ones in an AVL tree ordered by (size,
        offset). Best fit is the first non-empty list from the request's
        size up, else the leftmost tree node whose size is at least the
        request; the largest free block is the rightmost tree node, else
        the last non-empty list. The lists make the common case, many small
        objects, O(1) and light on cache misses: with the tree alone,
        freeing a million small blocks in random order took 1.6 us each,
        most of it cache misses on the way down the tree;
      - an open-addressing hash table from offset to live block, for
        release(), which only gets an offset (from another process, by way
        of the owner) and must refuse one that is not a live block's start.

    Released nodes are chained through `next` for reuse. reserve() first
    makes sure a spare node and a free hash slot exist, then changes the
    structures with steps that cannot fail, so an error changes nothing.

    Invariants (exec_alloc_check): the list tiles [0, size) with aligned
    blocks; no two free blocks are adjacent; the size lists and the tree
    hold exactly the free blocks, each list its size, the tree the larger
    ones in order, balanced, with correct heights; the hash holds exactly
    the live blocks; used is the sum of the live blocks' sizes.
*/
#include "exec_alloc.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define S_NIL UINT32_MAX
#define S_NCLASS 64 /* free lists for sizes 64, 128, ..., 64 * S_NCLASS */
#define S_SMALL ((uint64_t) S_NCLASS * EXEC_ALLOC_ALIGN)
#define S_EMPTY UINT64_MAX /* hash key of an empty slot (never aligned) */

typedef struct {
    uint64_t off;         /* start, a multiple of EXEC_ALLOC_ALIGN */
    uint64_t size;        /* bytes, a multiple of EXEC_ALLOC_ALIGN */
    uint32_t prev, next;  /* neighbours in offset order; next chains spare nodes */
    uint32_t left, right; /* children in the free tree, or prev and next in a size list */
    int8_t height;        /* height of the subtree in the free tree */
    bool free;            /* in the free tree, not in the hash */
} s_node_t;

typedef struct {
    uint64_t off; /* key: a live block's offset, or S_EMPTY */
    uint32_t idx; /* its node */
} s_slot_t;

struct exec_alloc_t {
    uint64_t size;           /* managed bytes, a multiple of EXEC_ALLOC_ALIGN */
    uint64_t used;           /* sum of the live blocks' sizes */
    s_node_t *node;          /* all nodes */
    uint32_t nnode;          /* nodes ever handed out (live, free or spare) */
    uint32_t capnode;        /* room in node */
    uint32_t spare;          /* chain of released nodes, through next */
    uint32_t head;           /* the block at offset 0 */
    uint32_t root;           /* of the free tree */
    uint32_t list[S_NCLASS]; /* heads of the size lists */
    uint64_t bits;           /* bit c set when list[c] is not empty */
    uint64_t nfree;          /* free blocks */
    uint64_t nlive;          /* live blocks */
    s_slot_t *slot;          /* hash table of live blocks */
    size_t capslot;          /* a power of two, at least twice nlive */
};

#define N(i) (self->node[i])

/* ------------------------------------------------------------------------
   Nodes */

/* Make sure a node can be taken without failing. */
static int
s_node_reserve(exec_alloc_t *self)
{
    if (self->spare != S_NIL || self->nnode < self->capnode)
        return 0;
    if (self->capnode >= S_NIL / 2)
        return util_err(LUX_ENOMEM, "allocator: %u blocks, no more fit the index", self->capnode);
    uint32_t cap = self->capnode ? self->capnode * 2 : 64;
    s_node_t *n = realloc(self->node, (size_t) cap * sizeof *n);
    if (!n)
        return util_err(LUX_ENOMEM, "allocator: no memory for %u block records", cap);
    self->node = n;
    self->capnode = cap;
    return 0;
}

static uint32_t
s_node_take(exec_alloc_t *self)
{
    uint32_t i = self->spare;
    if (i != S_NIL)
        self->spare = N(i).next;
    else
        i = self->nnode++;
    memset(&N(i), 0, sizeof N(i));
    N(i).prev = N(i).next = N(i).left = N(i).right = S_NIL;
    return i;
}

static void
s_node_give(exec_alloc_t *self, uint32_t i)
{
    N(i).off = S_EMPTY;
    N(i).next = self->spare;
    self->spare = i;
}

/* ------------------------------------------------------------------------
   The free tree: AVL, ordered by (size, offset) */

static int
s_height(const exec_alloc_t *self, uint32_t t)
{
    return t == S_NIL ? 0 : N(t).height;
}

static void
s_fix(exec_alloc_t *self, uint32_t t)
{
    int l = s_height(self, N(t).left), r = s_height(self, N(t).right);
    N(t).height = (int8_t) (1 + (l > r ? l : r));
}

static uint32_t
s_rot_right(exec_alloc_t *self, uint32_t y)
{
    uint32_t x = N(y).left;
    N(y).left = N(x).right;
    N(x).right = y;
    s_fix(self, y);
    s_fix(self, x);
    return x;
}

static uint32_t
s_rot_left(exec_alloc_t *self, uint32_t x)
{
    uint32_t y = N(x).right;
    N(x).right = N(y).left;
    N(y).left = x;
    s_fix(self, x);
    s_fix(self, y);
    return y;
}

/* Restore the AVL property at t, whose subtrees are balanced and differ in
   height by at most 2; the new root of the subtree. */
static uint32_t
s_balance(exec_alloc_t *self, uint32_t t)
{
    int bf = s_height(self, N(t).left) - s_height(self, N(t).right);
    if (bf > 1) {
        uint32_t l = N(t).left;
        if (s_height(self, N(l).left) < s_height(self, N(l).right))
            N(t).left = s_rot_left(self, l);
        return s_rot_right(self, t);
    }
    if (bf < -1) {
        uint32_t r = N(t).right;
        if (s_height(self, N(r).right) < s_height(self, N(r).left))
            N(t).right = s_rot_right(self, r);
        return s_rot_left(self, t);
    }
    s_fix(self, t);
    return t;
}

static bool
s_less(const exec_alloc_t *self, uint32_t a, uint32_t b)
{
    return N(a).size < N(b).size || (N(a).size == N(b).size && N(a).off < N(b).off);
}

static uint32_t
s_insert(exec_alloc_t *self, uint32_t t, uint32_t i)
{
    if (t == S_NIL) {
        N(i).left = N(i).right = S_NIL;
        N(i).height = 1;
        return i;
    }
    if (s_less(self, i, t)) {
        uint32_t l = s_insert(self, N(t).left, i);
        N(t).left = l;
    } else {
        uint32_t r = s_insert(self, N(t).right, i);
        N(t).right = r;
    }
    return s_balance(self, t);
}

/* Unlink the smallest node of t into *min (OUT); the new root. */
static uint32_t
s_remove_min(exec_alloc_t *self, uint32_t t, uint32_t *min)
{
    if (N(t).left == S_NIL) {
        *min = t;
        return N(t).right;
    }
    uint32_t l = s_remove_min(self, N(t).left, min);
    N(t).left = l;
    return s_balance(self, t);
}

/* Remove node i, which is in the tree under t; the new root. */
static uint32_t
s_remove(exec_alloc_t *self, uint32_t t, uint32_t i)
{
    if (t == i) {
        uint32_t l = N(t).left, r = N(t).right, m;
        if (r == S_NIL)
            return l;
        r = s_remove_min(self, r, &m);
        N(m).left = l;
        N(m).right = r;
        return s_balance(self, m);
    }
    if (s_less(self, i, t)) {
        uint32_t l = s_remove(self, N(t).left, i);
        N(t).left = l;
    } else {
        uint32_t r = s_remove(self, N(t).right, i);
        N(t).right = r;
    }
    return s_balance(self, t);
}

/* ------------------------------------------------------------------------
   The free blocks: size lists, then the tree */

static unsigned
s_class(uint64_t size)
{
    return (unsigned) (size / EXEC_ALLOC_ALIGN - 1);
}

/* Make block i free and findable. */
static void
s_free_add(exec_alloc_t *self, uint32_t i)
{
    N(i).free = true;
    self->nfree++;
    if (N(i).size > S_SMALL) {
        self->root = s_insert(self, self->root, i);
        return;
    }
    unsigned c = s_class(N(i).size);
    uint32_t h = self->list[c];
    N(i).left = S_NIL;
    N(i).right = h;
    if (h != S_NIL)
        N(h).left = i;
    self->list[c] = i;
    self->bits |= (uint64_t) 1 << c;
}

/* Take free block i out (its size unchanged since s_free_add). */
static void
s_free_del(exec_alloc_t *self, uint32_t i)
{
    N(i).free = false;
    self->nfree--;
    if (N(i).size > S_SMALL) {
        self->root = s_remove(self, self->root, i);
        return;
    }
    unsigned c = s_class(N(i).size);
    uint32_t p = N(i).left, q = N(i).right;
    if (p != S_NIL)
        N(p).right = q;
    else
        self->list[c] = q;
    if (q != S_NIL)
        N(q).left = p;
    if (self->list[c] == S_NIL)
        self->bits &= ~((uint64_t) 1 << c);
}

/* The smallest free block of at least n bytes (n a multiple of the
   alignment), or S_NIL. */
static uint32_t
s_best_fit(exec_alloc_t *self, uint64_t n)
{
    if (n <= S_SMALL) {
        uint64_t fit = self->bits & (~(uint64_t) 0 << s_class(n));
        if (fit)
            return self->list[__builtin_ctzll(fit)];
    }
    uint32_t t = self->root, best = S_NIL;
    while (t != S_NIL) {
        if (N(t).size >= n) {
            best = t;
            t = N(t).left;
        } else {
            t = N(t).right;
        }
    }
    return best;
}

/* ------------------------------------------------------------------------
   The hash table of live blocks: linear probing, backward-shift deletion */

static size_t
s_home(const exec_alloc_t *self, uint64_t off)
{
    return (size_t) util_mix64(off / EXEC_ALLOC_ALIGN) & (self->capslot - 1);
}

/* The slot holding off, or the empty slot where it would go. */
static size_t
s_find(const exec_alloc_t *self, uint64_t off)
{
    size_t i = s_home(self, off);
    while (self->slot[i].off != off && self->slot[i].off != S_EMPTY)
        i = (i + 1) & (self->capslot - 1);
    return i;
}

/* Move the table to cap slots; 0, or -1 (no message) keeping the old one. */
static int
s_rehash(exec_alloc_t *self, size_t cap)
{
    s_slot_t *old = self->slot;
    size_t oldcap = self->capslot;
    s_slot_t *s = malloc(cap * sizeof *s);
    if (!s)
        return -1;
    for (size_t i = 0; i < cap; i++)
        s[i].off = S_EMPTY;
    self->slot = s;
    self->capslot = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].off != S_EMPTY)
            self->slot[s_find(self, old[i].off)] = old[i];
    free(old);
    return 0;
}

/* Make sure one more live block fits at load 1/2 or less; 0 or LUX_ENOMEM. */
static int
s_hash_reserve(exec_alloc_t *self)
{
    if ((self->nlive + 1) * 2 <= self->capslot)
        return 0;
    if (s_rehash(self, self->capslot * 2) < 0)
        return util_err(LUX_ENOMEM, "allocator: no memory for a table of %zu blocks",
                        self->capslot * 2);
    return 0;
}

static void
s_hash_put(exec_alloc_t *self, uint32_t idx)
{
    size_t i = s_find(self, N(idx).off);
    self->slot[i].off = N(idx).off;
    self->slot[i].idx = idx;
    self->nlive++;
}

/* The live block at off, or S_NIL. */
static uint32_t
s_hash_get(const exec_alloc_t *self, uint64_t off)
{
    if (off == S_EMPTY)
        return S_NIL;
    size_t i = s_find(self, off);
    return self->slot[i].off == off ? self->slot[i].idx : S_NIL;
}

static void
s_hash_del(exec_alloc_t *self, uint64_t off)
{
    size_t mask = self->capslot - 1, i = s_find(self, off), j = i;
    /* move each later member of the cluster whose home is not in (i, j]
       into the hole, so that no probe sequence is broken */
    for (;;) {
        j = (j + 1) & mask;
        if (self->slot[j].off == S_EMPTY)
            break;
        size_t h = s_home(self, self->slot[j].off);
        bool between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (between)
            continue;
        self->slot[i] = self->slot[j];
        i = j;
    }
    self->slot[i].off = S_EMPTY;
    self->nlive--;
    /* give memory back after a burst of small objects; keeping the larger
       table is harmless when there is no memory for a smaller one */
    if (self->capslot > 1024 && self->nlive * 16 < self->capslot)
        s_rehash(self, self->capslot / 4);
}

/* ------------------------------------------------------------------------
   The class */

exec_alloc_t *
exec_alloc_new(uint64_t size)
{
    size -= size % EXEC_ALLOC_ALIGN;
    if (size == 0) {
        util_err(LUX_EINVAL, "allocator: size below %d bytes", EXEC_ALLOC_ALIGN);
        return NULL;
    }
    exec_alloc_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "allocator: out of memory");
        return NULL;
    }
    self->size = size;
    self->spare = self->root = S_NIL;
    for (int c = 0; c < S_NCLASS; c++)
        self->list[c] = S_NIL;
    if (s_node_reserve(self) || s_rehash(self, 64) < 0) {
        util_err(LUX_ENOMEM, "allocator: out of memory");
        exec_alloc_destroy(&self);
        return NULL;
    }
    self->head = s_node_take(self);
    N(self->head).size = size;
    s_free_add(self, self->head);
    return self;
}

void
exec_alloc_destroy(exec_alloc_t **self_p)
{
    exec_alloc_t *self = *self_p;
    if (self) {
        free(self->node);
        free(self->slot);
        free(self);
        *self_p = NULL;
    }
}

int
exec_alloc_reserve(exec_alloc_t *self, uint64_t n, uint64_t *off)
{
    int rc;
    if (n == 0 || n > self->size)
        return util_err(LUX_EINVAL, "allocator: cannot reserve %llu bytes of %llu",
                        (unsigned long long) n, (unsigned long long) self->size);
    uint64_t want = (n + EXEC_ALLOC_ALIGN - 1) & ~(uint64_t) (EXEC_ALLOC_ALIGN - 1);
    uint32_t i = s_best_fit(self, want);
    if (i == S_NIL)
        return util_err(LUX_EFULL,
                        "no free block of %llu bytes (largest %llu, %llu of %llu used, "
                        "%llu blocks)",
                        (unsigned long long) want,
                        (unsigned long long) exec_alloc_largest_free(self),
                        (unsigned long long) self->used, (unsigned long long) self->size,
                        (unsigned long long) (self->nlive + self->nfree));
    if ((rc = s_node_reserve(self)) || (rc = s_hash_reserve(self)))
        return rc;

    /* nothing below can fail */
    s_free_del(self, i);
    if (N(i).size > want) {
        uint32_t j = s_node_take(self);
        N(j).off = N(i).off + want;
        N(j).size = N(i).size - want;
        N(j).prev = i;
        N(j).next = N(i).next;
        if (N(i).next != S_NIL)
            N(N(i).next).prev = j;
        N(i).next = j;
        N(i).size = want;
        s_free_add(self, j);
    }
    s_hash_put(self, i);
    self->used += want;
    *off = N(i).off;
    return 0;
}

/* Unlink node i from the offset list and recycle it. */
static void
s_unlink(exec_alloc_t *self, uint32_t i)
{
    if (N(i).prev != S_NIL)
        N(N(i).prev).next = N(i).next;
    if (N(i).next != S_NIL)
        N(N(i).next).prev = N(i).prev;
    s_node_give(self, i);
}

int
exec_alloc_release(exec_alloc_t *self, uint64_t off)
{
    uint32_t i = s_hash_get(self, off);
    if (i == S_NIL) {
        const char *why = off >= self->size        ? "beyond the end"
                          : off % EXEC_ALLOC_ALIGN ? "misaligned"
                                                   : "not the start of a live block";
        return util_err(LUX_EINVAL, "release of offset %llu: %s", (unsigned long long) off, why);
    }
    s_hash_del(self, off);
    self->used -= N(i).size;

    uint32_t p = N(i).prev, q = N(i).next;
    if (p != S_NIL && N(p).free) {
        s_free_del(self, p);
        N(p).size += N(i).size;
        s_unlink(self, i);
        i = p;
    }
    if (q != S_NIL && N(q).free) {
        s_free_del(self, q);
        N(i).size += N(q).size;
        s_unlink(self, q);
    }
    s_free_add(self, i);
    return 0;
}

uint64_t
exec_alloc_block(exec_alloc_t *self, uint64_t off)
{
    uint32_t i = s_hash_get(self, off);
    return i == S_NIL ? 0 : N(i).size;
}

uint64_t
exec_alloc_size(exec_alloc_t *self)
{
    return self->size;
}

uint64_t
exec_alloc_used(exec_alloc_t *self)
{
    return self->used;
}

uint64_t
exec_alloc_largest_free(exec_alloc_t *self)
{
    uint32_t t = self->root;
    if (t == S_NIL)
        return self->bits ? (uint64_t) (64 - __builtin_clzll(self->bits)) * EXEC_ALLOC_ALIGN : 0;
    while (N(t).right != S_NIL)
        t = N(t).right;
    return N(t).size;
}

/* ------------------------------------------------------------------------
   The check */

/* Check the subtree t (in order, heights, AVL balance, free flags); its
   height, or -1 with the message set. *count gains its nodes, *last is the
   previous node in order. */
static int
s_check_tree(exec_alloc_t *self, uint32_t t, uint64_t *count, uint32_t *last, int depth)
{
    if (t == S_NIL)
        return 0;
    if (t >= self->nnode || depth > 64) {
        util_err(LUX_ECORRUPT, "free tree: bad node %u at depth %d", t, depth);
        return -1;
    }
    int l = s_check_tree(self, N(t).left, count, last, depth + 1);
    if (l < 0)
        return -1;
    if (!N(t).free || N(t).size <= S_SMALL) {
        util_err(LUX_ECORRUPT, "free tree: block at %llu (%llu bytes) is not free or too small",
                 (unsigned long long) N(t).off, (unsigned long long) N(t).size);
        return -1;
    }
    if (*last != S_NIL && !s_less(self, *last, t)) {
        util_err(LUX_ECORRUPT, "free tree: out of order at block %llu",
                 (unsigned long long) N(t).off);
        return -1;
    }
    *last = t;
    (*count)++;
    int r = s_check_tree(self, N(t).right, count, last, depth + 1);
    if (r < 0)
        return -1;
    int h = 1 + (l > r ? l : r);
    if (N(t).height != h || l - r > 1 || r - l > 1) {
        util_err(LUX_ECORRUPT, "free tree: block at %llu: height %d, subtrees %d and %d",
                 (unsigned long long) N(t).off, N(t).height, l, r);
        return -1;
    }
    return h;
}

int
exec_alloc_check(exec_alloc_t *self)
{
    uint64_t pos = 0, used = 0, nlive = 0, nfree = 0, intree = 0;
    uint32_t prev = S_NIL, last = S_NIL;
    bool prevfree = false;

    for (uint32_t i = self->head; i != S_NIL; i = N(i).next) {
        if (i >= self->nnode || nlive + nfree > self->nnode)
            return util_err(LUX_ECORRUPT, "block list: bad node %u after %llu", i,
                            (unsigned long long) pos);
        if (N(i).prev != prev)
            return util_err(LUX_ECORRUPT, "block list: block at %llu has a wrong prev",
                            (unsigned long long) N(i).off);
        if (N(i).off != pos || N(i).size == 0 || N(i).size % EXEC_ALLOC_ALIGN ||
            N(i).size > self->size - pos)
            return util_err(LUX_ECORRUPT,
                            "block list: block at %llu of %llu bytes where %llu was expected",
                            (unsigned long long) N(i).off, (unsigned long long) N(i).size,
                            (unsigned long long) pos);
        if (N(i).free && prevfree)
            return util_err(LUX_ECORRUPT, "block list: free blocks at %llu and before, unmerged",
                            (unsigned long long) N(i).off);
        if (N(i).free) {
            nfree++;
        } else {
            nlive++;
            used += N(i).size;
            if (s_hash_get(self, N(i).off) != i)
                return util_err(LUX_ECORRUPT, "hash: live block at %llu is missing",
                                (unsigned long long) N(i).off);
        }
        prevfree = N(i).free;
        pos += N(i).size;
        prev = i;
    }
    if (pos != self->size)
        return util_err(LUX_ECORRUPT, "block list: blocks cover %llu of %llu bytes",
                        (unsigned long long) pos, (unsigned long long) self->size);
    if (used != self->used)
        return util_err(LUX_ECORRUPT, "used is %llu, live blocks hold %llu",
                        (unsigned long long) self->used, (unsigned long long) used);
    if (nlive != self->nlive || nfree != self->nfree)
        return util_err(LUX_ECORRUPT, "counts: %llu live and %llu free, recorded %llu and %llu",
                        (unsigned long long) nlive, (unsigned long long) nfree,
                        (unsigned long long) self->nlive, (unsigned long long) self->nfree);
    if (s_check_tree(self, self->root, &intree, &last, 0) < 0)
        return LUX_ECORRUPT;
    for (unsigned c = 0; c < S_NCLASS; c++) {
        uint32_t p = S_NIL;
        if ((self->list[c] != S_NIL) != !!(self->bits & ((uint64_t) 1 << c)))
            return util_err(LUX_ECORRUPT, "size list %u: bitmap disagrees", c);
        for (uint32_t i = self->list[c]; i != S_NIL; p = i, i = N(i).right) {
            if (i >= self->nnode || intree > nfree)
                return util_err(LUX_ECORRUPT, "size list %u: bad node %u", c, i);
            if (!N(i).free || s_class(N(i).size) != c || N(i).size > S_SMALL || N(i).left != p)
                return util_err(LUX_ECORRUPT, "size list %u: wrong block at %llu (%llu bytes)", c,
                                (unsigned long long) N(i).off, (unsigned long long) N(i).size);
            intree++;
        }
    }
    if (intree != nfree)
        return util_err(LUX_ECORRUPT, "free tree and lists hold %llu blocks, the list %llu free",
                        (unsigned long long) intree, (unsigned long long) nfree);
    size_t inhash = 0;
    for (size_t i = 0; i < self->capslot; i++)
        inhash += self->slot[i].off != S_EMPTY;
    if (inhash != nlive)
        return util_err(LUX_ECORRUPT, "hash holds %zu blocks, the list %llu live", inhash,
                        (unsigned long long) nlive);
    return 0;
}

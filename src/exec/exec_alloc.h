/*  exec_alloc - an allocator of offsets: blocks of [0, size), with all its
    bookkeeping in the caller's heap.

    It hands out offsets, never pointers, and never touches the memory they
    stand for. That is what the object store needs: the arena's bytes are
    shared with other processes (exec_arena), and nothing they write there
    can confuse the allocator, because nothing of the allocator is there.

    Blocks start at multiples of EXEC_ALLOC_ALIGN and their sizes are
    rounded up to it. Best fit; adjacent free blocks are merged at once, so
    freeing everything leaves one free block. reserve and release are
    O(log n) in the number of blocks: free blocks sit in a balanced tree
    ordered by size, every block in a list ordered by offset, and live
    blocks in a hash table by offset. About 100 bytes of heap per block.

    One exec_alloc_t is used by one thread at a time.
*/
#ifndef EXEC_ALLOC_H_INCLUDED
#define EXEC_ALLOC_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#define EXEC_ALLOC_ALIGN 64

typedef struct exec_alloc_t exec_alloc_t;

/* An allocator of [0, size); size is rounded down to EXEC_ALLOC_ALIGN.
   NULL when size is below EXEC_ALLOC_ALIGN or memory ran out, with the
   error message set. */
exec_alloc_t *exec_alloc_new(uint64_t size);
void exec_alloc_destroy(exec_alloc_t **self_p);

/* Reserve n bytes (rounded up to EXEC_ALLOC_ALIGN) at *off (OUT). 0;
   LUX_EINVAL when n is 0 or above the size; LUX_EFULL when no free block
   is big enough; LUX_ENOMEM when the bookkeeping could not grow. Nothing
   changes on error. */
int exec_alloc_reserve(exec_alloc_t *self, uint64_t n, uint64_t *off);

/* Release the block that starts at off. 0; LUX_EINVAL, changing nothing,
   when no live block starts there (out of range, misaligned, free, or
   inside a block). */
int exec_alloc_release(exec_alloc_t *self, uint64_t off);

/* The size (rounded) of the live block that starts at off; 0 when none. */
uint64_t exec_alloc_block(exec_alloc_t *self, uint64_t off);

uint64_t exec_alloc_size(exec_alloc_t *self); /* as managed */
uint64_t exec_alloc_used(exec_alloc_t *self); /* live bytes, rounded */
uint64_t exec_alloc_largest_free(exec_alloc_t *self);

/* Check every invariant (O(n), for tests): 0 or LUX_ECORRUPT saying which
   one failed. */
int exec_alloc_check(exec_alloc_t *self);

#endif

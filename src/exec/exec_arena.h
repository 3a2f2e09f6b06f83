/*  exec_arena - the object store's shared memory: one file in /dev/shm that
    the node manager creates and allocates in, and that the other processes
    of the node (workers, drivers) map by name to read and write objects in
    place.

    Roles. The creator (the node manager) owns the allocator: it alone calls
    exec_arena_alloc/free and hands offsets to the others in messages. The
    allocator's bookkeeping lives in the creator's heap (exec_alloc), never
    in the shared file, so a worker that scribbles over the arena damages
    objects but never the allocator. Other processes open the arena by name,
    read-write or read-only, and turn offsets into pointers with
    exec_arena_base(). The file has mode 0600: only the same user maps it.
    The creator calls alloc and free from one thread at a time.

    Names. The caller names the arena ("lux-node-1f3a"; a leading '/' is
    optional, no other '/'); the file is /dev/shm/<name>. Creating refuses a
    name that exists: it may belong to a live node manager. One left behind
    by a node manager that was killed is removed by exec_arena_sweep, which
    goes by the creator's pid in the name (exec_node names its store
    lux-<uid>-<pid>-<node>), and exec_arena_unlink_all removes this
    process's from a signal handler. The creator unlinks it in destroy; a
    process forked from the creator never does. Processes that still map an
    unlinked arena keep a valid mapping; its memory goes back to the system
    when the last of them unmaps it.

    Why names and not a descriptor: unlinking the file at once and passing
    its descriptor would free it with the last process whatever happens,
    but drivers started on their own (`lux run --address`) open the store
    by name over the node's socket, which would have to carry descriptors
    (SCM_RIGHTS) through every client's handshake. A name with the pid
    needs nothing from the clients, and a store left by a kill -9 lives
    only until the next node manager of its user starts or `lux stop`.

    Memory. The file is sparse: an 8 GiB arena costs nothing until its
    pages are written, and each page is allocated (and zeroed by the kernel)
    on its first write, by whichever process writes it first. Measured on
    the development machine (2 cores, 4 KiB pages, shmem without huge
    pages), memset of 2 GiB:
        fresh pages (allocate, zero, map)           0.5 - 1.0 GB/s
        pages in the file, not yet mapped here       2.2 GB/s (a minor fault each)
        pages mapped here                           22   GB/s
    exec_arena_prefault() pays the first two costs ahead of time, in one
    system call (MADV_POPULATE_WRITE):
        fresh pages                                  1.5 GB/s
        pages in the file, not yet mapped here       4.9 GB/s (9.5 read-only)
    after which writes run at the mapped rate. Zeroing bounds the fresh
    case; prefaulting does not make it cheap, it can only move it off a
    path that waits. The node manager hands out blocks unfaulted, and each
    writer makes its block ready itself (below). The fallback for kernels
    before 5.14 (a write per page) runs at the first-write rate; there a
    full /dev/shm still kills the writer.
    Page tables are per process: each process that touches all of an
    8 GiB arena holds 16 MiB of them.

    Full /dev/shm. Writing a page when /dev/shm (a tmpfs) has no room left
    kills the writer with SIGBUS. Creating therefore refuses an arena larger
    than the free space of /dev/shm at that moment (LUX_EFULL), and
    exec_arena_prefault() reports LUX_EFULL instead of faulting. Other users
    of /dev/shm can still use up the room later; so every writer Lux has
    makes its block ready first (exec_arena_ready): the client before
    lux_put copies a value in and before lux_set_alloc hands a task its
    room, the node manager before it restores a spilled object. A full
    /dev/shm is then LUX_EFULL to the caller (t/5104-shm-full), and the
    room goes back. The writer pays what its first writes would have paid,
    once per 64 KiB of the arena in each process.
*/
#ifndef EXEC_ARENA_H_INCLUDED
#define EXEC_ARENA_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct exec_arena_t exec_arena_t;

/* Create the arena `name` of size bytes (rounded up to the page size),
   map it read-write and become its owner. NULL on failure, with the error
   message set: LUX_EEXIST when the name is taken, LUX_EFULL when /dev/shm
   has not that much room, LUX_EINVAL for a bad name or size 0, LUX_EIO. */
exec_arena_t *exec_arena_create(const char *name, size_t size);

/* The same with a spare region of `spare` more bytes (rounded up to the
   page size) after the store's: address space, not memory. The store
   allocates there only when its own blocks are too fragmented for an
   object whose bytes it has (exec_arena_alloc_spare); a freed spare
   block's pages go back to the system at once (MADV_REMOVE), so the
   region costs memory only for the objects in it. Only `size` must be
   free in /dev/shm. exec_arena_size() is size + spare. */
exec_arena_t *exec_arena_create_spare(const char *name, size_t size, size_t spare);

/* Map the existing arena `name`, read-write or read-only. NULL on failure,
   with the message set: LUX_ENOTFOUND, LUX_EAUTH (not ours), LUX_EIO. */
exec_arena_t *exec_arena_open(const char *name, bool writable);

/* Unmap; the creator also removes the file. Pointers into the arena are
   invalid afterwards. Idempotent; nulls *self_p. */
void exec_arena_destroy(exec_arena_t **self_p);

/* Remove the files of arenas left behind by processes that are gone:
   those named prefix<pid>-... (exec_node names its store
   "lux-<uid>-<pid>-<node>") whose pid is not a live process. A live pid,
   even one reused by another program, keeps its file: a wrong guess
   leaks, it never removes a store in use. Returns how many were removed. */
int exec_arena_sweep(const char *prefix);

/* Remove the file of every arena this process created and has not
   destroyed (the mappings stay valid). Async-signal-safe: for a handler of
   a signal that ends the process. */
void exec_arena_unlink_all(void);

/* The first byte of the mapping: offset off is at base + off. */
uint8_t *exec_arena_base(exec_arena_t *self);

/* Mapped bytes: the size as created, rounded up to the page size. */
size_t exec_arena_size(exec_arena_t *self);

/* The name as given to shm_open ("/lux-node-1f3a"). */
const char *exec_arena_name(exec_arena_t *self);

/* For a process that opened the arena: offsets from `store` on are the
   creator's spare region, whose pages come and go, so exec_arena_ready
   never takes them as ready for good. The creator knows it already. */
void exec_arena_set_store(exec_arena_t *self, uint64_t store);

/* Populate [off, off + n) (widened to whole pages) in this process's
   mapping, allocating what is not in the file yet, so that later accesses
   take no page faults; see "Memory" above for what it costs. A read-only
   mapping is populated for reading. 0; LUX_EINVAL when the range is not in
   the arena; LUX_EFULL when /dev/shm has no room for it; LUX_ENOMEM. */
int exec_arena_prefault(exec_arena_t *self, uint64_t off, size_t n);

/* Make [off, off + n) safe to write from this process: prefault (above)
   what this process has not made ready before, in chunks of 64 KiB (a
   little around the range may be populated too). Pages once in the file
   stay there while the arena lives, so a range made ready stays ready
   and costs nothing the next time; in the spare region (pages given back
   on free) a range is prefaulted every time. 0, or exec_arena_prefault's codes
   (LUX_EFULL when /dev/shm has no room). One thread at a time. */
int exec_arena_ready(exec_arena_t *self, uint64_t off, size_t n);

/* The creator: warm the store ([0, store), not the spare region) on a
   thread of its own at nice 19: populated 2 MiB at a time, and each page
   written once through this mapping (an atomic add of 0), so that this
   process's first reads and writes of it later cost what later ones do.
   On this project's VM the first write to a page through a mapping costs
   about 11 us even after MADV_POPULATE_WRITE, with no page fault the
   guest counts (doc/benchmarks.md, 2026-11-29 stop 43): a node's first
   pull of 1 GiB paid it at both ends. It takes all of the store's memory
   from /dev/shm at once and about 3 CPU-s per GiB here; logged when done
   ("store warm"). exec_arena_destroy stops it (within 2 MiB). 0, or
   LUX_EIO when the thread cannot start. */
int exec_arena_warm_start(exec_arena_t *self);
/* Whether that thread has warmed all of the store. */
bool exec_arena_warmed(exec_arena_t *self);

/* --- the creator only ------------------------------------------------------
   On an arena that was opened, not created, alloc and free fail with
   LUX_ESTATE and the statistics are 0. */

/* Allocate n bytes (rounded up to 64; every block starts 64-byte aligned)
   at *off (OUT). 0; LUX_EINVAL when n is 0 or above the size; LUX_EFULL
   when no free block is big enough; LUX_ENOMEM. Nothing changes on error.
   The bytes keep whatever an earlier block left there (not zeroed). */
int exec_arena_alloc(exec_arena_t *self, size_t n, uint64_t *off);

/* The same in the spare region (exec_arena_create_spare): LUX_EFULL when
   there is none or no block of it is big enough. */
int exec_arena_alloc_spare(exec_arena_t *self, size_t n, uint64_t *off);

/* Free the block at off, merging it with free neighbours. An offset that
   is not a live block's start (a peer's mistake, a double free) is logged,
   changes nothing and returns LUX_EINVAL; callers may ignore the result.
   The block's pages stay in the file, holding its old bytes, until a new
   block placed there reuses them: memory once touched is not given back
   to the system while the arena lives; a spare block's whole pages go
   back at once. */
int exec_arena_free(exec_arena_t *self, uint64_t off);

/* Bytes allocated, alignment included, spare region included. */
size_t exec_arena_used(exec_arena_t *self);

/* Bytes allocated in the spare region. */
size_t exec_arena_spare_used(exec_arena_t *self);

/* The largest block that an alloc (not alloc_spare) would succeed for now. */
size_t exec_arena_largest_free(exec_arena_t *self);

/* Check the allocator's invariants (O(blocks), for tests): 0 or
   LUX_ECORRUPT with the broken invariant in the message. */
int exec_arena_check(exec_arena_t *self);

#endif

/*  exec_spill - objects spilled to disk, one LZ4-compressed file each, read
    back on demand.

    The file is one standard LZ4 frame (`lz4 -d` reads it), with the content
    size in its header and a checksum of the content at its end, so that
    damage anywhere (header, block, checksum, truncation) is found when the
    object is read back. Writing and reading stream in blocks of 4 MiB: a
    1 GB object needs about 10 MiB of buffers, not a second gigabyte.

    Cost, measured on the development machine (2 cores, virtual disk;
    1 GB objects; the disk makes these figures vary by about 30%):
                              spill write     spill read      raw file
        random bytes          0.4-0.6 GB/s    1.5-2.0 GB/s    0.8 / 2.7 GB/s
        float weights         0.55-0.65       1.7-1.95        0.85 / 2.7
        zeros (ratio 255)     2.0             2.25            0.7 / 2.1
    where "raw file" is write+fsync / read of the same bytes uncompressed,
    and reads are from the page cache (from disk: 1.1-1.8 GB/s on random).
    On data that does not compress, LZ4 itself costs about a copy: it
    gives up on such a block at 12 GB/s and the frame stores it raw. The
    cost is the content checksum (XXH32, 2.7 GB/s on this CPU), in both
    directions: compressing runs at 2.2 GB/s with it, 12 without, and
    decompressing at 2.1 with it, 10 without. The checksum is what finds
    damage in a raw block, so it stays. A writer thread that overlapped
    compressing with write(2) gained nothing measurable here.

    Writing goes to <path>.tmp, then fsync, then rename over path: a reader
    never sees a half-written file under path, and after a crash path holds
    the old object or the new one. The .tmp of a crashed write may be left
    behind; the next write of the same path replaces it.
*/
#ifndef EXEC_SPILL_H_INCLUDED
#define EXEC_SPILL_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* Write the n bytes at data to path (see above). 0; LUX_EFULL when the
   disk is full; LUX_EIO; LUX_ENOMEM. On error path is unchanged and the
   temporary file removed. A test may hold it at its start with
   LUX_TEST_SPILL_GATE=PATH (exec_spill.c, t/3135). */
int exec_spill_write(const char *path, const void *data, size_t n);

/* Read the object at path into dst, which holds exactly n bytes. 0;
   LUX_ENOTFOUND when there is no such file; LUX_ECORRUPT when the file is
   not an LZ4 frame, is damaged or truncated, or does not hold exactly n
   bytes; LUX_EIO; LUX_ENOMEM. On error dst holds garbage: a damaged block
   may be found only by the checksum at the end. */
int exec_spill_read(const char *path, void *dst, size_t n);

/* The size of the object at path, from the frame header (the rest of the
   file is not checked), or LUX_ENOTFOUND, LUX_ECORRUPT, LUX_EIO. */
int64_t exec_spill_size(const char *path);

/* The tests' hooks: with LUX_TEST_SPILL_GATE=PATH (t/3135), a spill's
   write, and with LUX_TEST_BLOB_GATE=PATH (t/3133) a blob's, first makes
   PATH.waiting and then waits until PATH exists (at most 120 s), so that
   a test can hold a write in progress and see what the node does
   meanwhile; with LUX_TEST_LOCATE_GATE=PATH (t/6133) the head's locator
   so waits between its two reads of the log when the first found no
   holder (exec_xfer_loc.c). */
enum { EXEC_GATE_SPILL, EXEC_GATE_BLOB, EXEC_GATE_LOCATE, EXEC_GATES };
void exec_test_gate(int which);
/* ... and a spill written by the writer thread and handed over to the
   node (exec_spill_writer_done will give it) appends the line "what" to
   PATH.done, so that a test can wait for that event (t/3123, t/3135). */
void exec_test_gate_passed(int which, const char *what);

/* A thread that writes spills (exec_spill_write) in the order queued, so
   that the node's loop never waits for the disk: a spill of 1 GiB (lz4,
   write, fsync) took seconds there, during which the node answered
   nothing, heartbeats included. The bytes a write reads must stay put
   until it is handed back by exec_spill_writer_done. */
typedef struct exec_spill_writer_t exec_spill_writer_t;

/* NULL (and a message) when no thread could be started. */
exec_spill_writer_t *exec_spill_writer_new(void);

/* Stop: the write in progress ends, then every write not yet handed back
   is, through fn as in exec_spill_writer_done (those never started with
   LUX_ECANCELLED); *self_p is NULL afterwards. A write in progress that
   has not ended after wait_ms (a hung disk) is not waited for: 0, or
   LUX_ETIMEDOUT naming its path; that write is not handed back, its
   thread goes on and, if the write ever ends, calls abandon(arg) (arg as
   queued, never handed back) and frees itself. */
int exec_spill_writer_destroy(exec_spill_writer_t **self_p,
                              void (*fn)(void *ctx, void *arg, int rc, const char *msg),
                              void *ctx, int wait_ms, void (*abandon)(void *arg));

/* Queue the write of the n bytes at data to path, arg handed back when it
   is done. 0 or LUX_ENOMEM. */
int exec_spill_writer_queue(exec_spill_writer_t *self, const char *path, const void *data,
                            size_t n, void *arg);

/* Hand back each write done since the last call, in the order queued:
   fn(ctx, arg, rc, message) (message "" when rc is 0). How many. */
int exec_spill_writer_done(exec_spill_writer_t *self,
                           void (*fn)(void *ctx, void *arg, int rc, const char *msg), void *ctx);

#endif

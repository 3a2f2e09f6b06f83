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

#endif

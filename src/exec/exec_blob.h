/*  exec_blob - the puts recorded for replay: a content-addressed store
    beside the log, DIR/blobs/<fingerprint>.lz4.

    A put's bytes are not in the log (an argument value is, up to
    LUX_VAL_MAX; a put may be gigabytes), so the node manager keeps them
    here, under the cluster's recording policy (record_puts in
    cluster.conf: the largest put kept). Each blob is one LZ4 frame written
    by exec_spill_write (content size and checksum in the frame, written
    to a temporary name and renamed), named by the fingerprint of its
    bytes that the object_put event records: the same bytes put twice are
    one file. Reading one back checks the frame and then the fingerprint
    against the name, so a blob altered, truncated or swapped for another
    is refused, naming the blob.

    A put of at most EXEC_BLOB_IN_EVENT_MAX bytes is not kept here: its
    bytes go in its own object_put event (the event's body), as an
    argument value goes in its task's (exec_node_blob.c says why).
*/
#ifndef EXEC_BLOB_H_INCLUDED
#define EXEC_BLOB_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/* The largest put recorded in its object_put event rather than in a blob
   (DESIGN "Recording puts"): below a 4 KiB block a blob file costs the
   disk more than its bytes (a block, an inode, an fsync of its own), and
   the event, with its other fields, stays within one 4 KiB page of the
   log's SQLite file (a row over 4,061 bytes spills to overflow pages). */
#define EXEC_BLOB_IN_EVENT_MAX 2048

/* DIR/blobs/<32 hex digits>.lz4 into out[n]; out. */
char *exec_blob_path(const char *blobs, const uint8_t fp[16], char *out, size_t n);

/* Keep the n bytes at data, whose fingerprint is fp, in the directory
   blobs (made on first use). *fresh: false when it was there already.
   0, or LUX_EIO, LUX_EFULL, LUX_ENOMEM with the message set. */
int exec_blob_write(const char *blobs, const uint8_t fp[16], const void *data, size_t n,
                    int *fresh);

/* Read the blob of fingerprint fp, of size bytes, into a new buffer
   (*out, free()), checking its fingerprint. 0; LUX_ENOTFOUND when it was
   not recorded; LUX_ECORRUPT when its frame is damaged or its bytes do
   not hash to fp; LUX_EIO; LUX_ENOMEM. */
int exec_blob_read(const char *blobs, const uint8_t fp[16], size_t size, uint8_t **out);

#endif

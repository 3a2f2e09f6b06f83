/*  exec_node_blob - the node manager's half of recording puts for replay:
    each put's bytes written by a thread of its own, its object_put event
    held until then (see exec_node_blob.c).
*/
#ifndef EXEC_NODE_BLOB_H_INCLUDED
#define EXEC_NODE_BLOB_H_INCLUDED

#include "exec_node_int.h"

/* Put o's bytes for its object_put event's body, when the cluster records
   puts of its size (record_puts) and it is small enough to go there
   (EXEC_BLOB_IN_EVENT_MAX): they are then recorded with the event, with
   no blob, no writer and no wait. NULL when it is not: nm_blob_record
   then says what becomes of it. The pointer is valid until o changes. */
const void *nm_blob_in_event(nm_t *nm, const nm_obj_t *o);

/* Keep put o's bytes for replay, under the cluster's
   record_puts. NULL when nothing is to be written (info[n] says why, for
   its object_put event); else a write for the blob writer thread, to be
   given to nm_blob_start with the held event it completes (info is then
   provisional). */
typedef struct nm_blob_job nm_blob_job_t;

nm_blob_job_t *nm_blob_record(nm_t *nm, nm_obj_t *o, char *info, size_t n);

/* What the blob writer calls, on the node's loop, once a job's write is
   done (or failed): held is what nm_blob_start was given, info the final
   word on the put's bytes for its event. */
typedef void (nm_blob_done_fn)(nm_t *nm, void *held, const char *info);

/* Queue job (o stays pinned until it is written); when it is, done(held,
   info) is called (the log's held object_put event gets its info). */
void nm_blob_start(nm_t *nm, nm_blob_job_t *job, nm_blob_done_fn *done, void *held);

/* Finish the writes that are done (from nm_log_tick). */
void nm_blob_tick(nm_t *nm);

/* How many puts the writer holds pinned (queued or written, not yet
   finished by nm_blob_tick), and their bytes: for a "no room" error. */
void nm_blob_census(nm_t *nm, uint64_t *n, uint64_t *bytes);

typedef struct nm_blobw nm_blobw_t;

/* The writer thread (for nm->blobw; made on the first nm_blob_start): NULL
   when it cannot be made (puts are then written on the loop). */
nm_blobw_t *nm_blob_new(nm_t *nm);
/* Wait for every queued write, finish them, and stop the writer. self_p
   is &nm->blobw (finishing reaches it there). */
void nm_blob_destroy(nm_blobw_t **self_p);

#endif

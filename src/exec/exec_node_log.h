/*  exec_node_log - the node manager's events in the log: what it appends,
    write-ahead lineage (an event waits for the events it names), which
    results may leave, and lookups of lineage and actor calls (see
    exec_node_log.c, DESIGN section 4).
*/
#ifndef EXEC_NODE_LOG_H_INCLUDED
#define EXEC_NODE_LOG_H_INCLUDED

#include "exec_node_int.h"

typedef struct nm_log nm_log_t;

/* The node's side of the log (for nm->lg), with nm->log, its client of
   the log's head: NULL with the message (no key, the log unreachable). */
nm_log_t *nm_log_new(nm_t *nm);
/* What is held is flushed first (at most S_CLOSE_MS, what is left is
   reported), then nm->log goes. self_p is &nm->lg: the flush reaches the
   state there. */
void nm_log_destroy(nm_log_t **self_p);

void nm_log_submitted(nm_t *nm, nm_task_t *t);
/* Whether id is a task's output (not a put) whose task_submitted the
   log does not have (yet): its making may be logged by the node that
   ran it before the node that submitted it logged its lineage (t/6091
   --harsh: 390 ms after). */
bool nm_log_lineage_missing(nm_t *nm, const lux_ref_t *id);

void nm_log_finished(nm_t *nm, nm_task_t *t, nm_worker_t *w, const exec_result_t *r,
                     uint64_t out_bytes, const uint8_t fp[16]);

void nm_log_retried(nm_t *nm, nm_task_t *t, const char *why);

void nm_log_put(nm_t *nm, nm_obj_t *o);

void nm_log_object(nm_t *nm, nm_obj_t *o, int kind, const char *info);

/* o is a copy of an object pulled from node `from` (exec_xfer.c):
   object_copied, with its size and fingerprint. */
void nm_log_copied(nm_t *nm, nm_obj_t *o, const util_id_t *from);

void nm_log_job(nm_t *nm, nm_client_t *c, int kind, const char *name, const char *info,
                int status);

void nm_log_module(nm_t *nm, const util_id_t *job, const uint8_t hash[16], const uint8_t *bytes,
                   size_t n, const char *name);

void nm_log_node(nm_t *nm);

void nm_log_tick(nm_t *nm);                      /* flush, take acks, release held events */

void nm_log_flush_urgent(nm_t *nm); /* an actor call's event now, unless a batch is in flight */

/* Why task's pending event does not commit: its shard's head failed;
   NULL when it is not pending or nothing is known to be wrong. With task
   NULL: whether any shard's head failed. */
const char *nm_log_failed(nm_t *nm, const util_id_t *task);

bool nm_log_busy(nm_t *nm);                      /* events not yet acknowledged or held */

int64_t nm_log_due_ms(nm_t *nm); /* ms to the next timed flush of queued events; -1: none */

/* Whether the lineage event of task (its submission, or an actor's call)
   is not committed yet. */
bool nm_log_pending(nm_t *nm, const util_id_t *task);

/* Find how the task that made id was submitted, from the log. 0, or
   LUX_ENOTFOUND. The spec points into *buf. */
int nm_log_lookup(nm_t *nm, const util_id_t *task, exec_spec_t *spec, util_buf_t *buf);

/* Whether the log has an object_put event for id (a put, which has no
   lineage to rebuild it from). */
bool nm_log_was_put(nm_t *nm, const lux_ref_t *id);

/* The actor's actor_call events with idx above after, in log order. */
int nm_log_actor_calls(nm_t *nm, const util_id_t *actor, uint64_t after,
                       int (*cb)(void *arg, const db_event_t *e), void *arg);

void nm_log_actor_created(nm_t *nm, nm_actor_t *a);

void nm_log_actor_call(nm_t *nm, nm_actor_t *a, nm_task_t *t);

void nm_log_actor_checkpoint(nm_t *nm, nm_actor_t *a, nm_task_t *save, nm_obj_t *o);

void nm_log_actor_restarted(nm_t *nm, nm_actor_t *a, uint64_t calls);

void nm_log_actor_died(nm_t *nm, nm_actor_t *a);

#endif

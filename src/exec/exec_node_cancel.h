/*  exec_node_cancel - cancelling tasks (lux_cancel), the end of a departed
    driver's job, and per-task timeouts (see exec_node_cancel.c).
*/
#ifndef EXEC_NODE_CANCEL_H_INCLUDED
#define EXEC_NODE_CANCEL_H_INCLUDED

#include "exec_node_int.h"

/* Give the task graph the calls it makes to this part (nm->ops). */
void nm_cancel_open(nm_t *nm);

/* CANCEL from client c: cancel a task (lux_cancel), and answer. */
void nm_cancel_op(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n);

/* Driver c leaves or died: its job's unfinished tasks are cancelled with
   force, unless it is detached. */
void nm_cancel_job(nm_t *nm, nm_client_t *c);

/* Worker w is gone: the cancelled tasks it held fail as cancelled, and
   when there were any, the others go back to the queue uncharged (it was
   killed for those). Called first by nm_worker_gone. */
void nm_cancel_worker_gone(nm_t *nm, nm_worker_t *w);

/* A worker reported t, which was cancelled meanwhile: t fails as
   cancelled (whatever it returned). True when it did. */
bool nm_cancel_result(nm_t *nm, nm_task_t *t);

/* t was handed to a worker: its timeout starts. */
void nm_cancel_started(nm_t *nm, nm_task_t *t);

/* Tasks that ran past their timeout are cancelled with force. */
void nm_cancel_tick(nm_t *nm);

#endif

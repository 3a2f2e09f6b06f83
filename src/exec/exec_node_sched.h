/*  exec_node_sched - the local scheduler: submissions kept here or offered
    to the global scheduler, dispatch of ready tasks to workers in batches,
    their results, blocked workers and dead ones (see exec_node_sched.c,
    DESIGN section 7). The tasks themselves are the task graph's
    (exec_node_graph.h).
*/
#ifndef EXEC_NODE_SCHED_H_INCLUDED
#define EXEC_NODE_SCHED_H_INCLUDED

#include "exec_node_int.h"

/* Give the store and the worker pool the calls they make to the task
   graph and the scheduler (nm->ops). */
void nm_sched_open(nm_t *nm);

int nm_submit(nm_t *nm, nm_client_t *c, const exec_spec_t *s);

void nm_dispatch(nm_t *nm);

void nm_results(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n);

void nm_blocked(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n);

void nm_worker_gone(nm_t *nm, nm_worker_t *w, const char *why);

/* After nm_task_run_args gave 2: whether t may wait for room (its wait
   starts now, and ends with a try beyond the store's size); false with
   the error set when LUX_STORE_WAIT_MS is 0. A task waits in the ready
   queue, an actor's run in its actor's queue (exec_node_actor.c s_args). */
bool nm_task_room_wait(nm_t *nm, nm_task_t *t);

/* Decode a result's outputs, checking arena room was granted to c. 0 or
   LUX_EPROTO. */
int nm_result_outputs(nm_t *nm, nm_client_t *c, nm_task_t *t, const exec_result_t *r,
                      exec_obj_t *outs, const uint8_t **fps);

#endif

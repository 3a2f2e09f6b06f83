/*  exec_node_graph - the task graph: tasks, their dependencies, the ready
    queue, the arguments of a run, finishing and failing (with the cascade
    to dependents), rebuilding lost objects from their lineage (see
    exec_node_graph.c, DESIGN section 7).
*/
#ifndef EXEC_NODE_GRAPH_H_INCLUDED
#define EXEC_NODE_GRAPH_H_INCLUDED

#include "exec_node_int.h"

nm_task_t *nm_task_find(nm_t *nm, const util_id_t *id);

/* A task from a spec, in nm->tasks when insert (a replayed call is not:
   its live twin may be). */
nm_task_t *nm_task_new(nm_t *nm, nm_client_t *owner, const exec_spec_t *s, bool insert);

void nm_task_free(nm_task_t *t);

/* t joins the ready queue: at its front (to run first) or at its back. */
void nm_ready_push(nm_t *nm, nm_task_t *t, bool front);

/* Count t's arguments, wait for those to come; 0 or a code with why. */
int nm_task_resolve(nm_t *nm, nm_task_t *t, char *why, size_t n);

/* Add t to the tasks waiting for output idx of on. false: out of memory. */
bool nm_task_depend(nm_t *nm, nm_task_t *on, nm_task_t *t, uint32_t idx);

/* t ended (finished or failed): a lull begins (exec_node.c s_wait polls
   for the longest window), for the driver that gets t's outputs is likely
   to ask again within tens of microseconds. Not when t came from another
   node (exec_remote.c): its next comes over the network, hundreds of
   microseconds later, and polling meanwhile took the CPU that trip needs
   (spillback_latency_us about 3x longer on 2 loaded cores). */
void nm_task_ended(nm_t *nm, const nm_task_t *t);

/* t's arguments are ready: an actor's run is sent by its actor, a task queues. */
void nm_task_wake(nm_t *nm, nm_task_t *t);

/* Pin t's arguments into objs (0; 1: one was lost, t waits; 2: a spilled
   one has no room to come back yet, see nm_task_room_wait in
   exec_node_sched.h; or a code). */
int nm_task_run_args(nm_t *nm, nm_task_t *t, exec_obj_t *objs);

void nm_task_release_args(nm_t *nm, nm_task_t *t, bool uses);

/* The store has no room: unpin the arguments reserved for ready tasks
   (they are pinned again when dispatched). Whether any were. */
bool nm_unreserve_all(nm_t *nm);

nm_obj_t *nm_task_output(nm_t *nm, nm_task_t *t, uint8_t i);

/* t finished well, its outputs set: tell who waits for them, wake its
   dependents, answer, free it. */
void nm_task_outputs_ready(nm_t *nm, nm_task_t *t);

/* Fail t and everything waiting for it (frees them). */
void nm_task_fail(nm_t *nm, nm_task_t *t, int status, const char *msg);

/* Drop a task that will not run nor report (not in nm->tasks): off every
   dependents list, its arguments released, freed. */
void nm_task_discard(nm_t *nm, nm_task_t *t);

/* Re-run the task that made id: 0 when it is on its way; LUX_ENOTFOUND
   when the log has no task that made it (a put, or nothing), LUX_ETASK
   when the task cannot run (an argument of its own cannot be had), with a
   message that starts with the object's hex ID and names the cause. */
int nm_rebuild(nm_t *nm, const lux_ref_t *id);

/* The store bytes t's arguments take when it runs (in the store or
   spilled; not the lost ones). */
uint64_t nm_task_arg_bytes(nm_t *nm, const nm_task_t *t);

/* What tasks not handed to a worker hold pinned in the store: the rebuilt
   arguments held for tasks that wait (rule 10: the tasks holding any, and
   the bytes they hold pinned, NM_ARG_HELD, not those held on disk) and
   the arguments of reserved ready tasks (rule 3), as counts of tasks and
   bytes (an object two tasks hold counts twice). */
typedef struct {
    uint32_t held, reserved;
    uint64_t held_bytes, reserved_bytes;
} nm_task_holds_t;
void nm_task_holds(nm_t *nm, nm_task_holds_t *h);

#endif

/*  exec_node_actor_res - what an actor's process answers: its runs'
    results (a call's held until its event commits) and its death, which
    restarts the actor or ends it (see exec_node_actor_res.c, DESIGN
    section 8). Above exec_node_actor.h, whose plumbing it uses.
*/
#ifndef EXEC_NODE_ACTOR_RES_H_INCLUDED
#define EXEC_NODE_ACTOR_RES_H_INCLUDED

#include "exec_node_int.h"

/* Give the task graph and the scheduler the calls they make to actors
   (nm->ops). */
void nm_actor_open(nm_t *nm);

/* A result of actor worker w's run. */
void nm_actor_result(nm_t *nm, nm_worker_t *w, const exec_result_t *r);

/* Hand out the held results of calls whose events committed. */
void nm_actor_release(nm_t *nm);

/* Actor worker w's process is gone (why): its actor restarts or dies. */
void nm_actor_worker_gone(nm_t *nm, nm_worker_t *w, const char *why);

/* Fail the checkpoints asked for (lux_actor_checkpoint) that waited
   LUX_ACTOR_CKPT_MS in their actor's queue, unsent, naming what held
   them (LUX_ETIMEDOUT); called every turn, it looks every 250 ms while
   any is asked. */
void nm_actor_ckpt_tick(nm_t *nm);

/* a restarts, its calls' events committed: its calls after its
   checkpoint are read from the log here (the head's machine) and queued,
   and the restart logged (or it dies, naming the restart and why); on a
   node that is not the head they are asked of the head
   (nm->ops.ractor_calls), a->log_wait staying set until the answer. */
void nm_actor_replay(nm_t *nm, nm_actor_t *a);

/* Restarting a on a node that is not the head (nm->ops.ractor_calls asked
   the head for its calls): read(arg, nm, a, cb, cbarg) calls cb with each
   of a's calls after its checkpoint, in the log's order, and returns 0,
   or a code with the message (the head's answer, or why there is none).
   The calls are queued to re-apply and the restart logged, as with the
   log read here on the head; or a dies, naming the restart and why.
   Nothing when a no longer waits for them (dead, or restarted again). */
void nm_actor_replay_read(nm_t *nm, nm_actor_t *a, nm_calls_read *read, void *arg);

#endif

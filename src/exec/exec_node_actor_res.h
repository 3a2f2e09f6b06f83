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

#endif

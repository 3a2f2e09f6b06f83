/*  exec_node_actor - actors on this node: creation, calls in the log's
    order, restarts from checkpoints, lookups by name (see
    exec_node_actor.c, DESIGN section 8). An actor's runs are tasks of the
    task graph (exec_node_graph.h) with an actor.
*/
#ifndef EXEC_NODE_ACTOR_H_INCLUDED
#define EXEC_NODE_ACTOR_H_INCLUDED

#include "exec_node_int.h"

/* Give the task graph the calls it makes to actors (nm->ops). */
void nm_actor_open(nm_t *nm);

/* A run of actor a (kind T_CREATE, T_CALL, T_SAVE or T_LOAD; a NULL for a
   call to no actor, which fails): a task of the task graph (nm_task_new,
   in nm->tasks when insert), with the nm_run_t only actors use. NULL when
   out of memory. */
nm_task_t *nm_actor_run_new(nm_t *nm, nm_client_t *owner, const exec_spec_t *s, bool insert,
                            int kind, nm_actor_t *a);

int nm_actor_submit(nm_t *nm, nm_client_t *c, const exec_spec_t *s);

void nm_actor_kick(nm_t *nm, nm_actor_t *a);      /* send what can be sent */

void nm_actor_hello(nm_t *nm, nm_worker_t *w);    /* its worker is ready */

void nm_actor_result(nm_t *nm, nm_worker_t *w, const exec_result_t *r);

void nm_actor_worker_gone(nm_t *nm, nm_worker_t *w, const char *why);

void nm_actor_pump(nm_t *nm);                     /* send what actors can take */

void nm_actor_release(nm_t *nm);                  /* hand out results whose events committed */

void nm_actor_op(nm_t *nm, nm_client_t *c, const uint8_t *p, size_t n);

void nm_actor_client_gone(nm_t *nm, nm_client_t *c);

void nm_actor_tick(nm_t *nm);                     /* waiting creations, lookups */

void nm_actor_close(nm_t *nm);

/* Task t of an actor is failing (maybe with another task it needs): take
   it off the actor's lists. True when it was dealt with (a re-applied call,
   discarded; the actor dies for it) and must not be failed as a task. */
bool nm_actor_failing(nm_t *nm, nm_task_t *t, int status, const char *text);

/* Take t off its actor's lists (a call answered from another node). */
void nm_actor_unlink(nm_t *nm, nm_task_t *t);

/* a dies now for why (its calls fail with it). */
void nm_actor_die(nm_t *nm, nm_actor_t *a, int status, const char *why);

/* A new actor record for id, not on any list yet (exec_ractor.c's stubs);
   NULL when out of memory. */
nm_actor_t *nm_actor_new(nm_t *nm, const util_id_t *id);

/* Answer the lookups waiting for a's name. */
void nm_actor_found(nm_t *nm, nm_actor_t *a);

/* The head knows no actor named name: lookups of it that do not wait are
   answered LUX_ENOTFOUND. */
void nm_actor_missed(nm_t *nm, const char *name);

#endif

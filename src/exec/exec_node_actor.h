/*  exec_node_actor - actors on this node: creation, calls in the log's
    order, restarts from checkpoints, lookups by name (see
    exec_node_actor.c, DESIGN section 8). An actor's runs are tasks of the
    task graph (exec_node_graph.h) with an actor.
*/
#ifndef EXEC_NODE_ACTOR_H_INCLUDED
#define EXEC_NODE_ACTOR_H_INCLUDED

#include "exec_node_int.h"


/* A run of actor a (kind T_CREATE, T_CALL, T_SAVE or T_LOAD; a NULL for a
   call to no actor, which fails): a task of the task graph (nm_task_new,
   in nm->tasks when insert), with the nm_run_t only actors use. NULL when
   out of memory. */
nm_task_t *nm_actor_run_new(nm_t *nm, nm_client_t *owner, const exec_spec_t *s, bool insert,
                            int kind, nm_actor_t *a);

int nm_actor_submit(nm_t *nm, nm_client_t *c, const exec_spec_t *s);

void nm_actor_kick(nm_t *nm, nm_actor_t *a);      /* send what can be sent */
/* Every actor, gathered by util_idmap_each(nm->actors, nm_actor_collect,
   &all) into all.v (all.n of them; the caller frees all.v), so that a
   walk can end or move actors without changing the map under it. */
typedef struct {
    nm_actor_t **v;
    size_t n, cap;
} nm_actor_all_t;
int nm_actor_collect(void *arg, const void *key, void *value);

void nm_actor_hello(nm_t *nm, nm_worker_t *w);    /* its worker is ready */

void nm_actor_pump(nm_t *nm);                     /* send what actors can take */

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
/* t leaves its actor's sent list (reported, failed, unlinked): one run
   fewer in flight, and the store bytes it pinned no longer count. */
static inline void
nm_actor_sent_gone(nm_actor_t *a, nm_task_t *t)
{
    uint64_t b = t->run ? t->run->sent_bytes : 0;
    a->nsent--;
    a->sent_bytes -= b < a->sent_bytes ? b : a->sent_bytes;
    if (t->run)
        t->run->sent_bytes = 0;
}

/* a dies now for why (its calls fail with it). */
void nm_actor_die(nm_t *nm, nm_actor_t *a, int status, const char *why);

/* nm_actor_die with why made from fmt, ...; nothing when a is dead already. */
void nm_actor_dief(nm_t *nm, nm_actor_t *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A new actor record for id, not on any list yet (exec_ractor.c's stubs);
   NULL when out of memory. */
nm_actor_t *nm_actor_new(nm_t *nm, const util_id_t *id);

/* Free an actor record and what it owns (its strings, the arguments kept
   for a replay), and set *a_p to NULL: not its runs, nor its entry in
   nm->actors (the caller's). */
void nm_actor_destroy(nm_actor_t **a_p);

/* Answer the lookups waiting for a's name. */
void nm_actor_found(nm_t *nm, nm_actor_t *a);

/* The head knows no actor named name: lookups of it that do not wait are
   answered LUX_ENOTFOUND. */
void nm_actor_missed(nm_t *nm, const char *name);

/* --- for exec_node_actor_res.c (an actor's results and its process's
   death, above this part): the actor's lists and states ------------------ */

/* Append t to a list of runs (head/last); take the first off it (NULL:
   empty); unlink t from it (last may be NULL): whether it was on it. */
void nm_actor_list_append(nm_task_t **head, nm_task_t **last, nm_task_t *t);
nm_task_t *nm_actor_list_pop(nm_task_t **head, nm_task_t **last);
bool nm_actor_list_unlink(nm_task_t **head, nm_task_t **last, nm_task_t *t);

/* a enters state st (enum nm_actor_state); nm->actors_waiting counts A_WAITING. */
void nm_actor_state(nm_t *nm, nm_actor_t *a, int st);

/* a has runs to send: on nm->dirty_actors, for nm_actor_pump. */
void nm_actor_dirty(nm_t *nm, nm_actor_t *a);

/* Answer an ACTOR request req of c (status; the actor; msg when it failed). */
void nm_actor_reply(nm_t *nm, nm_client_t *c, uint64_t req, int status, const util_id_t *actor,
                    const char *msg);

/* a lets go of the resources and GPUs it holds. */
void nm_actor_give_back(nm_t *nm, nm_actor_t *a);

/* A kept argument o is no longer kept: deleted when nothing else needs it. */
void nm_actor_unuse(nm_t *nm, nm_obj_t *o);

/* Keep call t's ref arguments for a replay; let go of those of the calls
   up to upto (a checkpoint covers them). */
void nm_actor_keep(nm_t *nm, nm_actor_t *a, nm_task_t *t);
void nm_actor_unkeep(nm_t *nm, nm_actor_t *a, uint64_t upto);

/* Drop one of a's runs that will not report, failing a call with why. */
void nm_actor_drop_run(nm_t *nm, nm_actor_t *a, nm_task_t *t, int status, const char *why);

#endif

/*  exec_ractor - actors on other nodes (issue 28; see exec_ractor.c and
    doc/DESIGN.md 8.1): an actor this node cannot hold is placed by the
    global scheduler on a node that can; its calls go there from any node
    that has its handle; its home places it again when that node dies.
*/
#ifndef EXEC_RACTOR_H_INCLUDED
#define EXEC_RACTOR_H_INCLUDED

#include "exec_node_int.h"

typedef struct nm_ractor nm_ractor_t;

/* Register the messages and give exec_remote.c and the actors here
   (exec_node_actor.c, below this part) their calls to it (nm->ops.ractor_*),
   for nm->ractor: made only with other nodes (after nm->remote); without
   them those calls stay NULL. NULL with the message. */
nm_ractor_t *nm_ractor_new(nm_t *nm);
void nm_ractor_destroy(nm_ractor_t **self_p);
/* Each tick (from nm_remote_tick): lookups and handles still unresolved
   ask the head again; handles nobody can find for S_LOST_MS past their
   home's longest wait for a node (4 x LUX_NODE_DEAD_MS) die. */
void nm_ractor_tick(nm_t *nm);

/* a, being created here with creation t, needs what this node never has:
   true when it goes to another node (placed by the global scheduler;
   creation and calls go there); false when it is made here. */
bool nm_ractor_elsewhere(nm_t *nm, nm_actor_t *a, nm_task_t *t);
/* The global scheduler's answer for a's creation (exec_remote.c). */
void nm_ractor_placed(nm_t *nm, nm_actor_t *a, char *text);
/* A handle to an actor this node does not know: a stub whose calls wait
   until the head says which node holds it; NULL when there is no
   cluster. */
nm_actor_t *nm_ractor_stub(nm_t *nm, const util_id_t *id);
/* The actor of stub is made here after all (as a): its calls are a's,
   and stub is freed. */
void nm_ractor_forget(nm_t *nm, nm_actor_t *stub, nm_actor_t *a);
/* Send a's ready calls, in order, to the node that holds it. */
void nm_ractor_pump(nm_t *nm, nm_actor_t *a);
/* node, which held a (or one of its calls), is dead: its calls in flight
   are sent again, after a new creation (home) or once the head says
   where it lives now. */
void nm_ractor_lost(nm_t *nm, nm_actor_t *a, const util_id_t *node);
/* a died here (killed, its owner gone): the node that holds it lets it go. */
void nm_ractor_died(nm_t *nm, nm_actor_t *a);
/* a's home, not on the head, asked the head for its calls after its node
   died (a->requeue_wait): read(arg...) gives them (or why not); they are
   requeued and a placed again, or a dies naming why. */
void nm_ractor_requeue_read(nm_t *nm, nm_actor_t *a, nm_calls_read *read, void *arg);
/* a, held here for a home on another node (its owner is that node's peer
   client), made checkpoint o: it goes to the home (NODE_ACTOR_CKPT), which
   keeps it to place a again from it when this node dies. */
void nm_ractor_saved(nm_t *nm, nm_actor_t *a, const nm_obj_t *o);
/* An actor's run that another node (c) sent here with x (exec_remote.h),
   just submitted as s: a creation starts from x's checkpoint; a call
   keeps the number the log gave it, and a re-applied one drops its
   results. */
void nm_ractor_taken(nm_t *nm, nm_client_t *c, const exec_spec_t *s, const nm_remote_ext_t *x);
/* A lookup of name found nothing here: ask the head, and again until
   deadline_ms or an answer. */
void nm_ractor_lookup(nm_t *nm, const char *name, int64_t deadline_ms);

#endif

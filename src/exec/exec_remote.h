/*  exec_remote - tasks between nodes: a node manager spills a task it
    cannot run to the node the global scheduler picks, runs the tasks
    other nodes spill to it, and (on the head) is the global scheduler
    (see exec_remote.c, exec_gsched.h, doc/DESIGN.md 7.2).
*/
#ifndef EXEC_REMOTE_H_INCLUDED
#define EXEC_REMOTE_H_INCLUDED

#include "exec_node_int.h"

typedef struct nm_remote nm_remote_t;

/* Register the messages on the node's endpoint (for nm->remote; made when
   the node has one, after nm->peer), with nm->rplace and the modules
   fetched by hash: NULL with the message. */
nm_remote_t *nm_remote_new(nm_t *nm);
void nm_remote_destroy(nm_remote_t **self_p);

/* Offer t (ready: its arguments are here; off the ready queue) to the
   global scheduler, because this node can never run it: true when taken
   (it runs elsewhere, or fails there with the reason), false when it
   cannot be spilled (no other nodes can be reached, it came from another
   node, or it was offered once already). */
bool nm_remote_spill(nm_t *nm, nm_task_t *t);
/* The same for a task this node could run (self: this node is one of
   the places the scheduler weighs, by the bytes of the task's arguments
   each node holds, then load), or that it spills for its long queue
   (not self: another node unless none can). */
bool nm_remote_place(nm_t *nm, nm_task_t *t, bool self);
/* Ask the global scheduler where t goes (t->spilled, t->remote set; the
   answer comes to s_placed, or to nm_ractor_placed for an actor's
   creation): false when the head cannot be asked. */
bool nm_remote_ask(nm_t *nm, nm_task_t *t);

/* Add t (a task, an actor's creation or call) to what goes to the node at
   ep this turn: its spec, its module the first time, the arguments held
   here. 0 or a code. */
int nm_remote_push(nm_t *nm, nm_task_t *t, const char *ep);

/* nm_remote_push with x (may be NULL: nm_remote_push). 0 or a code. */
int nm_remote_push_x(nm_t *nm, nm_task_t *t, const char *ep, const nm_remote_ext_t *x);

/* Whether this node can spill at all (a cluster of nodes with endpoints). */
bool nm_remote_on(nm_t *nm);

/* Send the tasks placed this turn, one NODE_TASK per node (the end of a
   dispatch). */
void nm_remote_flush(nm_t *nm);

/* Each tick: tasks sent to a node the membership monitor says is dead
   are placed again (a new attempt), or fail when they have had their
   attempts. Asked at most once a second, and only while tasks are away. */
void nm_remote_tick(nm_t *nm);

/* What nm_send sends to a peer client (another node, owner of tasks it
   spilled here): OBJECTS go back to it as NODE_TASK_DONE, with the bytes
   of objects in the store copied in. Takes *m. */
void nm_remote_send(nm_t *nm, nm_client_t *c, zmsg_t **m);

/* A task or actor call with no return values that another node sent
   here ended (status 0, or its code and msg): nothing goes back to that
   node with outputs, so it is told in a NODE_TASK_DONE of its own (its
   output 0's ID, the outcome). Nothing for a task of this node's own,
   or one with return values. */
void nm_remote_ended(nm_t *nm, const nm_task_t *t, int status, const char *msg);

#endif

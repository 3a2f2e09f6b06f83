/*  exec_rcalls - a restarted actor's calls after its checkpoint, read
    from the log on the head's machine for a node that is not the head
    (NODE_ACTOR_CALLS; see exec_rcalls.c and doc/DESIGN.md 7.4).
*/
#ifndef EXEC_RCALLS_H_INCLUDED
#define EXEC_RCALLS_H_INCLUDED

#include "exec_node_int.h"

typedef struct nm_rcalls nm_rcalls_t;

/* Register NODE_ACTOR_CALLS and its answer (made with other nodes, after
   nm->peer): the head answers them; a node that is not the head gets
   nm->ops.ractor_calls (nm_rcalls_ask). NULL with the message. */
nm_rcalls_t *nm_rcalls_new(nm_t *nm);
void nm_rcalls_destroy(nm_rcalls_t **self_p);

/* a restarts here, its calls' events committed: ask the head for its
   calls after its checkpoint, again every 2 s while unanswered; after
   30 s unanswered its restart fails (nm_actor_replay_read, a dies). The
   answer goes to nm_actor_replay_read. */
void nm_rcalls_ask(nm_t *nm, nm_actor_t *a);

#endif

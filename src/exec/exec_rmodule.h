/*  exec_rmodule - modules fetched by content hash between nodes (issue 28;
    doc/DESIGN.md 7.2, doc/protocol.md 17.4). A spilled task or an actor's
    creation or call carries only its module's hash; the node that runs it
    and does not hold those bytes (DIR/modules/HASH.so, whose bytes hash
    to HASH) asks the node that sent it (NODE_MODULE_GET), checks the
    answer against the hash, keeps it, and then takes the task.
*/
#ifndef EXEC_RMODULE_H_INCLUDED
#define EXEC_RMODULE_H_INCLUDED

#include "exec_peer.h"

typedef struct nm_rmodule nm_rmodule_t;

/* Take the NODE_TASK m again (its modules came, or will not). */
typedef void nm_rmodule_run_fn(nm_t *nm, nm_peer_msg_t *m);

/* Register NODE_MODULE_GET and NODE_MODULE (from nm_remote_new); NULL
   with the error set. */
nm_rmodule_t *nm_rmodule_new(nm_t *nm, nm_rmodule_run_fn *run);
void nm_rmodule_destroy(nm_rmodule_t **self_p);
/* Whether the NODE_TASK m (a request on this node's endpoint) waits for
   a module this node does not hold: then it is kept (a copy) and run
   again when the bytes come, or when none can come (its tasks then fail
   as a worker finds no module, naming the hash). */
bool nm_rmodule_hold(nm_t *nm, nm_rmodule_t *self, nm_peer_msg_t *m);
/* On the head: hash's module written to DIR/modules from the log (its
   module_registered) when it is not there, for a task the head runs that
   no node sent it (a rebuild from the lineage of another node's task,
   whose driver registered the module there: t/6156). 0 (also off the
   head, where nothing is done), or a code with the message. */
int nm_rmodule_from_log(nm_t *nm, const uint8_t hash[16]);
/* Each tick: asks unanswered for S_FETCH_MS give up. */
void nm_rmodule_tick(nm_t *nm, nm_rmodule_t *self);

#endif

/*  exec_peer - the node manager's own tcp endpoint, where the other nodes
    of a cluster reach it (issue 28), and the connections it makes to
    theirs.

    A node manager of a tcp cluster binds a ROUTER on its node's address
    (never 0.0.0.0 unless the head was told to listen there) at the port
    DB_NODE_PORT_OFFSET above the head's --port (db_cluster_node_ep), CURVE
    with the cluster's key pair like every tcp endpoint. Its node_joined
    event carries that port (the `port` column of the `nodes` view), so
    every node finds every other one in the log.

    Messages use the framing of doc/protocol.md section 5 (a header frame,
    then body frames). A request comes in on the ROUTER; its answer goes
    back with nm_peer_reply. A request this node sends goes out on a DEALER
    of its own to the peer's endpoint (one per peer, made on first use),
    and the answer comes back on it. Both are handed to the handler
    registered for the message's type (nm_peer_on), from the node
    manager's loop, so a handler may use the node's state freely.

    Types 40-47 are objects between nodes (exec_xfer.c), 48-63 scheduling
    across nodes (net_wire.h). A part adds its handlers with nm_peer_on
    when it is made (nm_xfer_new, nm_remote_new, nm_ractor_new).
*/
#ifndef EXEC_PEER_H_INCLUDED
#define EXEC_PEER_H_INCLUDED

#include "exec_node_int.h"

/* One message, as a handler gets it. */
typedef struct {
    int type;             /* its header's type (enum net_type) */
    zframe_t *rid;        /* a request on our ROUTER: the asking peer's routing ID;
                             NULL for an answer on one of our DEALERs */
    const char *ep;       /* an answer: the endpoint of the peer that sent it */
    zmsg_t *msg;          /* the frames after the header; the handler may pop
                             (and then owns) frames, the rest is destroyed after */
} nm_peer_msg_t;

typedef void nm_peer_fn(nm_t *nm, nm_peer_msg_t *m);

typedef struct nm_peer nm_peer_t;

/* Whether the node has an endpoint to bind: its cluster is tcp and the
   node has an address (nm->address, not "local"). */
bool nm_peer_wanted(nm_t *nm);
/* Bind the node's endpoint (for nm->peer; when nm_peer_wanted): the parts
   above register their handlers on it when they are made. NULL with the
   message (the port is taken, say). */
nm_peer_t *nm_peer_new(nm_t *nm);
void nm_peer_destroy(nm_peer_t **self_p);

/* Whether this node has an endpoint (a tcp cluster), and which:
   "tcp://IP:PORT", or "" when none. */
bool nm_peer_up(nm_t *nm);
const char *nm_peer_endpoint(nm_t *nm);
/* Its port (0: none), as node_joined records it. */
int nm_peer_port(nm_t *nm);
/* The endpoint of the head's node manager (where object locations are
   asked: exec_xfer.c), into out[n]. */
char *nm_peer_head_ep(nm_t *nm, char *out, size_t n);
/* Whether this node manager is the head's. */
bool nm_peer_is_head(nm_t *nm);

/* Handle type with fn (requests and answers alike). 0, or LUX_EINVAL when
   type is out of range or taken. */
int nm_peer_on(nm_t *nm, int type, nm_peer_fn *fn);

/* Send a request of type, with the frames of *body (may be NULL; taken),
   to the node at ep (tcp://IP:PORT). 0, or a code with the message (no
   connection could be made, or the peer's queue is full: nothing sent). */
int nm_peer_send(nm_t *nm, const char *ep, int type, zmsg_t **body);
/* The node at ep is dead: its DEALER here, if any, is closed, and what it
   still queued for that node (ZeroMQ holds it across a lost connection
   and delivers it on the next) is dropped. Else a node started again on
   the same address takes, as its own, requests meant for the dead one
   (t/6152: an actor's call made on a third node just after its holder
   died reached the new holder before the actor's creation, and was
   applied before the calls its home re-applies from the log). A later
   send opens a new one. */
void nm_peer_forget(nm_t *nm, const char *ep);
/* Answer request m with type and the frames of *body (taken). */
void nm_peer_reply(nm_t *nm, const nm_peer_msg_t *m, int type, zmsg_t **body);

/* Opens a reader on m's first frame (its body); false, after a complaint
   naming the message's type and its sender, when there is none. */
bool nm_peer_body(nm_t *nm, const nm_peer_msg_t *m, util_rd_t *r);

/* For the node's loop: add the sockets to poll to items (at most max),
   returning how many; after the poll, read those that fired. */
size_t nm_peer_items(nm_t *nm, zmq_pollitem_t *items, size_t max);
void nm_peer_fired(nm_t *nm, const zmq_pollitem_t *items, size_t n);
/* Each tick of the node's loop: the parts' timeouts. */
void nm_peer_tick(nm_t *nm);

#endif

/*  exec_xfer - objects between nodes (issue 28, doc/DESIGN.md 7.3): a
    node manager that needs an object held on another node pulls it.

    Where: the head's node manager answers NODE_LOCATE from the log (the
    nodes whose object_put, task_finished or object_copied events hold the
    object, alive, with their endpoints from node_joined). How: NODE_PULL
    to one of them, first for the object's size and fingerprint, then for
    its chunks, several in flight, each written straight into this node's
    store (the block allocated for the object, no buffer for the whole
    object), lz4-compressed by the sender only where a probe of the chunk
    says it pays. The bytes are checked against the fingerprint before the
    object becomes READY here; each new copy is an object_copied event
    (the `object_locations` view).

    Pulls are admitted while they fit the store, by priority (a get, then
    a wait, then a task's argument), and at most XFER_ACTIVE_MAX at once;
    the rest wait, up to the store's wait (LUX_STORE_WAIT_MS). A second
    request for an object already arriving waits for that transfer. A
    source that dies or stops answering mid-transfer
    (LUX_XFER_TIMEOUT_MS without a chunk, 10 s) ends the pull: the next
    source is tried, else every requester gets the error, naming the
    object, the node and why.
*/
#ifndef EXEC_XFER_H_INCLUDED
#define EXEC_XFER_H_INCLUDED

#include "exec_node_int.h"

/* Who needs the object, in the order pulls are admitted. */
enum nm_xfer_prio {
    NM_XFER_GET = 0,  /* a client's lux_get */
    NM_XFER_WAIT = 1, /* a client's lux_wait */
    NM_XFER_ARG = 2   /* an argument of a task queued here */
};

/* Called once per request, from the node's loop: rc 0 when the object is
   READY in this node's store (nm_obj_get finds it; not pinned for the
   caller), else a code with lux_errmsg() naming the object and why
   (LUX_ENOTFOUND: no live node holds it, as far as the log says). */
typedef void nm_xfer_done_fn(nm_t *nm, void *arg, const lux_ref_t *id, int rc);

typedef struct nm_xfer nm_xfer_t;

/* Register the messages of objects between nodes on the node's endpoint
   (for nm->xfer; made when the node has one, after nm->peer): NULL with
   the message. */
nm_xfer_t *nm_xfer_new(nm_t *nm);
void nm_xfer_destroy(nm_xfer_t **self_p); /* every pull still waiting ends with LUX_EDEAD */

/* Whether pulls can be made here (the node has a tcp endpoint). */
bool nm_xfer_on(nm_t *nm);

/* Pull id to this node, for a requester of priority prio; done(nm, arg,
   id, rc) is called once, later (never from inside this call). A request
   for an object already being pulled joins that pull. 0 (done will be
   called), or a code with the message (done will not). */
int nm_xfer_pull(nm_t *nm, const lux_ref_t *id, int prio, nm_xfer_done_fn *done, void *arg);

/* Forget the requests with this done and arg (a client that went away):
   their done is never called. */
void nm_xfer_forget(nm_t *nm, nm_xfer_done_fn *done, void *arg);

/* The descriptor the node's loop polls for the bulk path's sockets
   (exec_bulk.c), -1 when none; nm_xfer_fired when it is readable. */
int nm_xfer_fd(nm_t *nm);
void nm_xfer_fired(nm_t *nm);

/* Each tick: admit waiting pulls that fit now, end those past their time. */
void nm_xfer_tick(nm_t *nm);

/* On the head: the live nodes the log says hold id (at most max, into
   nodes) and its size in bytes (1 when the log does not say); 0 when
   none, or elsewhere than on the head. For the global scheduler's
   locality. An object the log has no event of yet, whose maker may still
   log it (exec_xfer_who.c), is where its maker is: a driver's node, or
   the node that logged its task's first event (size 1). */
int nm_xfer_where(nm_t *nm, const lux_ref_t *id, util_id_t *nodes, int max, uint64_t *size);

/* Counters for `lux status` and tests: pulls done and failed, bytes in. */
void nm_xfer_counts(nm_t *nm, uint64_t *done, uint64_t *failed, uint64_t *bytes);

#endif

/*  net_wire - Lux's wire framing: the header frame every message starts
    with, batches of seq-numbered records, and error replies.

    The byte layout is documented at the top of net_wire.c and, for people
    writing clients in other languages, in doc/protocol.md. Nothing else
    encodes a header or a batch by hand.

    This layer knows nothing of what a record contains (src/db does): a
    batch is records with consecutive seqs, which is all that replication
    and subscriptions need to move, order and check them.
*/
#ifndef NET_WIRE_H_INCLUDED
#define NET_WIRE_H_INCLUDED

#include "../util/util_buf.h"

#include <czmq.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#define NET_MAGIC 0x4c /* 'L' */
#define NET_VERSION 1
#define NET_HDR_LEN 16
#define NET_NO_SHARD 0xffffffffu

/* Message types: X(name, code, what). */
#define NET_TYPES(X)                                                          \
    X(ERROR, 1, "error reply")                                                \
    X(APPEND, 2, "client appends events to a shard's head")                   \
    X(APPEND_ACK, 3, "head acknowledges appends committed at the tail")       \
    X(FORWARD, 4, "a replica forwards a batch to its successor")              \
    X(CHAIN_ACK, 5, "a replica reports the tail's commit to its predecessor") \
    X(HELLO, 6, "a predecessor opens the link to its successor")              \
    X(SYNC, 7, "a successor says which seq it has")                           \
    X(READ, 8, "read a range of committed events")                            \
    X(READ_REP, 9, "a range of committed events")                             \
    X(PUBLISH, 10, "the tail publishes committed events")                     \
    X(HEARTBEAT, 11, "a replica reports to the chain master")                 \
    X(CONFIG, 12, "chain configuration")                                      \
    X(CONFIG_REQ, 13, "ask the chain master for the configuration")           \
    X(JOIN, 14, "a caught-up replica asks to join at the tail")               \
    X(STATUS_REQ, 15, "ask the chain master for the cluster status")          \
    X(STATUS_REP, 16, "cluster status: chains, heartbeats (binary, db_master.h)") \
    X(PING, 17, "liveness probe")                                             \
    X(PONG, 18, "liveness answer")                                            \
    X(NODE_HELLO, 19, "a client or worker introduces itself to its node")     \
    X(NODE_WELCOME, 20, "the node manager answers NODE_HELLO")                \
    X(MODULE, 21, "a driver registers a module's bytes")                      \
    X(SUBMIT, 22, "a client submits tasks")                                   \
    X(PUT, 23, "a client stores objects")                                     \
    X(ALLOC, 24, "a client asks for room in the object store")                \
    X(ALLOC_REP, 25, "room in the object store")                              \
    X(GET, 26, "a client asks for objects (and pins those in the store)")     \
    X(OBJECTS, 27, "objects for a client: values, places in the store, errors") \
    X(FREE, 28, "a client forgets refs and unpins")                           \
    X(TASKS, 29, "the node manager hands tasks to a worker")                  \
    X(RESULTS, 30, "a worker reports finished tasks")                         \
    X(BLOCKED, 31, "a worker waits inside a task, or goes on")                \
    X(ACTOR, 32, "a client kills, finds or checkpoints an actor")             \
    X(ACTOR_REP, 33, "the node manager answers ACTOR")                        \
    X(UNALLOC, 34, "a client gives back room it could not write")            \
    X(CANCEL, 35, "a client cancels a task")                                  \
    X(CANCEL_REP, 36, "the node manager answers CANCEL")                      \
    X(JOIN_HOLD, 37, "the chain master asks the tail to hold for a joiner")   \
    X(JOIN_SEQ, 38, "the tail says the seq it holds acknowledgements at") \
    /* 40-47: objects between nodes (src/exec/exec_xfer.c); 48-63: scheduling \
       across nodes; both at a node manager's tcp endpoint (exec_peer.h) */ \
    X(NODE_LOCATE, 40, "a node asks the head's node where an object lives")  \
    X(NODE_LOCATE_REP, 41, "the nodes that hold an object, from the log")     \
    X(NODE_PULL, 42, "a node asks another for an object or a chunk of it")    \
    X(NODE_PULL_REP, 43, "an object's size and fingerprint, or a chunk")    \
    X(NODE_PLACE, 48, "a node asks the global scheduler where a task goes")  \
    X(NODE_PLACE_REP, 49, "the node a spilled task goes to, or why none")   \
    X(NODE_TASK, 50, "a node hands a spilled task to the node placed")       \
    X(NODE_TASK_DONE, 51, "the outputs of spilled tasks, to their node")     \
    X(NODE_ACTOR_WHERE, 56, "a node asks the head which node holds an actor") \
    X(NODE_ACTOR_WHERE_REP, 57, "the node that holds an actor, from the log")  \
    X(NODE_ACTOR_KILL, 58, "an actor's home or caller lets it go where it lives") \
    X(NODE_ACTOR_CKPT, 59, "an actor's checkpoint, from where it lives to its home") \
    X(NODE_MODULE_GET, 60, "a node asks the sender of a task for its module by hash") \
    X(NODE_MODULE, 61, "a module's bytes (or why none), to the node that asked") \
    X(NODE_ACTOR_CALLS, 62, "a node asks the head for a restarted actor's calls") \
    X(NODE_ACTOR_CALLS_REP, 63, "an actor's calls after its checkpoint, from the log")

enum net_type {
#define X(name, code, what) NET_##name = code,
    NET_TYPES(X)
#undef X
        NET_TYPE_MAX
};

typedef struct {
    uint8_t type;   /* enum net_type */
    uint8_t flags;  /* reserved, 0 */
    uint32_t shard; /* NET_NO_SHARD when the message is not about one shard */
    uint64_t epoch; /* the sender's epoch of that shard's chain */
} net_hdr_t;

const char *net_type_name(int type);

/* zmq_poll for a loop that polls many descriptors and few ZeroMQ sockets,
   with one poll(2) instead of zmq_poll's two (it first polls every item
   with no wait, then again to wait) and one check of each socket's
   ZMQ_EVENTS before, and after only for a socket whose descriptor fired.
   pfds: room for n. Same return as zmq_poll: the items with events, or -1
   with errno set. */
int net_poll(zmq_pollitem_t *items, int n, struct pollfd *pfds, long timeout_ms);

/* A new header frame. */
zframe_t *net_hdr_frame(int type, uint32_t shard, uint64_t epoch);
/* Decode a header frame: 0, or LUX_EPROTO (wrong size, magic, or type) or
   LUX_ENOSYS (another version), with a message naming what was wrong. */
int net_hdr_decode(net_hdr_t *h, zframe_t *f);

/* A batch: count records with seqs first, first+1, ...
   Bytes: first u64, count u32, then count times (length u32, record). */
typedef struct {
    uint64_t first;     /* seq of the first record */
    uint32_t count;     /* number of records */
    const uint8_t *recs; /* the (length, record) pairs */
    size_t len;         /* bytes at recs */
} net_batch_t;

#define NET_BATCH_HDR 12

/* Parse and check a batch: every length fits exactly. 0 or LUX_EPROTO. */
int net_batch_parse(net_batch_t *b, const uint8_t *p, size_t n);

/* Walk a parsed batch. */
typedef struct {
    util_rd_t r;
    uint64_t seq;  /* seq of the next record */
    uint32_t left; /* records not yet returned */
} net_batch_it_t;
void net_batch_iter(net_batch_it_t *it, const net_batch_t *b);
/* Next record; false at the end. */
bool net_batch_next(net_batch_it_t *it, uint64_t *seq, const uint8_t **rec, size_t *len);

/* Begin a batch in b (header with a count to fill in later); append records
   with net_batch_add; finish with net_batch_end which writes the count. */
void net_batch_begin(util_buf_t *b, uint64_t first);
void net_batch_add(util_buf_t *b, const uint8_t *rec, size_t n);
void net_batch_end(util_buf_t *b, uint32_t count);

/* An ERROR message: header, code i32 + text, and the request it answers
   as u64 (0; net_error_req sets it). */
zmsg_t *net_error_msg(uint32_t shard, uint64_t epoch, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Set the request an ERROR of net_error_msg answers, its frame 2
   (doc/protocol.md 5.4): a READ's request ID, an APPEND's first event ID
   (cseq); 0 for none. */
void net_error_req(zmsg_t *m, uint64_t req);
/* Decode an error body; *code set, text into buf. */
void net_error_decode(zframe_t *f, int *code, char *buf, size_t n);

#endif

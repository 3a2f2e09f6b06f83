/*  db_replica_int - what the parts of a replica share: its state and the
    functions one part calls in another. Only db_replica*.c include it.

    A replica (db_replica.h) is one thread running one zloop. Its parts,
    each in its own file, are:
        db_replica.c         the actor: setup, teardown, the loop and its
                             heartbeat, the chain configuration, and the
                             small helpers every part sends and fails with;
        db_replica_pipe.c    the pipeline: pending batches, the writer,
                             forwarding to the successor, the tail's
                             acknowledgements, and the chain endpoint
                             (HELLO, FORWARD, SYNC, CHAIN_ACK);
        db_replica_append.c  appends at the head: checks, idempotence,
                             clients waiting for their acknowledgement,
                             admission control;
        db_replica_join.c    joining (probe, truncate, catch up, JOIN) and
                             the tail's side of a join (JOIN_HOLD);
        db_replica_link.c    local links beside the append endpoint.
    Sockets the loop polls by descriptor go through net_raw (src/net).

    Every part includes this header and nothing of the others, so the
    #include lines form a tree rooted here. Each group of members below
    names the part that owns it (changes it); others only read it.
*/
#ifndef DB_REPLICA_INT_H_INCLUDED
#define DB_REPLICA_INT_H_INCLUDED

#include "db_replica.h"
#include "db_chain.h"
#include "db_join.h"
#include "db_reader.h"
#include "db_store.h"
#include "db_writer.h"
#include "../net/net_link.h"
#include "../net/net_raw.h"
#include "../net/net_wire.h"
#include "../util/util_complain.h"
#include "../util/util_idmap.h"

#define DB_REP_MAX_PENDING 262144 /* events in flight before the head stops reading appends */
#define DB_REP_FETCH 8192         /* events per READ when catching up, or resent from SQLite */
#define DB_REP_PUB_BEAT_MS 200    /* tail announces its last seq when idle */
#define DB_REP_INLINE 64          /* batches this small commit on the network thread when
                                     the writer is idle (commit at once when idle) */

typedef struct db_rep_batch {
    struct db_rep_batch *next;
    net_batch_t nb;   /* view of data, what the writer reads */
    util_buf_t data;  /* the batch bytes (header + records) */
} db_rep_batch_t;

typedef struct {
    zframe_t *rid;    /* the client's routing ID on the append socket */
    util_id_t client; /* the event ID to acknowledge: the newest we had */
    uint64_t cseq;    /* from this client when it appended, and... */
    uint64_t seq;     /* ...that event's seq: answer once the tail has it */
} db_rep_waiter_t;

typedef struct {
    uint64_t cseq, seq; /* newest event ID seen from a client, and its seq */
} db_rep_seen_t;

/* A client on a local link (net_link.h) beside the append endpoint. Its
   messages are handled as the append socket's, under a routing ID made
   here: DB_REP_LINK_RID_LEN bytes, a zero byte, "lnk" and the link's
   number. ZeroMQ's own routing IDs are five bytes, and one chosen by a
   peer cannot start with a zero byte, so the two never meet. */
#define DB_REP_LINK_RID_LEN 12

typedef struct {
    net_link_t *link;
    uint64_t id;
    short events; /* what the loop polls it for */
} db_rep_link_t;

typedef struct {
    /* --- db_replica.c: identity, sockets, configuration --- */
    db_cluster_t cluster;
    uint32_t shard, index;
    net_sec_t *sec;
    zsock_t *pipe;
    zloop_t *loop;
    net_raw_t *raw;                /* pipe, append, chain and master, polled by descriptor */
    int raw_append;                /* the append socket's slot in raw */
    char db_path[PATH_MAX];
    char ep[DB_EP_N][DB_EP_MAX];   /* endpoints bound */
    zsock_t *sk_append, *sk_chain, *sk_pub; /* bound sockets */
    zsock_t *sk_master;            /* DEALER to the chain master */
    zactor_t *writer, *reader;
    db_store_t *store;             /* the write connection: the writer's while it has
                                      work (writer_seq > commit_seq), else ours */
    db_reader_state_t rstate;      /* shared with the reader */
    db_store_t *rstore;            /* our own read connection */
    int state;                     /* enum db_replica_state */
    db_chain_t cfg;                /* our shard's configuration */
    int pos;                       /* our place in it, -1 when not a member */
    util_complain_t complain;      /* garbage logs, at most once a second */
    util_buf_t buf;                /* scratch */
    char failed[300];              /* why it failed (DB_RS_FAILED) */
    char cause[64];                /* ...in a word for clients: "No space left on device" */
    char append_gate[256];         /* test hook LUX_TEST_APPEND_GATE (db_replica_append.c) */
    uint64_t take_fail_seq;        /* test hook LUX_TEST_TAKE_FAIL=INDEX:SEQ: this replica
                                      cannot take record SEQ into a batch (db_rep_take_batch;
                                      s_append at the head, once), as out of memory; 0: off */

    /* --- db_replica_pipe.c: the pipeline (see THE PIPELINE there) --- */
    zsock_t *sk_succ;              /* DEALER to the successor, or NULL */
    uint32_t succ_index;           /* whom succ points at */
    char succ_ep[DB_EP_MAX];
    bool succ_synced;              /* the successor said SYNC */
    int64_t hello_ms;              /* when HELLO was last sent */
    zframe_t *pred_rid;            /* predecessor's routing ID on `chain` */
    uint64_t writer_seq;           /* last seq handed to the writer */
    bool truncating;               /* the writer is truncating: the store is its own,
                                      and recv_seq is stale until it answers 'T' */
    bool writer_watched;           /* the loop reads the writer's replies */
    uint64_t recv_seq;
    uint8_t recv_hash[DB_HASH_LEN];
    uint64_t commit_seq, fwd_seq, ack_seq, pub_seq;
    db_rep_batch_t *pending, *pending_last;
    size_t pending_events;
    int64_t pub_beat_ms;

    /* --- db_replica_append.c: the head's clients --- */
    util_idmap_t *seen;            /* client -> db_rep_seen_t, for idempotence (the
                                      pipeline notes what it takes from others) */
    db_rep_waiter_t *waiters;      /* head: clients to acknowledge */
    size_t nwait, capwait;
    bool append_paused;            /* admission control */

    /* --- db_replica_join.c: joining, and the tail's hold for a joiner --- */
    db_join_t join;                /* the joiner's catch-up (db_join.h) */
    zsock_t *sk_tail;              /* DEALER to the tail's read endpoint (joining) */
    db_hold_t hold;                /* tail: holding acknowledgements for a joiner */

    /* --- db_replica_link.c: local links --- */
    int link_fd;                   /* listening beside the append endpoint, or -1 */
    db_rep_link_t *links;
    size_t nlinks, caplinks;
    uint64_t link_ids;             /* the last link's number */
} db_rep_t;

/* --- db_replica.c --- */
bool db_rep_is_head(const db_rep_t *self);
bool db_rep_is_tail(const db_rep_t *self);
/* sock was sent on: have its events read (net_raw_touch) */
void db_rep_touch(db_rep_t *self, zsock_t *sock);
/* Read the raw sockets' events after a handler; the loop's return. */
int db_rep_settle(db_rep_t *self, int rc);
void db_rep_complain(db_rep_t *self, const char *endpoint, const char *what);
/* Send header + body (+ an optional second) on sock, to rid on a ROUTER. */
void db_rep_send(db_rep_t *self, zsock_t *sock, zframe_t *rid, int type, uint64_t epoch,
                 const void *body, size_t n, const void *body2, size_t n2);
/* ERROR to *rid_p (taken) on sock; req names the request (0: none). */
void db_rep_send_error(db_rep_t *self, zsock_t *sock, zframe_t **rid_p, int code,
                       const char *text, uint64_t req);
void db_rep_wrong_shard(db_rep_t *self, zsock_t *sock, zframe_t **rid_p, const net_hdr_t *h,
                        const char *endpoint);
/* Ask the master for our configuration. */
void db_rep_ask_config(db_rep_t *self);
/* Stop for good after an error we cannot recover from ("FAILED"). */
void db_rep_fail(db_rep_t *self, int code, const char *text);

/* --- db_replica_pipe.c --- */
db_rep_batch_t *db_rep_batch_new(uint64_t first);
void db_rep_batch_free(db_rep_batch_t *b);
/* Close b (count records) and commit it: here when small and the writer
   idle, else by the writer. */
void db_rep_submit(db_rep_t *self, db_rep_batch_t *b, uint32_t count);
void db_rep_writer_watch(db_rep_t *self, bool on);
void db_rep_after_commit(db_rep_t *self);
void db_rep_tail_ack(db_rep_t *self);
/* ack_seq = seq, and the reader's bound with it */
void db_rep_set_ack(db_rep_t *self, uint64_t seq);
void db_rep_hello(db_rep_t *self);
/* Take what continues our log of in; the number taken, *gap, or why. */
int db_rep_take_batch(db_rep_t *self, const net_batch_t *in, bool *gap, char *why, size_t n);
/* Record rec (its seq) into *bp, the batch made for the first record and
   grown for the others: false when it cannot be (out of memory, or the
   test hook LUX_TEST_TAKE_FAIL naming seq), *bp as it was before. */
bool db_rep_batch_take(db_rep_t *self, db_rep_batch_t **bp, uint64_t seq, const uint8_t *rec,
                       size_t n);
/* Drop the successor's socket. */
void db_rep_succ_close(db_rep_t *self);
/* Point the successor's socket at m and say HELLO. */
void db_rep_succ_open(db_rep_t *self, const db_member_t *m);
int db_rep_on_chain(zloop_t *loop, zsock_t *sock, void *arg);
void db_rep_pipe_free(db_rep_t *self);

/* --- db_replica_append.c --- */
int db_rep_on_append(zloop_t *loop, zsock_t *sock, void *arg);
/* One message of the append socket or of a local link (taken). */
void db_rep_append_msg(db_rep_t *self, zmsg_t *msg);
void db_rep_ack_clients(db_rep_t *self);
/* Read the client table from the store (at start, and again after a
   truncation). 0, or a code with the message (out of memory, a failed
   read of the store's table). */
int db_rep_seen_load(db_rep_t *self, db_store_t *store);
/* A client's event taken at seq (from the predecessor or the tail). 0, or
   LUX_ENOMEM with the message: the table could not take its client. */
int db_rep_note_seen(db_rep_t *self, const db_event_t *e, uint64_t seq);
void db_rep_waiters_drop(db_rep_t *self);
void db_rep_append_free(db_rep_t *self);

/* --- db_replica_join.c --- */
void db_rep_join_start(db_rep_t *self);
void db_rep_join_request(db_rep_t *self);
/* The writer is idle again (all committed): go on joining. */
void db_rep_join_go(db_rep_t *self);
/* The writer truncated our log (the pipeline's counters are reset). */
void db_rep_truncated(db_rep_t *self);
/* The heartbeat's share of joining and holding. */
void db_rep_join_beat(db_rep_t *self, int64_t now);
void db_rep_join_stop(db_rep_t *self);
void db_rep_on_join_hold(db_rep_t *self, const net_hdr_t *h, zframe_t *body);
/* The master answered our JOIN_SEQ (token in req) or a JOIN with ERROR. */
bool db_rep_join_error(db_rep_t *self, const net_hdr_t *h, zmsg_t *msg, int code,
                       const char *text);
/* A new configuration: a hold for a joiner ends. */
void db_rep_hold_reset(db_rep_t *self, uint64_t epoch);

/* --- db_replica_link.c --- */
/* Listen beside the append endpoint (without a link, local clients append
   over ZeroMQ as remote ones do, only slower). */
void db_rep_links_listen(db_rep_t *self);
/* Send m on sock, or on the local link its routing ID names. */
void db_rep_emit(db_rep_t *self, zsock_t *sock, zmsg_t **m_p);
/* Appends paused or resumed: poll the links for what they need. */
void db_rep_links_watch(db_rep_t *self);
void db_rep_links_close(db_rep_t *self);

/* NAME_w: the zloop handler NAME, then the raw sockets' events read. */
#define DB_REP_SETTLING(name, what)                                           \
    static int name##_w(zloop_t *loop, what x, void *arg)                     \
    {                                                                         \
        return db_rep_settle(arg, name(loop, x, arg));                        \
    }

#endif

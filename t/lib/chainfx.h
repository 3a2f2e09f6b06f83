/*  chainfx - the world of the chain fixture (t/5012): its sizes, its
    messages and a replica's state, apart from the code that steps them.
    The logs themselves are t/lib/chainlog.h's. */
#ifndef T_LIB_CHAINFX_H_INCLUDED
#define T_LIB_CHAINFX_H_INCLUDED

#include "chainlog.h"
#include "db/db_join.h"

#include <stdbool.h>
#include <stdint.h>

#define NR 3            /* replicas */
#define MASTER NR       /* node id of the master */
#define CLIENT (NR + 1) /* ...and of the client */
#define MAXQ 2048       /* messages in flight */
#define MAXLOG 1024

enum {
    M_CONFIG, M_CONFIG_REQ, M_BEAT, M_DEAD, M_HELLO, M_SYNC, M_FORWARD, M_CHAIN_ACK,
    M_CORRUPT, M_REFUSED, M_READ, M_READ_REP, M_READ_ERR, M_JOIN, M_JOIN_HOLD, M_JOIN_SEQ,
    M_HOLD_END, M_EGAP, M_APPEND, M_TRUNC_DONE, M_N
};
static const char *s_mname[M_N] = {
    "CONFIG", "CONFIG_REQ", "BEAT", "DEAD", "HELLO", "SYNC", "FORWARD", "CHAIN_ACK",
    "CORRUPT", "REFUSED", "READ", "READ_REP", "READ_ERR", "JOIN", "JOIN_HOLD", "JOIN_SEQ",
    "HOLD_END", "EGAP", "APPEND", "TRUNC_DONE"};

typedef struct {
    int type, from, to;
    uint32_t to_inc;       /* the receiver's incarnation when sent */
    uint32_t from_inc;     /* ...and the sender's: one connection each */
    bool nodrop;           /* local: the writer's answer, the master's own timer */
    uint64_t epoch, a, b, c, d, e;
    uint8_t hash[DB_HASH_LEN];
    int m[NR], n;          /* CONFIG */
    ent_t *ents;           /* FORWARD, READ_REP: entries from a */
    uint32_t count;
} msg_t;

typedef struct {
    bool alive;
    uint32_t inc;
    int state; /* enum db_replica_state */
    ent_t *log; /* log[0] is seq 1 (persistent) */
    uint64_t n;
    /* volatile */
    uint64_t epoch;
    int m[NR], nm, pos;
    uint64_t fwd_seq, ack_seq;
    bool synced, pred_linked, truncating;
    uint32_t pred_inc; /* the predecessor's process that said HELLO */
    int hello_age;
    db_hold_t hold;
    int hold_age;
    db_join_t join;
    int join_age;
    uint64_t wait_seq[MAXLOG], wait_val[MAXLOG]; /* head: the client's events */
    int nwait;
    int fail_in; /* the n-th write from now fails (0: none) */
    long io_fault; /* real files: the k-th write of the next sync fails */
} rep_t;

#endif

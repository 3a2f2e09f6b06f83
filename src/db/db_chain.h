/*  db_chain - the configuration of replication chains: for each shard, its
    epoch and its members from head to tail, with their endpoints.

    The chain master owns it (db_master.c), replicas and clients receive it
    in CONFIG messages, and it is persisted in master.state. This file is
    the one home of its encodings (byte layout in doc/protocol.md).
*/
#ifndef DB_CHAIN_H_INCLUDED
#define DB_CHAIN_H_INCLUDED

#include "db_cluster.h"
#include "../util/util_buf.h"

typedef struct {
    uint32_t index;                  /* replica slot: file replica-INDEX.db */
    char ep[DB_EP_N][DB_EP_MAX];     /* endpoints; "" until it reported them */
} db_member_t;

/* A replica the master removed from its chain, as master.state keeps it
   until the replica is a member again (never in CONFIG): what the chain
   had committed when it left bounds what of its file was acknowledged. */
typedef struct {
    uint64_t epoch;     /* the epoch its removal began; 0: no record */
    uint64_t committed; /* the tail's last committed seq the master knew then */
} db_out_t;

typedef struct {
    uint32_t shard;
    uint64_t epoch;                  /* bumped at every membership change */
    uint32_t n;                      /* members; m[0] head, m[n-1] tail */
    db_member_t m[DB_MAX_REPLICAS];
    db_out_t out[DB_MAX_REPLICAS];   /* by replica index; master.state only */
} db_chain_t;

/* Position of replica index in the chain, or -1. */
int db_chain_find(const db_chain_t *c, uint32_t index);

/* CONFIG body: cluster ID (16), count u32, then per chain: shard u32,
   epoch u64, n u8, per member: index u32 and 4 endpoints (u16 length +
   bytes). */
void db_chain_encode(util_buf_t *b, const util_id_t *cluster, const db_chain_t *chains,
                     uint32_t count);
/* Decode up to max chains; *count set. 0 or LUX_EPROTO. */
int db_chain_decode(const uint8_t *p, size_t n, util_id_t *cluster, db_chain_t *chains,
                    uint32_t max, uint32_t *count);

/* HEARTBEAT body, replica -> master. */
typedef struct {
    uint32_t shard, index;
    uint32_t pid;
    uint64_t epoch;                  /* the replica's epoch of its shard */
    uint64_t last;                   /* last seq committed locally */
    uint8_t state;                   /* enum db_replica_state */
    char ep[DB_EP_N][DB_EP_MAX];     /* bound endpoints */
    char path[DB_EP_MAX * 2];        /* SQLite file */
} db_beat_t;

enum db_replica_state {
    DB_RS_STARTING = 0, /* not yet configured */
    DB_RS_CHAIN = 1,    /* a member of its chain */
    DB_RS_JOINING = 2,  /* catching up to join at the tail */
    DB_RS_FAILED = 3    /* stopped after an error */
};
const char *db_replica_state_name(int state);

void db_beat_encode(util_buf_t *b, const db_beat_t *beat);
int db_beat_decode(db_beat_t *beat, const uint8_t *p, size_t n);

/* master.state: one line per shard, "shard S epoch E chain I J K", head
   first, each followed by a line "out shard S replica I epoch E
   committed T" per replica removed from that chain and not back (at
   epoch E, when the master knew the tail had committed seq T: the audit
   tells a removed head's unacknowledged suffix from a lost event with
   it); lines starting with # and blank lines are skipped. Load fills
   every shard's chain (0..R-1 at epoch 1 when there is no file); a line
   that does not parse, names a shard or replica the cluster does not
   have, repeats a shard or a member, or a shard without a line, an out
   line before its shard's line, for a member, or repeated, is
   LUX_ECORRUPT naming the file, the line and what is wrong: guessing
   would restart that shard at epoch 1. Save writes atomically. 0 or a
   LUX_E* code. */
int db_chain_load_state(const db_cluster_t *c, db_chain_t *chains);
int db_chain_save_state(const db_cluster_t *c, const db_chain_t *chains);

#endif

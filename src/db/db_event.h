/*  db_event - one row of the log: its fields, its kinds, its canonical
    byte encoding and its hash chain.

    This header and db_event.c are the single home of the event record
    format (documented byte by byte at the top of db_event.c and in
    doc/protocol.md). The same bytes are what a client appends, what the head
    hashes, what replicas forward and verify, what a range read returns and
    what a subscriber receives; the SQL columns (sql/schema.sql) hold the
    same fields one per column, and db_event_encode() rebuilds the exact bytes
    from them, which is how the hash chain is verified from SQLite alone.
*/
#ifndef DB_EVENT_H_INCLUDED
#define DB_EVENT_H_INCLUDED

#include "../util/util_buf.h"
#include "../util/util_id.h"

#include <stdbool.h>
#include <stdint.h>

/* Event kinds: X(name, code, key field). The key field picks the ID whose
   hash chooses the shard (DESIGN section 4). Codes are stored in the log:
   never renumber, only add. Codes below 4 and above 13 must stay rare:
   the partial index event_rare (sql/schema.sql) holds them. Codes 21-23
   are other work's (issues 26, 29), 24-27 the cluster's (issue 28): a
   code with no kind is a gap, with no name. */
#define DB_KINDS(X)                                                           \
    X(job_started, 1, job)                                                    \
    X(job_finished, 2, job)                                                   \
    X(module_registered, 3, job)                                              \
    X(task_submitted, 4, task)                                                \
    X(task_finished, 5, task)                                                 \
    X(task_failed, 6, task)                                                   \
    X(task_retried, 7, task)                                                  \
    X(object_put, 8, task)                                                    \
    X(object_lost, 9, task)                                                   \
    X(object_spilled, 10, task)                                               \
    X(actor_created, 11, actor)                                               \
    X(actor_call, 12, actor)                                                  \
    X(actor_checkpoint, 13, actor)                                            \
    X(actor_restarted, 14, actor)                                             \
    X(actor_died, 15, actor)                                                  \
    X(node_joined, 16, node)                                                  \
    X(node_died, 17, node)                                                    \
    X(note, 18, job)                                                          \
    X(task_cancelled, 19, task)                                               \
    X(checkpoint, 20, job)                                                    \
    X(node_left, 24, node)                                                    \
    X(object_copied, 25, task)

enum db_kind {
#define X(name, code, key) DB_K_##name = code,
    DB_KINDS(X)
#undef X
        DB_K_MAX
};

/* Presence bits of the optional fields, in encoding order. */
enum db_field {
    DB_F_CLIENT = 1u << 0, /* client[16] + cseq: the event's ID, for idempotence */
    DB_F_JOB = 1u << 1,
    DB_F_TASK = 1u << 2,
    DB_F_PARENT = 1u << 3,
    DB_F_ACTOR = 1u << 4,
    DB_F_NODE = 1u << 5,
    DB_F_IDX = 1u << 6,
    DB_F_WORKER = 1u << 7,
    DB_F_ATTEMPT = 1u << 8,
    DB_F_STATUS = 1u << 9,
    DB_F_T_START = 1u << 10,
    DB_F_T_END = 1u << 11,
    DB_F_SIZE = 1u << 12,
    DB_F_NAME = 1u << 13,
    DB_F_INFO = 1u << 14,
    DB_F_FP = 1u << 15,
    DB_F_DEPS = 1u << 16,
    DB_F_BODY = 1u << 17,
    DB_F_ALL = (1u << 18) - 1
};

#define DB_HASH_LEN 16
#define DB_FP_LEN 16
#define DB_DEP_LEN 20 /* an object ID: task ID (16) + return index (u32 big-endian) */

/* An event. Variable-length fields point into memory owned by someone else
   (the decoded message, a SQLite row); the struct owns nothing. */
typedef struct {
    uint64_t seq;  /* dense per shard, from 1; assigned by the head */
    int64_t ts;    /* ns since the Unix epoch; assigned by the head */
    uint16_t kind; /* enum db_kind */
    uint32_t mask; /* which optional fields are present (enum db_field) */
    util_id_t client;
    uint64_t cseq;
    util_id_t job, task, parent, actor, node;
    int64_t idx, worker, attempt, status, t_start, t_end, size;
    const char *name;
    uint32_t name_len;
    const char *info;
    uint32_t info_len;
    uint8_t fp[DB_FP_LEN];
    const uint8_t *deps;
    uint32_t deps_len;
    const uint8_t *body;
    uint32_t body_len;
    uint8_t hash[DB_HASH_LEN]; /* chain hash: see db_event_chain() */
} db_event_t;

/* Name of a kind ("task_submitted"), or NULL for a code this version does
   not know (show it by number: "kind#42"). */
const char *db_kind_name(int kind);
/* Code of a kind name, or 0. */
int db_kind_code(const char *name);

/* The ID that decides the event's shard: the field DB_KINDS names for its
   kind (the job for a kind this version does not know), or the zero ID
   when that field is absent (its presence bit is clear), whatever the
   struct holds there: a client and the head that checks it must agree. */
const util_id_t *db_event_key(const db_event_t *e);

/* Append the canonical record of e to b (see db_event.c). The record holds
   ts and hash as they are in e; the head patches them in place. */
void db_event_encode(const db_event_t *e, util_buf_t *b);

/* Decode one record of n bytes into e (pointers into p). seq is not in the
   record: the caller sets it. 0, or LUX_ECORRUPT naming what is wrong.
   A kind this version does not know is not wrong: the record decodes
   (db_kind_name gives NULL for it), so that a replica or a reader of an
   older version stores, forwards and shows a newer version's events.
   Only the head refuses such kinds (it cannot tell their key). */
int db_event_decode(db_event_t *e, const uint8_t *p, size_t n);

/* Offsets inside a record, for patching at the head. */
#define DB_REC_TS_OFF 0
#define DB_REC_MIN 30 /* ts 8, kind 2, mask 4, hash 16 */

/* The chain hash of the record rec (n bytes, hash field ignored) at seq,
   following prev: BLAKE2b-128(prev || seq LE64 || rec[0 .. n-16]). */
void db_event_chain(uint8_t out[DB_HASH_LEN], const uint8_t prev[DB_HASH_LEN], uint64_t seq,
                    const uint8_t *rec, size_t n);

/* The hash every shard's chain starts from. */
void db_event_genesis(uint8_t out[DB_HASH_LEN], const util_id_t *cluster, uint32_t shard);

/* Field helpers: set a field and its presence bit. */
#define DB_SET_ID(e, field, bit, idp)                                         \
    do {                                                                      \
        (e)->field = *(idp);                                                  \
        (e)->mask |= (bit);                                                   \
    } while (0)
#define DB_SET_INT(e, field, bit, v)                                          \
    do {                                                                      \
        (e)->field = (v);                                                     \
        (e)->mask |= (bit);                                                   \
    } while (0)
void db_event_set_name(db_event_t *e, const char *s);
void db_event_set_info(db_event_t *e, const char *s);

#endif

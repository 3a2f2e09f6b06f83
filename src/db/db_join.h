/*  db_join - the decisions of a join, without I/O: what a replica that is
    not in its chain reads from the tail, where it truncates, when it asks
    to join; how long the tail holds its acknowledgements for it; when the
    master admits it. The replica (db_replica_join.c) and the master
    (db_master.c) act on these answers with sockets and SQLite; the chain
    fixture (t/5012) acts on them with messages and logs in memory, so the
    protocol it checks over thousands of schedules is this code.

    THE JOINER. A replica with events probes first: it reads a window of
    DB_JOIN_PROBE events from the tail ending at its own last seq, and
    finds the newest seq where its hash and the tail's agree (an answer
    cut short by the tail's byte limit, every record of it agreeing,
    is read on from its end, not taken for the newest). Its events
    after that are ones the tail does not hold (unacknowledged: nothing is
    acknowledged before the tail holds it), so it truncates to there; when
    nothing agrees it probes further back. Then it fetches until it has
    the tail's last seq and asks the master to JOIN with that seq.

    THE TAIL. A joiner becomes the tail, so it must hold every event the
    tail has acknowledged. Asked by the master (JOIN_HOLD), the tail stops
    acknowledging at its ack_seq (the held seq) and says so (JOIN_SEQ);
    until the hold ends (a new epoch, or the master's refusal) it
    acknowledges nothing past that seq.

    THE MASTER. Admits the joiner only if it has the held seq; otherwise it
    sends it back to fetch (EGAP).
*/
#ifndef DB_JOIN_H_INCLUDED
#define DB_JOIN_H_INCLUDED

#include "db_event.h"
#include "../net/net_wire.h"

#include <stdbool.h>
#include <stdint.h>

#define DB_JOIN_PROBE 4096 /* events per probe window */
#define DB_JOIN_FETCH 8192 /* events per READ when catching up */

enum { DB_J_IDLE, DB_J_PROBE, DB_J_TRUNC, DB_J_FETCH, DB_J_WAIT };

typedef struct {
    int phase;           /* DB_J_* */
    uint64_t req;        /* id of the outstanding READ, 0 when none */
    int64_t ms;          /* when it was sent, or JOIN asked */
    uint64_t probe_from; /* the probe window's first seq */
    uint32_t window;     /* events per probe window; 0: DB_JOIN_PROBE (a test
                            sets fewer, to reach the reads further back) */
    uint64_t agreed;     /* the newest seq known to agree with the tail's,
                            from a probe answer cut short by the tail's
                            byte limit; 0: none */
} db_join_t;

/* Begin (again) with `have` events: probe when there are some, else fetch. */
void db_join_begin(db_join_t *j, uint64_t have);

/* The READ to send now while probing or fetching: *from, *count. false
   in the other phases. */
bool db_join_read(const db_join_t *j, uint64_t have, uint64_t *from, uint32_t *count);

/* Our hash at seq into hash: 0, or a code (no such seq). */
typedef int db_join_hash_fn(void *arg, uint64_t seq, uint8_t *hash);

/* What to do after an answer. */
enum {
    DB_JOIN_READ,     /* send db_join_read's READ */
    DB_JOIN_TRUNCATE, /* truncate after *agree (phase DB_J_TRUNC) */
    DB_JOIN_ASK,      /* caught up: JOIN with `have` (phase DB_J_WAIT) */
};

/* The tail's answer to a probe: in (the tail holds tail_last), our log
   ending at `have`, our hashes by fn. */
int db_join_probe(db_join_t *j, const net_batch_t *in, uint64_t tail_last, uint64_t have,
                  db_join_hash_fn *fn, void *arg, uint64_t *agree);

/* A fetched batch was taken (bad: it did not continue our log); we now
   have `have`. */
int db_join_fetched(db_join_t *j, bool bad, uint64_t have, uint64_t tail_last);

/* The tail's hold for a joiner. */
typedef struct {
    bool on;
    uint32_t index; /* the joiner */
    uint64_t last;  /* what it said it has */
    uint64_t seq;   /* nothing past this is acknowledged or published */
    uint64_t token; /* of our latest JOIN_SEQ */
    int64_t ms;     /* when we last heard of the join or asked */
} db_hold_t;

/* JOIN_HOLD for joiner (which has `last`) at a tail that has acknowledged
   ack_seq: true when the hold begins now (it holds at ack_seq). */
bool db_hold_begin(db_hold_t *h, uint32_t joiner, uint64_t last, uint64_t ack_seq);

/* How far the tail, having committed commit_seq and acknowledged ack_seq,
   may acknowledge now. */
uint64_t db_hold_ack_upto(const db_hold_t *h, uint64_t ack_seq, uint64_t commit_seq);

/* The master, told by the tail that it holds at `held`: may a joiner with
   `last` join? (false: it fetches up to `held` first). */
bool db_join_admit(uint64_t last, uint64_t held);

#endif

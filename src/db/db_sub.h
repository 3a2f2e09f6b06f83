/*  db_sub - a subscription to one shard of the log (the Clone pattern,
    DESIGN section 6).

    A subscriber connects to the tail's PUB first, then catches up from
    SQLite with READs at the tail's read endpoint, two in flight, then
    delivers the live events, dropping those it already has. Every event
    after `after` is delivered exactly once and in seq order: a gap in the
    live stream (a slow subscriber's dropped messages, a new tail) is filled
    by reading again, and the tail's idle announcements of its last seq
    reveal gaps even when nothing new is published. When the chain's tail
    changes, the subscriber moves to the new tail and continues from the
    last seq it delivered; it learns of the change from the master's push,
    or, when that push is lost, by asking the master once the tail has
    been silent for a few announcement periods.
*/
#ifndef DB_SUB_H_INCLUDED
#define DB_SUB_H_INCLUDED

#include "db_cluster.h"
#include "../net/net_ep.h"
#include "../net/net_wire.h"

typedef struct db_sub_t db_sub_t;

/* Subscribe to shard; deliver every event with seq > after. */
db_sub_t *db_sub_new(const db_cluster_t *cluster, net_sec_t *sec, uint32_t shard, uint64_t after);
void db_sub_destroy(db_sub_t **self_p);

/* Wait up to timeout_ms for the next events. Returns how many (the batch
   in *out, valid until the next call), 0 on timeout. */
int db_sub_recv(db_sub_t *self, net_batch_t *out, int timeout_ms);

/* The last seq delivered. */
uint64_t db_sub_last(const db_sub_t *self);

/* Counters for tests and benchmarks: events delivered from READs, events
   delivered live, and times a gap sent us back to reading. */
void db_sub_stats(const db_sub_t *self, uint64_t *from_reads, uint64_t *live, uint64_t *gaps);
/* Times a live tail fell silent and we asked the master again. */
uint64_t db_sub_silences(const db_sub_t *self);

/* Fault injection for tests: ignore every configuration the master pushes
   on its PUB, as if each push were lost, so that only the subscriber's
   own requests (CONFIG_REQ) can move it to a new tail. */
void db_sub_drop_pushes(db_sub_t *self, bool drop);

#endif

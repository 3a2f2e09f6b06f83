/*  db_client - appends events to the log.

    Each event goes to the shard of its key (db_event_key), is given an
    event ID (this client's ID and a counter) and joins that shard's next
    APPEND batch. A batch stays in flight until the head acknowledges it,
    which it does once the tail committed it; if the head changes or stays
    silent, every batch in flight is sent again to the head of the newest
    configuration, and the head drops events it already has, by event ID.
    So an acknowledged event is in the log exactly once, and an event is
    never dropped by the client while it lives.

    A client is used by one thread. Its IDs are random per client, so a
    client that restarts is a new client.
*/
#ifndef DB_CLIENT_H_INCLUDED
#define DB_CLIENT_H_INCLUDED

#include "db_cluster.h"
#include "db_event.h"
#include "../net/net_ep.h"

typedef struct db_client_t db_client_t;

typedef struct {
    const db_cluster_t *cluster;
    net_sec_t *sec;             /* cluster key (tcp) */
    uint32_t max_inflight;      /* events per shard in flight before append waits; 0: 65536 */
    uint32_t batch;             /* events per APPEND at most; 0: 2048 */
    int timeout_ms;             /* how long append and sync wait; 0: 30000 */
} db_client_opts_t;

/* Connect to the cluster's master and learn the chains (waits up to the
   timeout for the first configuration). NULL with the message set. */
db_client_t *db_client_new(const db_client_opts_t *opts);
void db_client_destroy(db_client_t **self_p);

/* Queue e (its client ID and cseq are set here; ts and hash by the head).
   The bytes are copied. Sends a batch when it is full; waits while the
   shard has max_inflight events unacknowledged. 0, or LUX_ETIMEDOUT (e
   was not queued). */
int db_client_append(db_client_t *self, db_event_t *e);

/* The record of the event with ID cseq on shard, as queued, while it is
   not acknowledged: appended to out (which grows). 0, or LUX_ENOTFOUND
   when this client no longer holds it (acknowledged, or never queued),
   or LUX_ENOMEM. For a caller that needs an event back before the log
   has it, without keeping a copy of each (the node's lineage lookups). */
int db_client_queued(const db_client_t *self, uint32_t shard, uint64_t cseq, util_buf_t *out);

/* Send every partly filled batch now. */
int db_client_flush(db_client_t *self);

/* Flush and wait until every queued event is acknowledged. 0 or
   LUX_ETIMEDOUT. */
int db_client_sync(db_client_t *self, int timeout_ms);

/* Handle what arrived (acknowledgements, configurations), waiting up to
   timeout_ms for something. Returns the number of events newly
   acknowledged. */
int db_client_poll(db_client_t *self, int timeout_ms);

/* The sockets db_client_poll reads, for a caller's own poll loop (they
   change when a chain is reconfigured: ask again before each poll). Fills
   up to max items (POLLIN) and returns how many. */
int db_client_pollitems(db_client_t *self, zmq_pollitem_t *items, int max);
/* Only the sockets acknowledgements come on (one per shard), for a loop
   that wakes for those and calls db_client_poll every few milliseconds
   anyway, which reads the configuration sockets too. */
int db_client_ack_items(db_client_t *self, zmq_pollitem_t *items, int max);

/* Events sent and not yet acknowledged (queued ones not counted). */
uint64_t db_client_inflight(const db_client_t *self);

/* Why a shard's events wait: its head refused a batch of them in flight
   as failed (a write error, a full disk), nothing of ours committed there
   since, its chain did not change, and it has no other replica to take
   its place; NULL when not. */
const char *db_client_failed(const db_client_t *self, uint32_t shard);
/* The same for the event with ID cseq only: NULL unless the batch that
   holds it was itself refused (events sent after the refusal wait for
   their own answer). */
const char *db_client_failed_event(const db_client_t *self, uint32_t shard, uint64_t cseq);

/* Events queued or in flight and not yet acknowledged. */
uint64_t db_client_unacked(const db_client_t *self);

/* The seq the head gave to the newest acknowledged event of a shard, and
   that event's cseq (an APPEND_ACK names one event: doc/protocol.md
   11.4): every event of ours in that shard up to it is in the log. */
uint64_t db_client_acked_seq(const db_client_t *self, uint32_t shard);
uint64_t db_client_acked_cseq(const db_client_t *self, uint32_t shard);

/* This client's ID, and the shard an event goes to. */
const util_id_t *db_client_id(const db_client_t *self);
uint32_t db_client_shard(const db_client_t *self, const db_event_t *e);

/* Times a batch was sent again after a failure or silence (for tests). */
uint64_t db_client_resends(const db_client_t *self);
/* Whether a shard's head is reached now by a local link (net_link.h)
   rather than ZeroMQ (for tests). */
bool db_client_linked(const db_client_t *self, uint32_t shard);

#endif

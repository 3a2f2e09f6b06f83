/*  db_master - the chain master: the membership and epoch of every shard's
    chain (DESIGN section 5).

    It binds a ROUTER (replicas' HEARTBEAT and JOIN, anyone's CONFIG_REQ and
    STATUS_REQ) and a PUB on which every new configuration is published.
    A replica silent for dead_ms is removed from its chain (never the last
    member: a chain keeps its tail, whose log is the committed one); a
    member that reports it restarted is removed too, and rejoins at the tail
    once caught up. Every change bumps the chain's epoch, is written to
    DIR/master.state before anyone hears of it, and is pushed to the
    shard's replicas and published.

    The master is a single point of failure of the head node: if it dies,
    the chains keep serving with their last configuration but nothing is
    reconfigured until it is back (it reloads master.state).
*/
#ifndef DB_MASTER_H_INCLUDED
#define DB_MASTER_H_INCLUDED

#include "db_chain.h"
#include "../net/net_ep.h"

#include <czmq.h>

typedef struct {
    const db_cluster_t *cluster; /* copied */
    net_sec_t *sec;              /* for tcp */
} db_master_opts_t;

zactor_t *db_master_new(const db_master_opts_t *opts);

/* STATUS_REP: frame 1 a CONFIG body (all chains); frame 2: count u32, then
   per replica slot: age_ms u64 (UINT64_MAX when never heard from), length
   u32 and a HEARTBEAT body; frame 3: the master's pid u32. */

/* What a running master knows: the chains and the last heartbeat of every
   replica slot (slot = shard * replicas + index). */
typedef struct {
    db_chain_t *chains;   /* per shard */
    db_beat_t *beats;     /* per slot */
    int64_t *age_ms;      /* per slot: ms since its heartbeat, -1 never heard */
    uint32_t master_pid;
} db_status_t;

/* Ask the master of cluster c (STATUS_REQ). 0, or LUX_ETIMEDOUT (no
   answer within timeout_ms) / LUX_EPROTO; db_status_free after. */
int db_master_status(const db_cluster_t *c, net_sec_t *sec, db_status_t *st, int timeout_ms);
void db_status_free(db_status_t *st);

#endif

/*  lux_ckpt - the supervisor's signed checkpoints (lux supervise): each
    shard's committed state signed every every_ms, every every_events
    events and at a clean stop, into the witness file, and (but at a stop)
    into the shard's log as a checkpoint event (src/db/db_ckpt.h). */
#ifndef LUX_CKPT_H_INCLUDED
#define LUX_CKPT_H_INCLUDED

#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "net/net_ep.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const char *witness;   /* NULL: DIR/witness */
    char witness_buf[PATH_MAX];
    int64_t every_ms;      /* 0: not by time */
    uint64_t every_events; /* 0: not by count */
    uint8_t sk[DB_CKPT_SK_LEN];
    uint64_t *seq;         /* per shard: the newest seq signed */
    int64_t *ms;           /* per shard: when */
    int64_t complain_ms;
    net_sec_t *sec;        /* borrowed: for the log client */
    db_client_t *log;      /* each checkpoint as an event too (db_ckpt_log) */
} lux_ckpt_t;

/* Load (or make) the key pair and get ready: 0 or a code. */
int lux_ckpt_init(lux_ckpt_t *ck, const db_cluster_t *c);
/* Sign what is due at now (everything when stopping). */
void lux_ckpt_tick(lux_ckpt_t *ck, const db_cluster_t *c, int64_t now, bool stopping);
void lux_ckpt_free(lux_ckpt_t *ck);

#endif

/*  lux_ckpt - the supervisor's signed checkpoints (see lux_ckpt.h). Off
    the append path: the signer reads the tail's file. */
#include "lux_ckpt.h"
#include "util/util_err.h"
#include "util/util_log.h"
#include "util/util_time.h"

#include <sodium.h>
#include <stdlib.h>

int
lux_ckpt_init(lux_ckpt_t *ck, const db_cluster_t *c)
{
    char sk[PATH_MAX], pk[PATH_MAX];
    int rc;
    db_ckpt_secret_path(c, sk, sizeof sk);
    db_ckpt_public_path(c, pk, sizeof pk);
    if ((rc = db_ckpt_keygen(sk, pk)) || (rc = db_ckpt_load_secret(sk, ck->sk)))
        return rc;
    if (!ck->witness)
        ck->witness = db_ckpt_witness_path(c, ck->witness_buf, sizeof ck->witness_buf);
    ck->seq = calloc(c->shards, sizeof *ck->seq);
    ck->ms = calloc(c->shards, sizeof *ck->ms);
    if (!ck->seq || !ck->ms)
        return util_err(LUX_ENOMEM, "out of memory");
    int64_t now = util_mono_ms();
    for (uint32_t s = 0; s < c->shards; s++)
        ck->ms[s] = now;
    log_info("signing checkpoints into %s (every %lld ms, every %llu events, at stop)",
             ck->witness, (long long) ck->every_ms, (unsigned long long) ck->every_events);
    return 0;
}

void
lux_ckpt_tick(lux_ckpt_t *ck, const db_cluster_t *c, int64_t now, bool stopping)
{
    if (ck->log)
        db_client_poll(ck->log, 0); /* acknowledgements, resends to a new head */
    for (uint32_t s = 0; s < c->shards && ck->seq; s++) {
        bool due = stopping || (ck->every_ms && now - ck->ms[s] >= ck->every_ms);
        uint64_t after = ck->seq[s];
        if (!due && ck->every_events) {
            /* signed when the tail is every_events past the last one */
            after = ck->seq[s] + ck->every_events - 1;
        } else if (!due) {
            continue;
        }
        uint64_t got;
        db_ckpt_t made;
        if (db_ckpt_take(c, ck->sk, ck->witness, s, after, &got, &made)) {
            if (stopping || now - ck->complain_ms >= 60000) {
                log_error("checkpoint of shard %u: %s", s, lux_errmsg());
                ck->complain_ms = now;
            }
            continue;
        }
        if (got > after) {
            ck->seq[s] = got;
            ck->ms[s] = now;
            log_info("shard %u: signed checkpoint at seq %llu", s, (unsigned long long) got);
            if (!stopping) { /* at a stop the replicas are gone: the witness only */
                db_client_opts_t o = {.cluster = c, .sec = ck->sec, .timeout_ms = 10000};
                if ((!ck->log && !(ck->log = db_client_new(&o))) ||
                    db_ckpt_log(ck->log, &made, c->shards))
                    log_error("shard %u: checkpoint %llu not in the log: %s", s,
                              (unsigned long long) got, lux_errmsg());
                ck->seq[s] = got + 1; /* the event itself asks for no checkpoint */
            }
        } else if (due) {
            ck->ms[s] = now; /* nothing new */
        }
    }
}

void
lux_ckpt_free(lux_ckpt_t *ck)
{
    sodium_memzero(ck->sk, sizeof ck->sk);
    db_client_destroy(&ck->log);
    free(ck->seq);
    free(ck->ms);
    ck->seq = NULL;
    ck->ms = NULL;
}

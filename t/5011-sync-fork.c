/* 5011-sync-fork: a successor whose log forked from its predecessor's is
   not taken as it is at SYNC (issue 26).

   A 2-replica chain is stopped, and the tail's file is given another
   version of its last 10 events (cut, then written anew, hashed onto the
   chain: as a fork would leave it). Restarted, the head says HELLO, the
   tail answers SYNC with its last seq and its hash there, which is not
   the head's. Before, the head took the seq alone, forwarded nothing
   (same length), and every later FORWARD was refused for hashes that do
   not chain: no append was acknowledged again. Now the head sees the
   fork; the tail's log is the committed one, so the head leaves, and
   rejoins truncated to what agrees with the tail. Then appends are
   acknowledged, and both files are identical and verify. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_cluster_t s_c;
static util_id_t s_job;

static int
s_append(db_client_t *cl, int n, int timeout_ms)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &s_job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        if (db_client_append(cl, &e))
            return -1;
    }
    return db_client_sync(cl, timeout_ms);
}

/* Cut the file at path after seq `after`, then write count other events. */
static void
s_make_fork(void *arg, int i, uint64_t seq, db_event_t *e)
{
    (void) seq;
    e->kind = DB_K_note;
    e->ts = util_now_ns();
    e->client = *(const util_id_t *) arg;
    e->cseq = (uint64_t) i + 1;
    e->mask |= DB_F_CLIENT;
    DB_SET_ID(e, job, DB_F_JOB, &s_job);
    db_event_set_info(e, "the other side of a fork");
}
static int
s_fork(const char *path, uint64_t after, int count)
{
    db_store_opts_t o = {.path = path, .cluster = s_c.id, .shard = 0};
    db_store_t *st = db_store_open(&o);
    util_id_t client;
    if (!st)
        return LUX_EIO;
    util_id_random(&client);
    int rc = db_store_truncate(st, after);
    if (!rc)
        rc = tamper_store_append(st, count, s_make_fork, &client);
    db_store_close(&st);
    return rc;
}

/* A replica file's last seq and hash; whether it verifies. */
static bool
s_file(uint32_t index, uint64_t *last, uint8_t hash[DB_HASH_LEN])
{
    char path[600];
    uint64_t bad = 0;
    db_cluster_replica_db(&s_c, 0, index, path, sizeof path);
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    if (!st)
        return false;
    *last = db_store_last_seq(st);
    memcpy(hash, db_store_last_hash(st), DB_HASH_LEN);
    bool good = db_store_verify(st, &bad) == 0;
    if (!good)
        diag("replica %u: %s", index, lux_errmsg());
    db_store_close(&st);
    return good;
}

int
main(void)
{
    char err[4096], tail_path[600];
    util_id_random(&s_job);
    fx_start(&s_c, 1, 2, "--log-only");
    db_client_opts_t co = {.cluster = &s_c, .timeout_ms = 60000};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    is_int(s_append(cl, 30, 20000), 0, "30 events appended");
    db_client_destroy(&cl);
    ok(fx_wait_chain(&s_c, 0, 2, 20000), "the chain of two is whole");
    fx_stop(&s_c);

    db_chain_t chain[1];
    if (db_chain_load_state(&s_c, chain) || chain[0].n != 2)
        bail("master.state: %s", lux_errmsg());
    uint32_t head = chain[0].m[0].index, tail = chain[0].m[1].index;
    db_cluster_replica_db(&s_c, 0, tail, tail_path, sizeof tail_path);
    int rc = s_fork(tail_path, 20, 10);
    is_int(rc, 0, "the tail's (replica %u) seq 21..30 replaced by others: %s", tail,
           rc ? lux_errmsg() : "ok");

    rc = fx_lux(NULL, 0, err, sizeof err, "start --head --log-only --dir %s", s_c.dir);
    is_int(rc, 0, "the cluster restarts %s", rc ? err : "");
    if (rc)
        return done_testing();
    cl = db_client_new(&co);
    rc = cl ? s_append(cl, 10, 60000) : -1;
    is_int(rc, 0, "appends are acknowledged after the restart");
    uint64_t acked = cl ? db_client_acked_seq(cl, 0) : 0;
    ok(acked == 40, "...at seq %llu: after the tail's 30", (unsigned long long) acked);
    db_client_destroy(&cl);
    ok(fx_wait_chain(&s_c, 0, 2, 60000), "replica %u rejoined: the chain is whole", head);
    char cmd[1400], out[64] = "";
    snprintf(cmd, sizeof cmd, "grep -c 'forked from replica' '%s'/log/replica-0-%u.log", s_c.dir,
             head);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(out, sizeof out, p))
            out[0] = '\0';
        pclose(p);
    }
    ok(atoi(out) >= 1, "replica %u's log says its log forked from the tail's", head);
    fx_stop(&s_c);

    uint64_t lh = 0, lt = 0;
    uint8_t hh[DB_HASH_LEN], ht[DB_HASH_LEN];
    bool vh = s_file(head, &lh, hh), vt = s_file(tail, &lt, ht);
    ok(vh && vt, "both files verify");
    ok(lh == lt && lh == 40 && memcmp(hh, ht, DB_HASH_LEN) == 0,
       "both end at seq 40 with the same hash (head %llu, tail %llu)", (unsigned long long) lh,
       (unsigned long long) lt);
    return done_testing();
}

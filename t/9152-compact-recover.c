/* 9152-compact-recover: recovery finds what lux compact moved into the
   archives.

   - Lineage: a driver computes b = t_mix(a, a), a = t_mix(5) and leaves
     (its objects go); the head stops, lux compact moves every event into
     the archives (the replica files keep no task_submitted), the head
     starts again, and a second driver's lux_get of b rebuilds it from its
     lineage: both task specs are read from the archive.
   - Actor: an actor with no checkpoints takes 30 calls; lux compact of the
     running cluster moves them into the archive; its process killed with
     -9 (by the pid it reports), it restarts and replays its calls from the
     archive: its state and the result of the next call are those of an
     actor never killed. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "db/db_event.h"
#include "util/util_err.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int
s_get(lux_t *lx, const lux_ref_t *r, void *out, size_t n)
{
    lux_val_t v;
    int rc = lux_get(lx, r, &v, 120000);
    if (rc)
        return rc;
    if (v.size != n)
        return util_err(LUX_EPROTO, "%zu bytes, not %zu", v.size, n);
    memcpy(out, v.data, n);
    return 0;
}

/* Events of kind (a number) left in the replica files of every shard's
   tail, or -1. */
static long
s_live(const db_cluster_t *c, int kind)
{
    long total = 0;
    for (uint32_t s = 0; s < c->shards; s++)
        for (uint32_t i = 0; i < c->replicas; i++) {
            char path[1024], sql[128];
            sqlite3 *db = NULL;
            sqlite3_stmt *st = NULL;
            db_cluster_replica_db(c, s, i, path, sizeof path);
            snprintf(sql, sizeof sql, "SELECT count(*) FROM event WHERE kind = %d", kind);
            if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
                sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
                sqlite3_step(st) != SQLITE_ROW)
                total = -1;
            else if (total >= 0)
                total += sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
            sqlite3_close(db);
        }
    return total;
}

static lux_t *
s_driver(const db_cluster_t *c)
{
    lux_config_t cfg = {.address = c->dir, .module = graph_module()};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init %s: %s", c->dir, lux_errmsg());
    return lx;
}

int
main(void)
{
    db_cluster_t c;
    char err[4096], out[1024], hex[LUX_REF_LEN * 2 + 1];
    fx_start(&c, 2, 2, "--workers 2");

    /* --- lineage ------------------------------------------------------------------ */
    lux_t *lx = s_driver(&c);
    int64_t x = 5, vb = 0, got = -1;
    lux_ref_t a, b;
    int rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &a);
    if (!rc)
        rc = lux_call(lx, "t_mix", 2, (lux_arg_t[]) {LUX_REF(a), LUX_REF(a)}, 1, &b);
    if (!rc)
        rc = s_get(lx, &b, &vb, 8);
    is_int(rc, 0, "b = t_mix(a, a), a = t_mix(5): %lld (%s)", (long long) vb,
           rc ? lux_errmsg() : "ok");
    lux_ref_hex(&b, hex);
    lux_shutdown(&lx);
    fx_stop(&c);
    rc = fx_lux(out, sizeof out, err, sizeof err, "compact --dir %s --before 100000000", c.dir);
    is_int(rc, 0, "the head stopped, lux compact moves every event (%s)", rc ? err : out);
    is_int(s_live(&c, DB_K_task_submitted), 0, "  no task_submitted is left in a replica file");
    rc = fx_lux(NULL, 0, err, sizeof err, "start --head --dir %s", c.dir);
    is_int(rc, 0, "the head starts again (%s)", rc ? err : "ok");
    lx = s_driver(&c);
    lux_ref_parse(&b, hex);
    rc = s_get(lx, &b, &got, 8);
    is_int(rc, 0, "a second driver's lux_get of b rebuilds it (%s)", rc ? lux_errmsg() : "ok");
    is_int(got, vb, "  to the same value: both task specs read from the archive");

    /* --- actor --------------------------------------------------------------------- */
    lux_actor_t acc;
    int64_t h0 = 11, caller = 0, state[10] = {0}, again[10] = {0}, pid = 0;
    lux_ref_t r, calls[30];
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                          &(lux_actor_opts_t) {.max_restarts = 3}, &acc);
    for (int i = 0; i < 30 && !rc; i++) {
        int64_t v = i * 7 + 3;
        rc = lux_actor_call(lx, &acc, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&v, 8)},
                            1, &calls[i]);
    }
    if (!rc)
        rc = lux_actor_call(lx, &acc, "get", 0, NULL, 1, &r);
    if (!rc)
        rc = s_get(lx, &r, state, sizeof state);
    is_int(rc, 0, "an actor with no checkpoints takes 30 calls (%s)", rc ? lux_errmsg() : "ok");
    is_int(state[1], 30, "  its state counts them");
    /* the replica writers keep rows above the client table they last
       wrote (every 200 ms while appending): compact until none of the
       actor's calls is left in the files, appending between runs */
    long left = -1;
    for (int k = 0; k < 60 && left != 0; k++) {
        rc = fx_lux(out, sizeof out, err, sizeof err, "compact --dir %s --before 100000000",
                    c.dir);
        if (rc) {
            diag("lux compact: %s", err);
            break;
        }
        if ((left = s_live(&c, DB_K_actor_call)) != 0) {
            lux_ref_t t;
            usleep(300000);
            if (lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &t) == 0 &&
                s_get(lx, &t, &got, 8) == 0)
                lux_free(lx, 1, &t);
        }
    }
    is_int(left, 0, "lux compact of the running cluster moves every actor_call into the archive");
    rc = lux_actor_call(lx, &acc, "pid", 0, NULL, 1, &r);
    if (!rc)
        rc = s_get(lx, &r, &pid, 8);
    ok(rc == 0 && pid > 0 && kill((pid_t) pid, SIGKILL) == 0, "kill -9 the actor's process (%lld)",
       (long long) pid);
    rc = lux_actor_call(lx, &acc, "get", 0, NULL, 1, &r);
    if (!rc)
        rc = s_get(lx, &r, again, sizeof again);
    is_int(rc, 0, "it restarts and answers (%s)", rc ? lux_errmsg() : "ok");
    ok(memcmp(state, again, sizeof state) == 0,
       "  with the same state: its 30 calls replayed from the archive (n = %lld)",
       (long long) again[1]);
    int64_t v = 1000, res[2] = {0};
    rc = lux_actor_call(lx, &acc, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&v, 8)}, 1,
                        &r);
    if (!rc)
        rc = s_get(lx, &r, res, sizeof res);
    is_int(rc == 0 ? res[1] : -1, (state[2] + 1000) % 1000003,
           "  and the next call adds to the replayed sum");
    lux_shutdown(&lx);
    fx_stop(&c);
    rc = fx_lux(out, sizeof out, err, sizeof err, "audit --dir %s", c.dir);
    is_int(rc, 0, "the log audits, archives and files as one chain per shard");
    done_testing();
}

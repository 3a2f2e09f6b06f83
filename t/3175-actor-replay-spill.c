/* 3175-actor-replay-spill: an argument of an actor's call that a restart
   will replay (a call after the actor's last checkpoint) is spilled, not
   dropped, when the store evicts it, so each restart brings it back from
   disk instead of rebuilding it (DESIGN 7, rule 15; issue 24).

   The ASan run of t/3108's seed 1069 (chaos) ran out of its time with an
   actor without checkpoint, HAcc, restarted every ~3 s, each restart
   replaying its 103 calls: their arguments had been evicted (task
   outputs, "evicted to make room"), so each restart rebuilt them and
   their lineage again (17 rebuilds at once, 548 rebuilds and 853 MB of
   outputs in the last 11 minutes), evicting the outputs the driver was
   checking.

   Here: a 16 MiB store, one worker, HAcc without checkpoint, four task
   outputs T1..T4 of 3 MiB (t_big: lineage, no put) stepped into it. Three
   rounds: a 14 MiB put, made and freed, evicts T1..T4; the actor's
   process is killed (SIGKILL, by the pid it gave); a step(q) then comes
   after the replay of every call, with the running hash of all. The log
   must show the evictions, three restarts and no rebuild of T1..T4. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"
#include "util/util_err.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)
#define NT 4
#define ROUNDS 3

/* t_big's bytes (t/lib/testmod.c). */
static void
s_big(uint8_t *p, int64_t seed, int64_t n)
{
    memcpy(p, &seed, 8);
    for (int64_t i = 8; i < n; i++)
        p[i] = (uint8_t) (seed * 31 + i);
}

static int
s_call(lux_t *lx, lux_actor_t *a, const char *m, int argc, const lux_arg_t *argv, int64_t *out)
{
    lux_ref_t r;
    int rc = lux_actor_call(lx, a, m, argc, argv, 1, &r);
    return rc ? rc : graph_get8(lx, &r, out);
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/run", tap_tmpdir());
    lux_config_t cfg = {.module = graph_module(), .dir = dir, .store_bytes = 16 * MB,
                        .workers = 1};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    int64_t n = 3 * MB;
    uint8_t *buf = malloc(14 * MB);
    if (!buf)
        bail("out of memory");

    lux_actor_t a;
    lux_ref_t t[NT];
    int64_t h0 = 5, pid = 0, got = 0;
    uint64_t h = (uint64_t) h0;
    int rc = lux_actor_create(lx, "HAcc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                              &(lux_actor_opts_t) {.max_restarts = 100}, &a);
    rc = rc ? rc : s_call(lx, &a, "pid", 0, NULL, &pid);
    for (int i = 0; i < NT && !rc; i++)
        rc = graph_call_big(lx, 100 + i, n, &t[i]);
    for (int i = 0; i < NT && !rc; i++) {
        rc = s_call(lx, &a, "step", 1, (lux_arg_t[]) {LUX_REF(t[i])}, &got);
        s_big(buf, 100 + i, n);
        h = hx_acc_step(h, buf, (size_t) n);
        if (!rc && (uint64_t) got != h)
            rc = util_err(LUX_ETASK, "step(T%d) answered %llx, not %llx", i + 1,
                          (unsigned long long) got, (unsigned long long) h);
    }
    ok(rc == 0 && pid > 0, "actor HAcc (no checkpoint, pid %lld) took step(T1..T4), each a "
       "task's output of 3 MiB (%s)", (long long) pid, rc ? lux_errmsg() : "ok");

    for (int r = 1; r <= ROUNDS && !rc; r++) {
        lux_ref_t big;
        memset(buf, r, 14 * MB);
        rc = lux_put(lx, buf, 14 * MB, &big);
        if (!rc)
            lux_free(lx, 1, &big);
        ok(rc == 0, "round %d: a 14 MiB put made and freed: T1..T4 evicted (%s)", r,
           rc ? lux_errmsg() : "ok");
        bool killed = !rc && fx_is_worker((pid_t) pid) && kill((pid_t) pid, SIGKILL) == 0;
        ok(killed, "round %d: the actor's process %lld is killed (SIGKILL)", r, (long long) pid);
        if (!killed)
            break;
        int64_t q = 1000 + r;
        rc = s_call(lx, &a, "step", 1, (lux_arg_t[]) {LUX_VAL(&q, 8)}, &got);
        h = hx_acc_step(h, &q, 8);
        int64_t pid2 = 0;
        rc = rc ? rc : s_call(lx, &a, "pid", 0, NULL, &pid2);
        ok(rc == 0 && (uint64_t) got == h && pid2 > 0 && pid2 != pid,
           "round %d: restarted (pid %lld), it replays its calls and answers step(%lld) with the "
           "hash of all (%s)", r, (long long) pid2, (long long) q,
           rc ? lux_errmsg() : (uint64_t) got != h ? "wrong hash" : "ok");
        pid = pid2;
    }
    free(buf);
    lux_shutdown(&lx);

    db_query_t *qy = fx_query_open(dir);
    int64_t restarts = fx_count(qy, "SELECT count(*) FROM actor_restarts");
    int64_t evicted = fx_count(qy, "SELECT count(*) FROM events WHERE kind IN "
                                   "('object_lost', 'object_spilled') AND size = %lld",
                               (long long) n);
    int64_t rebuilds = fx_count(qy, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%'");
    db_query_close(&qy);
    is_int(restarts, ROUNDS, "the log holds %d restarts of the actor", ROUNDS);
    ok(evicted >= NT * ROUNDS, "the log holds %lld evictions of T1..T4 (at least %d: each "
       "round evicted them)", (long long) evicted, NT * ROUNDS);
    is_int(rebuilds, 0, "no restart rebuilt T1..T4: the log holds %lld rebuilds (before: each "
           "restart rebuilt them)", (long long) rebuilds);
    return done_testing();
}

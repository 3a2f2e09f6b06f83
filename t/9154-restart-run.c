/*  9154-restart-run - a helper of t/9154-replay-restart.sh, not a test:
    records a job whose actor's process is killed with SIGKILL and
    restarts from its checkpoint, for lux replay.

    usage: 9154-restart-run RUNS_DIR

    On the embedded default (t/lib/testmod.so): an Acc actor (max_restarts
    3, a checkpoint every 5 calls) takes 22 add calls, each waited for;
    its process (the worker of the 22nd call's task_finished event, a
    child of this process: the embedded node manager runs here) is killed
    with SIGKILL, and once the log holds the actor_restarted event 18 more
    add calls and a get follow. No call returns a pid, so every output is
    a function of the calls alone. Prints the run's directory and the pid
    killed, one a line. Exit status 0 when the last get shows 40 calls
    applied with the sums of an actor never killed.
*/
#include "lux.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_hash.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define S_CALLS 40
#define S_KILL_AFTER 22
#define S_WAIT_MS 120000

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: 9154-restart-run RUNS_DIR\n");
        return 2;
    }
    lux_config_t cfg = {.module = graph_module(), .dir = argv[1], .workers = 1};
    lux_t *lx = lux_init(&cfg);
    if (!lx) {
        fprintf(stderr, "9154-restart-run: lux_init: %s\n", lux_errmsg());
        return 1;
    }
    lux_actor_t acc;
    lux_ref_t r;
    lux_val_t v;
    int64_t h0 = 11, sum = 0, pid = 0;
    char why[512] = "", hex[33];
    int rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                              &(lux_actor_opts_t) {.max_restarts = 3, .checkpoint_every = 5},
                              &acc);
    db_query_t *q = fx_query_open(lux_dir(lx));
    for (int i = 1; i <= S_CALLS && !rc; i++) {
        int64_t caller = i % 3, x = i * 7 + 3;
        sum += caller == 0 ? x : 0;
        rc = lux_actor_call(lx, &acc, "add", 2,
                            (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&x, 8)}, 1, &r);
        if (!rc && (rc = lux_get(lx, &r, &v, S_WAIT_MS)))
            snprintf(why, sizeof why, "add %d: %s", i, lux_errmsg());
        if (rc || i != S_KILL_AFTER)
            continue;
        /* the process that ran this call, from its task_finished event */
        util_hex(hex, r.b, 16);
        int64_t deadline = util_mono_ms() + S_WAIT_MS;
        while ((pid = fx_count(q, "SELECT coalesce(max(worker), 0) FROM event WHERE kind = 5"
                                  " AND task = x'%s'", hex)) <= 0 &&
               util_mono_ms() < deadline)
            usleep(10000);
        if (pid <= 0 || !fx_is_worker((pid_t) pid) || kill((pid_t) pid, SIGKILL)) {
            snprintf(why, sizeof why, "no worker process found for call %d (%lld)", i,
                     (long long) pid);
            rc = 1;
            break;
        }
        while (fx_count(q, "SELECT count(*) FROM event WHERE kind = 14") < 1 &&
               util_mono_ms() < deadline)
            usleep(10000);
        if (fx_count(q, "SELECT count(*) FROM event WHERE kind = 14") < 1) {
            snprintf(why, sizeof why, "no actor_restarted event after the kill of %lld",
                     (long long) pid);
            rc = 1;
        }
    }
    int64_t state[10] = {0};
    if (!rc && !(rc = lux_actor_call(lx, &acc, "get", 0, NULL, 1, &r)) &&
        !(rc = lux_get(lx, &r, &v, S_WAIT_MS)) && v.size == sizeof state)
        memcpy(state, v.data, sizeof state);
    if (!rc && (state[1] != S_CALLS || state[2] != sum % 1000003)) {
        snprintf(why, sizeof why, "the state after the restart: %lld calls, sum %lld (want %d, %lld)",
                 (long long) state[1], (long long) state[2], S_CALLS, (long long) sum);
        rc = 1;
    }
    if (rc && !why[0])
        snprintf(why, sizeof why, "%s", lux_errmsg());
    printf("%s\n%lld\n", lux_dir(lx), (long long) pid);
    if (rc)
        fprintf(stderr, "9154-restart-run: %s\n", why);
    db_query_close(&q);
    lux_shutdown(&lx);
    return rc ? 1 : 0;
}

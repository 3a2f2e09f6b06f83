/*  9112-graph-run - a helper of t/9112-replay-graph.sh, not a test: runs a
    random task graph (t/lib/graph.c: values and refs mixed, two returns,
    nested tasks, puts small and large, large blobs) with failures and
    retries on the embedded default, for lux replay.

    usage: 9112-graph-run RUNS_DIR SEED TASKS

    Besides the graph: t_crash with 2 attempts (kills its own worker both
    times: a retry, then a failure) and t_fail (raises); and once the
    graph's first output is ready, one of this cluster's worker processes
    is killed with SIGKILL, by its pid (a child of this process: the
    embedded node manager runs here), so a task running there is retried.
    Prints the run's directory and the pid killed (0 when no worker was
    found), one a line. Exit status 0 when every output of the graph was
    right.
*/
#include "lux.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: 9112-graph-run RUNS_DIR SEED TASKS\n");
        return 2;
    }
    lux_config_t cfg = {.module = graph_module(), .dir = argv[1], .workers = 2};
    lux_t *lx = lux_init(&cfg);
    if (!lx) {
        fprintf(stderr, "9112-graph-run: lux_init: %s\n", lux_errmsg());
        return 1;
    }
    graph_t g;
    lux_opts_t opts = {.max_attempts = 5};
    lux_opts_t twice = {.max_attempts = 2};
    lux_ref_t crash, fail;
    int64_t one = 1;
    char why[512] = "";
    int rc = graph_submit_opts(lx, &g, atoi(argv[3]), strtoull(argv[2], NULL, 10), 256 * 1024,
                               &opts);
    if (!rc)
        rc = lux_call_opts(lx, &twice, "t_crash", 0, NULL, 1, &crash);
    if (!rc)
        rc = lux_call(lx, "t_fail", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &fail);
    pid_t killed = 0;
    if (!rc && g.n > 0) {
        int ready = 0;
        lux_wait(lx, 1, &g.nodes[0].ref[0], 1, 60000, &ready);
        pid_t kids[256];
        int n = fx_children(kids, 256);
        for (int i = 0; i < n && !killed; i++)
            if (util_proc_is_worker(kids[i]) && kill(kids[i], SIGKILL) == 0)
                killed = kids[i];
    }
    int bad = rc ? 1 : graph_check(lx, &g, why, sizeof why);
    lux_val_t v;
    if (!rc && (lux_get(lx, &crash, &v, 120000) != LUX_ETASK ||
                lux_get(lx, &fail, &v, 60000) != LUX_ETASK)) {
        snprintf(why, sizeof why, "t_crash or t_fail did not fail");
        bad++;
    }
    printf("%s\n%d\n", lux_dir(lx), (int) killed);
    if (rc || bad)
        fprintf(stderr, "9112-graph-run: %s\n", rc ? lux_errmsg() : why);
    graph_free(&g);
    lux_shutdown(&lx);
    return rc || bad ? 1 : 0;
}

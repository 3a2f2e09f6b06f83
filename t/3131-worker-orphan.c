/* 3131-worker-orphan: the workers of a node manager die with it, however
   it dies. Twice: a head started by `lux start` (its supervisor hosts the
   node manager, which starts the workers), and the embedded default in a
   driver process of this test. A task holds a worker in user code
   (t_hold: it signs with its pid, then waits for a file that the test
   writes only at the end), the test kills the process hosting the node
   manager with SIGKILL, by pid, and every worker that node started (its
   children in /proc, `lux worker`) must be gone within 30 s, a bound
   that only a worker left alive reaches. Before the fix the busy worker
   lived on with no node to take its result (one was found 24 minutes
   after a CI run, the 10-minute task of t/5301 in it); an idle one ended,
   its connection closed. At the end the test lets go of the tasks and
   kills, by pid, what it started that is still there. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "exec/exec_client.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define GONE_MS 30000 /* only a worker left alive waits this long */

static pid_t s_ours[64]; /* what to kill at the end, if still there */
static int s_nours;
static char s_gates[2][600];

static void
s_cleanup(void)
{
    for (int i = 0; i < 2; i++)
        if (s_gates[i][0]) {
            char path[700];
            snprintf(path, sizeof path, "%s/release", s_gates[i]);
            FILE *f = fopen(path, "w");
            if (f)
                fclose(f);
        }
    for (int i = 0; i < s_nours; i++)
        if (util_proc_alive(s_ours[i]))
            kill(s_ours[i], SIGKILL);
}

static void
s_keep(pid_t pid)
{
    if (pid > 0 && s_nours < 64)
        s_ours[s_nours++] = pid;
}

/* The `lux worker` processes whose parent is pid. */
static int
s_workers_of(pid_t parent, pid_t *out, int max)
{
    pid_t kids[256];
    int n = 0, k = fx_children_of(parent, kids, 256);
    for (int i = 0; i < k && n < max; i++)
        if (fx_is_worker(kids[i]))
            out[n++] = kids[i];
    return n;
}

/* The pid of the first held-PID sign in dir, waiting up to 120 s. */
static pid_t
s_held(const char *dir)
{
    pid_t pid = 0;
    if (fx_held(dir, 1, &pid, 120000) < 1)
        diag("no task signed in %s within 120 s", dir);
    return pid;
}

/* Submit two t_hold tasks on lx; 0 or lux_call's code. */
static int
s_hold(lux_t *lx, const char *gate)
{
    lux_ref_t r[2];
    for (int i = 0; i < 2; i++) {
        int rc = lux_call(lx, "t_hold", 1, (lux_arg_t[]) {LUX_VAL(gate, strlen(gate))}, 1, &r[i]);
        if (rc)
            return rc;
    }
    exec_client_flush(lx);
    return 0;
}

/* Kill host (the node manager's process) with SIGKILL; then each of its
   workers (seen before, the held one among them) must be gone. */
static void
s_kill_and_check(const char *what, pid_t host, pid_t held)
{
    pid_t w[32];
    int n = s_workers_of(host, w, 32);
    bool has_held = false;
    for (int i = 0; i < n; i++) {
        s_keep(w[i]);
        has_held = has_held || w[i] == held;
    }
    ok(n > 0 && has_held, "%s: %d workers, one of them (%d) busy in a task", what, n, (int) held);
    ok(kill(host, SIGKILL) == 0, "%s: the node manager's process (%d) is killed with SIGKILL",
       what, (int) host);
    int64_t deadline = util_mono_ms() + GONE_MS;
    for (int i = 0; i < n; i++) {
        while (util_proc_alive(w[i]) && util_mono_ms() < deadline)
            usleep(10000);
        ok(!util_proc_alive(w[i]), "%s: worker %d%s is gone", what, (int) w[i],
           w[i] == held ? " (busy in its task)" : " (idle)");
    }
}

int
main(void)
{
    tap_atexit(s_cleanup);

    /* a head: the supervisor hosts the node manager */
    db_cluster_t c;
    fx_start(&c, 1, 1, "--workers 2");
    pid_t pids[16];
    int np = fx_pids(&c, pids, 16);
    if (np < 2 || pids[0] <= 0)
        bail("no pids for the head (%d)", np);
    for (int i = 1; i < np; i++)
        s_keep(pids[i]); /* its replicas, which outlive the supervisor */
    snprintf(s_gates[0], sizeof s_gates[0], "%s/gate-head", tap_tmpdir());
    if (mkdir(s_gates[0], 0700))
        bail("mkdir %s", s_gates[0]);
    lux_config_t cfg = {.address = c.dir, .module = graph_module()};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init of the head at %s: %s", c.dir, lux_errmsg());
    if (s_hold(lx, s_gates[0]))
        bail("lux_call: %s", lux_errmsg());
    pid_t held = s_held(s_gates[0]);
    s_kill_and_check("lux start", pids[0], held);

    /* the embedded default, in a driver process of this test */
    snprintf(s_gates[1], sizeof s_gates[1], "%s/gate-embedded", tap_tmpdir());
    if (mkdir(s_gates[1], 0700))
        bail("mkdir %s", s_gates[1]);
    pid_t drv = fork();
    if (drv == 0) {
        char dir[700];
        snprintf(dir, sizeof dir, "%s/embedded", tap_tmpdir());
        mkdir(dir, 0700);
        lux_config_t e = {.module = graph_module(), .dir = dir, .workers = 2,
                          .store_bytes = 16 << 20};
        lux_t *d = lux_init(&e);
        if (!d || s_hold(d, s_gates[1]))
            _exit(1);
        for (;;)
            pause(); /* until the test kills it */
    }
    s_keep(drv);
    held = s_held(s_gates[1]);
    s_kill_and_check("embedded default", drv, held);
    int status;
    waitpid(drv, &status, 0);
    return done_testing();
}

/* 3104-exec-cpu: where the embedded default's workers run
   (src/exec/exec_node_cpu.c).
   - By default, when the node's CPU resource is the CPUs this process may
     use: each pool worker is SCHED_BATCH and bound to one CPU of its
     own; killed with SIGKILL, its replacement gets the CPU it left.
   - LUX_PIN_WORKERS=0: SCHED_BATCH still, bound to nothing (every CPU
     this process may use).
   - A CPU resource smaller than the CPUs (a node sharing the machine):
     not bound; with LUX_PIN_WORKERS=1, bound anyway.
   Each cluster runs a random task graph, so that workers so set work.
   The workers are this process's children (fx_children); only they are
   killed. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* This process's CPUs, as a set and a count. */
static cpu_set_t s_mine;
static int s_nmine;

typedef struct {
    int n;          /* workers found */
    int batch;      /* of them SCHED_BATCH */
    int single;     /* bound to one CPU of ours */
    int all;        /* allowed every CPU of ours */
    int distinct;   /* distinct single CPUs */
    int cpu[64];    /* the single CPU of each, or -1 */
    pid_t pid[64];
} s_seen_t;

static void
s_look(s_seen_t *s)
{
    memset(s, 0, sizeof *s);
    pid_t kids[64];
    int n = fx_children(kids, 64);
    for (int i = 0; i < n; i++) {
        cpu_set_t set;
        if (sched_getaffinity(kids[i], sizeof set, &set) != 0)
            continue;
        int k = s->n++;
        s->pid[k] = kids[i];
        s->batch += sched_getscheduler(kids[i]) == SCHED_BATCH;
        s->cpu[k] = -1;
        if (CPU_COUNT(&set) == 1) {
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set))
                    s->cpu[k] = c;
            if (CPU_ISSET(s->cpu[k], &s_mine)) {
                s->single++;
                bool seen = false;
                for (int j = 0; j < k; j++)
                    seen = seen || s->cpu[j] == s->cpu[k];
                s->distinct += !seen;
            }
        }
        s->all += CPU_EQUAL(&set, &s_mine);
    }
}

/* Wait (up to 10 s) for n workers, set as they will stay. */
static void
s_wait_workers(s_seen_t *s, int n, bool bound)
{
    for (int i = 0; i < 1000; i++) {
        s_look(s);
        if (s->n == n && s->batch == n && (!bound || s->single == n))
            return;
        usleep(10000);
    }
}

static void
s_run_graph(lux_t *lx, uint64_t seed, const char *what)
{
    graph_t g;
    char why[600] = "";
    int rc = graph_submit(lx, &g, 200, seed, 64 << 10);
    int bad = rc ? -1 : graph_check(lx, &g, why, sizeof why);
    ok(rc == 0 && bad == 0, "%s: a task graph of 200 nodes is right (%s)", what,
       rc ? lux_errmsg() : bad ? why : "ok");
    if (rc == 0)
        graph_free(&g);
}

static lux_t *
s_start(int workers, const char *resources)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 64 << 20,
                        .workers = workers, .resources = resources};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    return lx;
}

int
main(void)
{
    if (sched_getaffinity(0, sizeof s_mine, &s_mine) != 0)
        bail("sched_getaffinity: %s", strerror(errno));
    s_nmine = CPU_COUNT(&s_mine);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    char res[64];
    s_seen_t s;
    diag("%d CPUs of %ld online are this test's", s_nmine, online);

    /* the default: CPU resource = the CPUs online; bound when those are
       ours (not under taskset or a cpuset) */
    unsetenv("LUX_PIN_WORKERS");
    bool owns = online == s_nmine;
    lux_t *lx = s_start(0, NULL);
    int pool = (int) online; /* the default CPU resource: one worker per CPU online */
    s_wait_workers(&s, pool, owns);
    is_int(s.n, pool, "default: one worker per CPU online");
    is_int(s.batch, s.n, "default: every worker is SCHED_BATCH");
    if (owns) {
        is_int(s.single, s.n, "default: each is bound to a single CPU of ours");
        is_int(s.distinct, s.n, "default: no two to the same CPU");
        /* kill one: its replacement takes its CPU */
        int k = s.n - 1, cpu = s.cpu[k];
        pid_t victim = s.pid[k];
        ok(kill(victim, SIGKILL) == 0, "kill -9 worker %d (CPU %d)", (int) victim, cpu);
        s_seen_t t;
        for (int i = 0; i < 1000; i++) {
            s_look(&t);
            bool gone = true;
            for (int j = 0; j < t.n; j++)
                gone = gone && t.pid[j] != victim;
            if (gone && t.n == pool && t.single == t.n && t.batch == t.n)
                break;
            usleep(10000);
        }
        int got = -1;
        for (int j = 0; j < t.n; j++)
            if (t.pid[j] != victim && t.cpu[j] == cpu)
                got = (int) t.pid[j];
        ok(got > 0 && t.distinct == t.n && t.n == pool,
           "its replacement (%d) is bound to CPU %d, the others where they were", got, cpu);
    } else {
        is_int(s.all, s.n, "default, under a restricted CPU set: not bound");
        skip("not this process's whole machine: no replacement to check");
        skip("not this process's whole machine");
        skip("not this process's whole machine");
    }
    s_run_graph(lx, 3104, "default");
    lux_shutdown(&lx);

    /* LUX_PIN_WORKERS=0 */
    setenv("LUX_PIN_WORKERS", "0", 1);
    lx = s_start(0, NULL);
    s_wait_workers(&s, pool, false);
    is_int(s.batch, s.n, "LUX_PIN_WORKERS=0: SCHED_BATCH still");
    is_int(s.all, s.n, "LUX_PIN_WORKERS=0: each may run on every CPU of ours");
    s_run_graph(lx, 3105, "LUX_PIN_WORKERS=0");
    lux_shutdown(&lx);

    /* a node with less CPU than this process has: not bound, unless
       LUX_PIN_WORKERS=1 */
    if (s_nmine >= 2) {
        snprintf(res, sizeof res, "CPU=%d", s_nmine - 1);
        unsetenv("LUX_PIN_WORKERS");
        lx = s_start(1, res);
        s_wait_workers(&s, 1, false);
        ok(s.n == 1 && s.all == 1, "%s of %d CPUs: the worker is not bound", res, s_nmine);
        s_run_graph(lx, 3106, res);
        lux_shutdown(&lx);
        setenv("LUX_PIN_WORKERS", "1", 1);
        lx = s_start(1, res);
        s_wait_workers(&s, 1, true);
        ok(s.n == 1 && s.single == 1, "%s with LUX_PIN_WORKERS=1: bound (CPU %d)", res,
           s.cpu[0]);
        s_run_graph(lx, 3107, "LUX_PIN_WORKERS=1");
        lux_shutdown(&lx);
        unsetenv("LUX_PIN_WORKERS");
    } else {
        for (int i = 0; i < 4; i++)
            skip("one CPU: no smaller CPU resource to give");
    }
    return done_testing();
}

/*  exec_pool - the node's worker pool: the processes that run tasks and
    actors, and the resources they hold.

    Resources are counted in thousandths ("CPU=2,GPU=1"; res[0] is CPU): a
    task takes what it asks for while it runs (nm_res_needs, nm_res_fits,
    nm_res_take), an actor for as long as it lives. Workers are `lux
    worker` processes started by nm_spawn_worker (one per CPU for the pool,
    an extra one for a worker blocked in lux_get, one per actor), placed on
    a CPU by exec_node_cpu.c, reaped when they end (nm_reap_workers, which
    hands a dead worker's tasks to the scheduler's nm_worker_gone and
    restarts a pool worker), and retired when extra and idle.

    What runs on a worker, and what happens to its tasks when it dies, is
    the scheduler's (exec_node_sched.c).
*/
#include "exec_pool.h"
#include "exec_node_cpu.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_proc.h"
#include "../util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_EXTRA_IDLE_MS 500 /* an extra worker idle this long leaves */

/* --- resources ----------------------------------------------------------------------- */

/* Parse "CPU=2,GPU=1" into nm->res; CPU first. 0 or LUX_EINVAL. */
int
nm_parse_resources(nm_t *nm, const char *spec)
{
    char buf[512], *save = NULL;
    snprintf(nm->res[0].name, sizeof nm->res[0].name, "CPU");
    nm->res[0].total = nm->res[0].free = 1000L * sysconf(_SC_NPROCESSORS_ONLN);
    nm->nres = 1;
    if (!spec || !*spec)
        return 0;
    if (strlen(spec) >= sizeof buf)
        return util_err(LUX_EINVAL, "resources: '%.40s...' is over %zu characters", spec,
                        sizeof buf - 1);
    bool given[16] = {false};
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        char *end;
        double v = eq ? strtod(eq + 1, &end) : -1;
        if (!eq || eq == tok || end == eq + 1 || *end || v < 0 || eq - tok >= 31)
            return util_err(LUX_EINVAL, "resources: '%s' is not NAME=AMOUNT", tok);
        *eq = '\0';
        nm_res_t *r = NULL;
        for (int i = 0; i < nm->nres; i++)
            if (strcmp(nm->res[i].name, tok) == 0)
                r = &nm->res[i];
        if (!r) {
            if (nm->nres == 16)
                return util_err(LUX_EINVAL, "resources: at most 16 kinds");
            r = &nm->res[nm->nres++];
            snprintf(r->name, sizeof r->name, "%s", tok);
        }
        if (given[r - nm->res])
            return util_err(LUX_EINVAL, "resources: '%s' is given twice", tok);
        given[r - nm->res] = true;
        r->total = r->free = (int64_t) (v * 1000 + 0.5);
    }
    return 0;
}

/* Custom resources a task asks for, into needs (per nm->res); false when
   the node has none of one of them (the task can never run here). */
bool
nm_res_needs(nm_t *nm, const nm_task_t *t, int64_t *needs, char *why, size_t n)
{
    char buf[256], *save = NULL;
    memset(needs, 0, sizeof(int64_t) * 16);
    needs[0] = t->cpus_milli;
    if (t->cpus_milli && nm->res[0].total == 0) { /* CPU=0: a driver's node (lux run --address) */
        snprintf(why, n, "it asks for CPU=%g and this node has none", t->cpus_milli / 1000.0);
        return false;
    }
    if (!t->res)
        return true;
    snprintf(buf, sizeof buf, "%s", t->res);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        int k = -1;
        for (int i = 0; i < nm->nres; i++)
            if (strcmp(nm->res[i].name, tok) == 0)
                k = i;
        double v = strtod(eq + 1, NULL);
        int64_t amount = (int64_t) (v * 1000 + 0.5);
        if (k >= 0 && k == nm->gpu_res) /* GPUs are whole (exec_node_gpu.c) */
            amount = (amount + 999) / 1000 * 1000;
        if (k < 0 || amount > nm->res[k].total) {
            snprintf(why, n, "it asks for %s=%s and this node has %s", tok, eq + 1,
                     k < 0 ? "none" : "less");
            return false;
        }
        needs[k] += amount;
    }
    return true;
}

bool
nm_res_fits(nm_t *nm, const int64_t *needs)
{
    for (int i = 0; i < nm->nres; i++)
        if (needs[i] > nm->res[i].free)
            return false;
    return true;
}

void
nm_res_take(nm_t *nm, const int64_t *needs, int sign)
{
    for (int i = 0; i < nm->nres; i++)
        nm->res[i].free -= sign * needs[i];
}

/* --- processes ------------------------------------------------------------------------ */

/* Workers of the pool (not extra ones, not actors'). */
static int
s_pool_size(nm_t *nm)
{
    int n = 0;
    for (nm_worker_t *w = nm->workers; w; w = w->next)
        n += !w->extra && !w->actor;
    return n;
}

int
nm_spawn_worker(nm_t *nm, int kind)
{
    bool extra = kind == NM_SPAWN_EXTRA;
    char *argv[] = {nm->lux_bin, "worker", "--dir", nm->cluster.dir, "--node", nm->endpoint,
                    NULL};
    char log[PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/log/workers.log", nm->cluster.dir);
    pid_t pid = util_spawn(argv, log);
    if (pid < 0)
        return (int) pid;
    nm_worker_t *w = calloc(1, sizeof *w);
    if (!w) {
        kill(pid, SIGKILL);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    w->pid = pid;
    w->state = W_STARTING;
    w->started_ms = w->idle_ms = util_mono_ms();
    w->extra = extra;
    w->next = nm->workers;
    nm->workers = w;
    nm->nworkers++;
    nm_cpu_place(nm, w, kind);
    log_info("started worker %d%s", (int) pid, extra ? " (extra: a worker is blocked)" : "");
    return 0;
}

static void
s_worker_unlink(nm_t *nm, nm_worker_t *w)
{
    for (nm_worker_t **p = &nm->workers; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            nm->nworkers--;
            return;
        }
}

/* The end of a worker gone: its connection goes too, then the worker. */
void
nm_pool_worker_free(nm_t *nm, nm_worker_t *w)
{
    if (w->client) {
        nm_client_t *c = w->client;
        c->worker = NULL;
        w->client = NULL;
        nm->ops.client_gone(nm, c);
    }
    s_worker_unlink(nm, w);
    free(w);
}

void
nm_reap_workers(nm_t *nm)
{
    /* One waitid for the common case, that no child has ended, instead
       of a waitpid per worker every tick (8 system calls per actor call
       in 1_1_actor_calls_sync). Not when it cannot say (no children, or
       SIGCHLD ignored), and once a second all the same: a worker that is
       not our child is found gone only by the loop below. */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int64_t now = util_mono_ms();
    bool all = now - nm->reaped_all_ms >= 1000;
    if (!all && waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0)
        return;
    if (all)
        nm->reaped_all_ms = now;
    nm_worker_t *w = nm->workers;
    while (w) {
        nm_worker_t *next = w->next;
        int status;
        pid_t r = waitpid(w->pid, &status, WNOHANG);
        if (r == w->pid || (r < 0 && !util_proc_alive(w->pid))) {
            char why[96];
            if (r == w->pid && WIFSIGNALED(status))
                snprintf(why, sizeof why, "died (signal %d)", WTERMSIG(status));
            else if (r == w->pid && WIFEXITED(status))
                snprintf(why, sizeof why, "exited with status %d", WEXITSTATUS(status));
            else
                snprintf(why, sizeof why, "is gone");
            bool pool = !w->extra && !w->actor;
            if (w->client && w->client->conn) {
                /* its last results (a task's, an actor's checkpoint) may
                   still wait in its socket: they count */
                w->reaped = true;
                nm->ops.conn_drain(nm, w->client->conn);
            }
            nm->ops.worker_gone(nm, w, why);
            /* a pool worker is replaced whatever extra ones are running:
               they leave when idle, and counting them here let the pool
               shrink to nothing (extras alive when pool workers died, then
               gone) */
            if (pool && s_pool_size(nm) < nm->target_workers &&
                nm_spawn_worker(nm, NM_SPAWN_POOL))
                log_error("cannot restart a worker: %s", lux_errmsg());
        } else if (w->state == W_STARTING && util_mono_ms() - w->started_ms > 30000) {
            log_error("worker %d did not say hello within 30 s; killing it", (int) w->pid);
            kill(w->pid, SIGKILL);
        }
        w = next;
    }
}

nm_worker_t *
nm_pool_idle(nm_t *nm)
{
    for (nm_worker_t *w = nm->workers; w; w = w->next)
        if (w->state == W_IDLE && w->client && !w->actor)
            return w;
    return NULL;
}


/* Nothing waits and no worker is blocked: the extra workers started for
   blocked ones go, once idle for S_EXTRA_IDLE_MS (not at once: nested
   work tends to come back, and a worker takes tens of ms to start). */
void
nm_pool_retire_extras(nm_t *nm)
{
    int64_t now = util_mono_ms();
    for (nm_worker_t *x = nm->workers; x; x = x->next)
        if (x->state == W_BLOCKED)
            return;
    for (nm_worker_t *x = nm->workers; x; x = x->next) {
        if (x->extra && x->state == W_IDLE && !x->reaped && now - x->idle_ms >= S_EXTRA_IDLE_MS) {
            log_info("extra worker %d is not needed any more", (int) x->pid);
            kill(x->pid, SIGTERM);
            x->state = W_LEAVING; /* give it nothing; reaped when it exits */
        }
    }
}

int
nm_spawn_actor_worker(nm_t *nm, nm_actor_t *a)
{
    int rc = nm_spawn_worker(nm, NM_SPAWN_ACTOR);
    if (rc)
        return rc;
    nm->workers->actor = a; /* nm_spawn_worker puts the new one first */
    a->worker = nm->workers;
    return 0;
}

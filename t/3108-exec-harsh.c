/* 3108-exec-harsh: random task graphs from a seed, as harsh as a user's
   independent test: tasks with 0-4 arguments (refs to earlier outputs,
   lux_put objects up to 8 MiB, inline values up to LUX_VAL_MAX) and 1-3
   outputs up to 8 MiB; about 6% nested tasks that get a ref passed as a
   value, put an object and call a subtask on it; about 5% calls on two
   actors holding a running hash (one checkpointing every 5 calls and on
   demand, the other restarting from its constructor), their results fed
   to later tasks. Every output is compared, every byte, with the same
   computation done here sequentially. Each seed runs on a fresh embedded
   default with 2 workers and a 64 MiB store, so objects are evicted,
   spilled and rebuilt; in chaos runs a thread kills (SIGKILL, by pid) a
   random worker or actor process of this test's own cluster every 10-100
   ms, but no more often than once per 1-8 tasks finished (s_killer).
   After each seed no process of the cluster may be left. An output that
   does not come within 5 minutes is a hang (S_STALL_MS); the whole check
   has a looser bound (30 minutes and 360 ms a task).

   make check runs a short form (two seeds of 60-120 tasks, one with
   chaos, a kill every 200-500 ms: on a loaded 2-core machine a `lux
   worker` takes a few hundred ms to start, and kills every 10-100 ms
   there leave no process alive long enough to finish anything). The
   long form:

       t/3108-exec-harsh.t --seeds N [--first S] [--chaos|--chaos-all]
                           [--kill-ms A-B] [--min T] [--max T]

   runs seeds S..S+N-1 with T tasks each (default 200-5000, picked by the
   seed), with chaos on the odd seeds when --chaos is given, on all of them
   with --chaos-all (a kill every A-B ms, default 10-100), and prints one
   line per seed and a summary.

   On a running cluster instead of the embedded default (t/6091, a head
   and nodes on this machine):

       t/3108-exec-harsh.t --address ADDR [--kill-under DIR,DIR...] ...

   the driver joins ADDR (the cluster's store sizes and workers hold),
   and the chaos thread's victims are the workers of the node managers
   whose directories are listed (read from DIR/run/node.pid at each kill,
   so a node started again is found; a head's directory has no node.pid,
   its node manager runs in its supervisor: DIR/run/supervisor.pid, whose
   other children, the log's replicas, are never picked). The cluster's
   processes are not this program's, so only its own children are checked
   at the end. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"
#include "util/util_proc.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint8_t *s_scratch;

/* The digest of hx_fill(seed, n). */
static uint64_t
s_filled_digest(uint64_t seed, size_t n)
{
    hx_fill(s_scratch, n, seed);
    return hx_digest(s_scratch, n);
}

/* --- the graph ------------------------------------------------------------------------------ */

#define MB (1024 * 1024)
#define MAX_OUT (8 * MB)

enum { K_PUT, K_TASK, K_NEST, K_CALL, K_KINDS };

typedef struct {
    int kind;
    int nout;
    lux_ref_t ref[3];
    uint64_t dig[3];    /* the digest each output must have */
    size_t size[3];
} hnode_t;

typedef struct {
    uint64_t rng;
    hnode_t *nodes;
    int n;
    int counts[K_KINDS];
    int ckpts, ckpt_dead;
} hgraph_t;


/* A size: mostly small, some up to 64 KiB, a few up to 1 MiB and 8 MiB. */
static size_t
s_size(hgraph_t *g, int big)
{
    int r = (int) (graph_rand(&g->rng) % 100);
    if (r < 55 - big)
        return 8 + graph_rand(&g->rng) % 256;
    if (r < 85 - big)
        return 256 + graph_rand(&g->rng) % (64 * 1024);
    if (r < 97 - big)
        return 64 * 1024 + graph_rand(&g->rng) % MB;
    return MB + graph_rand(&g->rng) % (MAX_OUT - MB);
}

/* An earlier output: node index and output (lean to recent ones); -1 when
   none. Actor results only where allowed (not as a ref passed as a value:
   they have no lineage, and a nested task may have to rebuild it). */
static int
s_pick(hgraph_t *g, int upto, bool calls_ok, int *k)
{
    for (int tries = 0; tries < 8 && upto > 0; tries++) {
        int i = (int) (graph_rand(&g->rng) % (uint64_t) upto);
        if (graph_rand(&g->rng) % 2)
            i = upto - 1 - (int) (graph_rand(&g->rng) % (uint64_t) (upto < 16 ? upto : 16));
        if (!calls_ok && g->nodes[i].kind == K_CALL)
            continue;
        *k = (int) (graph_rand(&g->rng) % (uint64_t) g->nodes[i].nout);
        return i;
    }
    return -1;
}

typedef struct {
    lux_arg_t a[5];
    uint64_t dig[5];
    uint8_t *own[5];
    int n;
} hargs_t;

/* n random arguments: refs to earlier outputs, or inline values. */
static void
s_args(hgraph_t *g, int i, int n, hargs_t *A)
{
    A->n = 0;
    for (int j = 0; j < n; j++) {
        int k, x = (graph_rand(&g->rng) % 4) ? s_pick(g, i, true, &k) : -1;
        A->own[A->n] = NULL;
        if (x >= 0) {
            A->a[A->n] = LUX_REF(g->nodes[x].ref[k]);
            A->dig[A->n] = g->nodes[x].dig[k];
        } else {
            int r = (int) (graph_rand(&g->rng) % 100);
            size_t sz = r < 70 ? 8 : r < 95 ? 1 + graph_rand(&g->rng) % LUX_VAL_MAX : LUX_VAL_MAX;
            uint8_t *p = malloc(sz);
            hx_fill(p, sz, graph_rand(&g->rng));
            A->own[A->n] = p;
            A->a[A->n] = LUX_VAL(p, sz);
            A->dig[A->n] = hx_digest(p, sz);
        }
        A->n++;
    }
}

static void
s_args_free(hargs_t *A)
{
    for (int j = 0; j < A->n; j++)
        free(A->own[j]);
}

/* h taking in the digests of A's arguments, numbered from `from`. */
static uint64_t
s_take(uint64_t h, int from, const hargs_t *A)
{
    for (int j = 0; j < A->n; j++)
        h = hx_mix(h ^ (A->dig[j] + (uint64_t) (j + from)));
    return h;
}

static int
s_submit(lux_t *lx, hgraph_t *g, int n, const lux_opts_t *opts, lux_actor_t act[2],
         uint64_t acc_h[2], bool chaos)
{
    static const char *fns[] = {"t_h1", "t_h2", "t_h3"};
    g->nodes = calloc((size_t) n, sizeof *g->nodes);
    for (int i = 0; i < n; i++) {
        hnode_t *x = &g->nodes[i];
        int r = (int) (graph_rand(&g->rng) % 100), rc = 0;
        x->kind = i == 0 || r < 12 ? K_PUT : r < 18 ? K_NEST : r < 23 ? K_CALL : K_TASK;
        g->counts[x->kind]++;
        hargs_t A;
        switch (x->kind) {
        case K_PUT: {
            x->nout = 1;
            x->size[0] = s_size(g, 4);
            uint64_t seed = graph_rand(&g->rng) << 20 | (uint64_t) i;
            hx_fill(s_scratch, x->size[0], seed);
            x->dig[0] = hx_digest(s_scratch, x->size[0]);
            rc = lux_put(lx, s_scratch, x->size[0], &x->ref[0]);
            break;
        }
        case K_TASK: {
            x->nout = 1 + (int) (graph_rand(&g->rng) % 3);
            int64_t ctl[4] = {(int64_t) graph_rand(&g->rng), 0, 0, 0};
            for (int k = 0; k < x->nout; k++)
                ctl[1 + k] = (int64_t) (x->size[k] = s_size(g, 0));
            s_args(g, i, (int) (graph_rand(&g->rng) % 5), &A);
            uint64_t h = s_take(hx_mix((uint64_t) ctl[0]), 1, &A);
            for (int k = 0; k < x->nout; k++)
                x->dig[k] = s_filled_digest(hx_mix(h + (uint64_t) k + 1), x->size[k]);
            lux_arg_t all[6] = {LUX_VAL(ctl, sizeof ctl)};
            memcpy(all + 1, A.a, (size_t) A.n * sizeof *all);
            rc = lux_call_opts(lx, opts, fns[x->nout - 1], 1 + A.n, all, x->nout, x->ref);
            s_args_free(&A);
            break;
        }
        case K_NEST: {
            int k, p = s_pick(g, i, false, &k);
            if (p < 0) { /* node 0 is a put */
                p = 0;
                k = 0;
            }
            x->nout = 1;
            x->size[0] = s_size(g, 0);
            size_t pn = s_size(g, 0), sn = s_size(g, 0);
            int64_t ctl[4] = {(int64_t) graph_rand(&g->rng), (int64_t) x->size[0], (int64_t) pn,
                              (int64_t) sn};
            s_args(g, i, (int) (graph_rand(&g->rng) % 3), &A);
            uint64_t h = s_take(hx_mix((uint64_t) ctl[0]), 2, &A);
            uint64_t dv = g->nodes[p].dig[k];
            h = hx_mix(h ^ (dv + 101));
            uint64_t dput = s_filled_digest(hx_mix(h + 7), pn);
            uint64_t hs = hx_mix(hx_mix((uint64_t) hx_mix(h + 9)) ^ (dput + 1));
            hs = hx_mix(hs ^ (dv + 2));
            uint64_t dsub = s_filled_digest(hx_mix(hs + 1), sn);
            h = hx_mix(h ^ (dsub + 103));
            x->dig[0] = s_filled_digest(hx_mix(h + 1), x->size[0]);
            lux_arg_t all[6] = {LUX_VAL(ctl, sizeof ctl), LUX_VAL(g->nodes[p].ref[k].b, LUX_REF_LEN)};
            memcpy(all + 2, A.a, (size_t) A.n * sizeof *all);
            rc = lux_call_opts(lx, opts, "t_hnest", 2 + A.n, all, 1, x->ref);
            s_args_free(&A);
            break;
        }
        case K_CALL: {
            int w = (int) (graph_rand(&g->rng) % 2);
            x->nout = 1;
            x->size[0] = 8;
            s_args(g, i, 1 + (int) (graph_rand(&g->rng) % 2), &A);
            acc_h[w] = s_take(acc_h[w], 0, &A);
            x->dig[0] = hx_digest(&acc_h[w], 8);
            rc = lux_actor_call(lx, &act[w], "step", A.n, A.a, 1, x->ref);
            s_args_free(&A);
            if (!rc && w == 0 && graph_rand(&g->rng) % 8 == 0) {
                int c = lux_actor_checkpoint(lx, &act[0]);
                g->ckpts++;
                if (c == LUX_EDEAD && chaos)
                    g->ckpt_dead++; /* its process died mid-checkpoint: documented */
                else if (c)
                    return c;
            }
            break;
        }
        }
        g->n = i + 1;
        if (rc)
            return rc;
    }
    return 0;
}

#define S_INLINE_MAX (64 * 1024) /* EXEC_INLINE_MAX: a smaller put is no pin in the store */

/* A put in the store is checked by a task, t_h1 over it, whose 8 bytes
   the driver reads: the driver keeps its puts to the end (a rebuild may
   need them), and a put it read itself would stay pinned, read in place,
   as long: seed 3's puts in the store come to 173.6 MB, more than the
   store and its spare region hold (128 MiB), and its tasks then failed
   for want of room. rc and *ref as lux_call's; the digest it must have. */
static int
s_check_put(lux_t *lx, const hnode_t *x, lux_ref_t *ref, uint64_t *dig)
{
    int64_t ctl[4] = {0, 8, 0, 0};
    hargs_t A = {.n = 1, .dig = {x->dig[0]}};
    *dig = s_filled_digest(hx_mix(s_take(hx_mix(0), 1, &A) + 1), 8);
    return lux_call(lx, "t_h1", 2, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl), LUX_REF(x->ref[0])},
                    1, ref);
}

/* How long one output may take to come, and the bound on the whole
   check. A get that waits S_STALL_MS is a hang: nothing came of that
   object for five minutes. The whole check is bounded too (a loop that
   rebuilds for ever would pass each get's bound), but loosely: under
   ASan at load 20, with chaos, seed 1069's first runs alone took 10 of
   the 17 minutes the old single bound (600 s + 120 ms a task) gave, and
   the check, still moving, ran past it by 12 s (stop 45). */
#define S_STALL_MS 300000

/* Every output checked; returns the number wrong, the first in why. */
static int
s_check(lux_t *lx, hgraph_t *g, int64_t deadline_ms, char *why, size_t wn)
{
    int bad = 0;
    for (int i = 0; i < g->n; i++) {
        hnode_t *x = &g->nodes[i];
        for (int k = 0; k < x->nout; k++) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            int64_t left = deadline_ms - ((int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
            lux_val_t v;
            lux_ref_t ref = x->ref[k];
            uint64_t dig = x->dig[k];
            size_t size = x->size[k];
            int rc = 0;
            if (x->kind == K_PUT && size > S_INLINE_MAX) {
                rc = s_check_put(lx, x, &ref, &dig);
                size = 8;
            }
            int wait = left > S_STALL_MS ? S_STALL_MS : left > 0 ? (int) left : 0;
            rc = rc ? rc : lux_get(lx, &ref, &v, wait);
            bool right = rc == 0 && v.size == size && hx_digest(v.data, v.size) == dig;
            if (!right && !bad++)
                snprintf(why, wn, "node %d (kind %d) output %d: %s", i, x->kind, k,
                         rc == LUX_ETIMEDOUT && wait == S_STALL_MS
                             ? "HANG (not ready within 300 s)"
                         : rc == LUX_ETIMEDOUT ? "TOO SLOW (the check ran past its bound)"
                         : rc               ? lux_errmsg()
                         : v.size != size ? "WRONG size"
                                          : "WRONG bytes");
            if (rc == LUX_ETIMEDOUT)
                deadline_ms = 0; /* the rest are only looked at, not waited for */
            if (memcmp(ref.b, x->ref[k].b, sizeof ref.b) != 0)
                lux_free(lx, 1, &ref); /* the checking task's output */
        }
        /* task results go once checked (they have lineage); puts and
           actor calls' results stay to the end: a task rebuilt later may
           need them, and they cannot be made again */
        if (x->kind == K_TASK || x->kind == K_NEST)
            lux_free(lx, x->nout, x->ref);
    }
    return bad;
}

/* --- chaos ---------------------------------------------------------------------------------- */

static atomic_int s_stop;
static atomic_int s_kills;
static uint64_t s_krng = 3108;
static int s_kill_min = 10, s_kill_max = 100; /* ms between kills */
static const char *s_address;                 /* --address: a running cluster */
static char *s_under[8];                      /* --kill-under: its node managers' dirs */
static int s_nunder;

/* The processes a kill may pick: this program's children (the embedded
   default's), or the children of the node managers of --kill-under. */
static int
s_victims(pid_t *kids, int max)
{
    if (!s_nunder)
        return fx_children(kids, max);
    int n = 0;
    for (int i = 0; i < s_nunder && n < max; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/run/node.pid", s_under[i]);
        pid_t nm = util_pidfile_read(path);
        if (nm <= 0) { /* a head's node manager runs in its supervisor */
            snprintf(path, sizeof path, "%s/run/supervisor.pid", s_under[i]);
            nm = util_pidfile_read(path);
        }
        if (nm > 0)
            n += fx_children_of(nm, kids + n, max - n);
    }
    return n;
}

/* Every A-B ms (--kill-ms), and no sooner than 1-8 tasks of the graph
   have finished since the last kill (graph_ticks): on a fast machine the
   clock sets the pace, on a loaded one the work does. Paced by the clock
   alone, kills every 10-100 ms at load 16 left a nested task (which waits
   for a worker to be started for its subtask) no attempt that lived to
   its end (seed 5: nested tasks died on each of 255 attempts, and 446
   tasks failed with them). */
static void *
s_killer(void *arg)
{
    (void) arg;
    while (!atomic_load(&s_stop)) {
        s_krng = s_krng * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t due = graph_ticks() + 1 + (int64_t) ((s_krng >> 20) % 8);
        usleep((useconds_t) (1000 * (s_kill_min + (int) ((s_krng >> 33) %
                                                         (uint64_t) (s_kill_max - s_kill_min + 1)))));
        while (!atomic_load(&s_stop) && graph_ticks() < due)
            usleep(2000);
        pid_t kids[256];
        int n = s_victims(kids, 256);
        if (n == 0 || atomic_load(&s_stop))
            continue;
        pid_t victim = kids[(s_krng >> 40) % (uint64_t) n];
        if (fx_is_worker(victim) && kill(victim, SIGKILL) == 0)
            atomic_fetch_add(&s_kills, 1);
    }
    return NULL;
}

/* --- one seed ------------------------------------------------------------------------------- */

static int
s_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) st;
    (void) ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* A passing seed's run directory goes (its log, blobs and spills are
   100-300 MB: the long form's 1,000 seeds would fill the disk); a failing
   one's stays, named, for its log to be read. */
static void
s_run_dir_done(const char *run, bool bad)
{
    if (!run[0])
        return;
    if (bad)
        diag("  its run directory, kept: %s", run);
    else if (nftw(run, s_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        diag("  could not remove its run directory %s", run);
}

/* The store files of this process's node managers (embedded: their
   names carry our pid, exec_node.c) left in /dev/shm: their count, the
   first's name in name. */
static int
s_shm_left(char *name, size_t n)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "lux-%d-%d-", (int) getuid(), (int) getpid());
    DIR *d = opendir("/dev/shm");
    int left = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && left++ == 0)
            snprintf(name, n, "/dev/shm/%s", e->d_name);
    if (d)
        closedir(d);
    return left;
}

static int
s_seed(uint64_t seed, int ntasks, bool chaos, char *why, size_t wn)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 64 * MB,
                        .workers = 2, .address = s_address};
    lux_opts_t opts = {.max_attempts = chaos ? 255 : 3};
    hgraph_t g = {.rng = seed * 0x9e3779b97f4a7c15ULL + 1};
    lux_actor_t act[2];
    uint64_t acc_h[2] = {seed, seed + 1};
    pthread_t killer;
    int rc, bad = 0;
    why[0] = '\0';
    lux_t *lx = lux_init(&cfg);
    if (!lx) {
        snprintf(why, wn, "lux_init: %s", lux_errmsg());
        return 1;
    }
    char run[PATH_MAX] = "";
    if (!s_address)
        snprintf(run, sizeof run, "%s", lux_dir(lx));
    lux_actor_opts_t ao0 = {.max_restarts = 65535, .checkpoint_every = 5};
    lux_actor_opts_t ao1 = {.max_restarts = 65535};
    if ((rc = lux_actor_create(lx, "HAcc", 1, (lux_arg_t[]) {LUX_VAL(&acc_h[0], 8)}, &ao0,
                               &act[0])) ||
        (rc = lux_actor_create(lx, "HAcc", 1, (lux_arg_t[]) {LUX_VAL(&acc_h[1], 8)}, &ao1,
                               &act[1]))) {
        snprintf(why, wn, "lux_actor_create: %s", lux_errmsg());
        lux_shutdown(&lx);
        return 1;
    }
    int kills0 = atomic_load(&s_kills);
    if (chaos) {
        atomic_store(&s_stop, 0);
        if (pthread_create(&killer, NULL, s_killer, NULL))
            bail("pthread_create failed");
    }
    rc = s_submit(lx, &g, ntasks, &opts, act, acc_h, chaos);
    if (rc) {
        snprintf(why, wn, "submitting node %d: %s", g.n, lux_errmsg());
        bad = 1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t deadline = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + 1800000 + 360L * ntasks;
    if (!bad)
        bad = s_check(lx, &g, deadline, why, wn);
    if (chaos) {
        atomic_store(&s_stop, 1);
        pthread_join(killer, NULL);
    }
    lux_shutdown(&lx);
    /* no process of the cluster is left */
    pid_t kids[64];
    int left = 0;
    for (int i = 0; i < 1000 && (left = fx_children(kids, 64)) > 0; i++) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        usleep(10000);
    }
    if (left > 0 && !bad++)
        snprintf(why, wn, "%d processes of the cluster left after lux_shutdown (pid %d)", left,
                 (int) kids[0]);
    char shm[300];
    int shm_left = s_address ? 0 : s_shm_left(shm, sizeof shm);
    if (shm_left > 0 && !bad++)
        snprintf(why, wn, "%d store files left in /dev/shm after lux_shutdown (%s)", shm_left,
                 shm);
    diag("seed %llu: %d nodes (puts %d, tasks %d, nested %d, actor calls %d, checkpoints %d%s), "
         "%s%d kills: %s%s", (unsigned long long) seed, g.n, g.counts[K_PUT], g.counts[K_TASK],
         g.counts[K_NEST], g.counts[K_CALL], g.ckpts,
         g.ckpt_dead ? " (some cut by a kill)" : "", chaos ? "chaos, " : "no chaos, ",
         atomic_load(&s_kills) - kills0, bad ? "FAILED: " : "ok", why);
    s_run_dir_done(run, bad);
    free(g.nodes);
    return bad;
}

int
main(int argc, char **argv)
{
    int nseeds = 0, tmin = 200, tmax = 5000;
    uint64_t first = 1;
    bool chaos = false, chaos_all = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            nseeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc)
            first = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--min") == 0 && i + 1 < argc)
            tmin = atoi(argv[++i]);
        else if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
            tmax = atoi(argv[++i]);
        else if (strcmp(argv[i], "--chaos") == 0)
            chaos = true;
        else if (strcmp(argv[i], "--chaos-all") == 0)
            chaos = chaos_all = true;
        else if (strcmp(argv[i], "--address") == 0 && i + 1 < argc)
            s_address = argv[++i];
        else if (strcmp(argv[i], "--kill-under") == 0 && i + 1 < argc) {
            for (char *d = strtok(argv[++i], ","); d && s_nunder < 8; d = strtok(NULL, ","))
                s_under[s_nunder++] = d;
        }
        else if (strcmp(argv[i], "--kill-ms") == 0 && i + 1 < argc &&
                 sscanf(argv[++i], "%d-%d", &s_kill_min, &s_kill_max) == 2 && s_kill_min > 0 &&
                 s_kill_max >= s_kill_min)
            ;
        else {
            fprintf(stderr, "usage: %s [--seeds N] [--first S] [--chaos|--chaos-all] [--kill-ms A-B] "
                    "[--min T] [--max T] [--address ADDR [--kill-under DIR,DIR...]]\n",
                    argv[0]);
            return 2;
        }
    }
    s_scratch = malloc(MAX_OUT);
    if (nseeds == 0) { /* the short form, for make check */
        nseeds = 2;
        first = 31080;
        tmin = 60;
        tmax = 120;
        chaos = true;
        s_kill_min = 200;
        s_kill_max = 500;
    }
    setenv("LUX_LOG", "error", 0); /* not a warning per kill */
    fx_lux_unwrapped(); /* a worker killed every 10-100 ms is back in 0.06 s, not 0.5 s */
    graph_ticks_start(); /* the killer's floor */
    if (tmax < tmin)
        tmax = tmin;
    int failed = 0;
    for (int s = 0; s < nseeds; s++) {
        uint64_t seed = first + (uint64_t) s;
        int n = tmin + (int) (hx_mix(seed) % (uint64_t) (tmax - tmin + 1));
        bool c = chaos && (chaos_all || seed % 2 == 1);
        char why[1200];
        int bad = s_seed(seed, n, c, why, sizeof why);
        failed += bad != 0;
        ok(bad == 0, "seed %llu: %d tasks%s: every output right, no process or store file left%s%s",
           (unsigned long long) seed, n, c ? ", workers and actors killed at random" : "",
           bad ? ": " : "", why);
    }
    diag("%d of %d seeds failed", failed, nseeds);
    free(s_scratch);
    return done_testing();
}

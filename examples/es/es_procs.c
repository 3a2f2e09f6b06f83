/*  es_procs - ES with forked worker processes and no runtime: the floor.

    A measuring baseline, not a trainer. es_local runs the rollouts in
    threads of one process; es.so runs them as Lux tasks in worker
    processes. Between the two sit costs that any design with separate
    worker processes pays on a given machine, whatever its runtime: each
    iteration the weights go to the workers and the results come back
    through the kernel, every hand-off wakes a process (on a virtual
    machine, often a halted vCPU), and rollouts cannot be taken one at a
    time from a shared counter. This program pays those and nothing else:
    --threads N forks N workers once (after the noise table is built, so
    they share it as es_local's threads do), and each iteration sends each
    worker the weights and its tasks over a socketpair and reads back its
    results. The rollouts are split over the workers by es_split, as es.so
    splits them over its tasks. So

      es_procs / es_local   what separate processes cost here at all,
      es.so / es_procs      what Lux adds to that

    (`examples/es/measure-dist.sh floor` measures both, alternating).

    With ES_PROCS_SHARE=1 in the environment the workers take rollouts one
    at a time from a counter in shared memory instead, as es_local's
    threads do, and write their results there: what is left of the floor
    when nothing is split before the iteration (es.so's tasks come close to
    that through their board, es_lux_board.c).

    With ES_PROCS_SHADOW=US a thread of the driver stands for a node
    manager told of every hand-off beside it instead of standing in it (a
    driver handing tasks to leased workers itself, doc/DESIGN.md): the
    driver writes it each iteration's tasks once it has sent them, each
    worker its results once it has answered, and the thread reads each
    message and works on it for US microseconds. What that design would
    cost on this machine, given how long the node works on a message.

    It trains for exactly --max-iters iterations (required) and never
    evaluates the policy, so compare it on runs where es_local and es.so do
    not evaluate either (--target above the environment's best return,
    --eval-every above --max-iters). It ends with es_local's weights.
    Prints one JSON object: train_seconds (the iterations, from the first
    to the last update), iterations, weights_hash. Exit status: 0 done,
    2 bad usage, 3 a worker or the system failed.
*/
#include "env.h"
#include "es.h"
#include "es_noise.h"
#include "es_opts.h"
#include "es_policy.h"
#include "es_rollout.h"
#include "es_split.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_WORKERS 64

/* Read or write all n bytes; -1 on an error or the peer's end. */
static int
s_io(int fd, void *p, size_t n, bool write_it)
{
    char *c = p;
    while (n) {
        ssize_t k = write_it ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* ES_PROCS_SHADOW: the thread standing for a node manager beside the
   hand-offs, and a worker's end of its socket to it (-1: none). */
typedef struct {
    int fds[S_MAX_WORKERS + 1]; /* the workers' sockets and the driver's */
    int n;
    double work;                /* seconds of work per message */
} s_shadow_t;

static int s_shadow_fd = -1;
static volatile uint64_t s_shadow_sink;

static void *
s_shadow(void *arg)
{
    s_shadow_t *s = arg;
    static uint8_t buf[1 << 16];
    for (;;) {
        struct pollfd p[S_MAX_WORKERS + 1];
        for (int i = 0; i < s->n; i++)
            p[i] = (struct pollfd){.fd = s->fds[i], .events = POLLIN};
        if (poll(p, (nfds_t)s->n, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        for (int i = 0; i < s->n; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t k = read(s->fds[i], buf, sizeof buf);
            if (k <= 0)
                return NULL; /* the driver is done */
            /* work on it: hash it until the time is up */
            double t0 = es_opts_now();
            uint64_t h = 0;
            do
                h ^= es_fnv1a64(buf, (size_t)k);
            while (es_opts_now() - t0 < s->work);
            s_shadow_sink = h;
        }
    }
}

/* What the driver sends a worker each iteration, before the weights (and
   observation statistics) and the tasks. */
typedef struct {
    uint32_t count; /* tasks that follow */
    uint32_t quit;  /* 1: exit */
} s_hdr_t;

typedef struct {
    const es_opts_t *o;
    const es_policy_t *pol;
    const float *noise;
    size_t n_in; /* floats of weights and statistics */
    size_t rs;   /* bytes of a result */
    atomic_size_t *next; /* ES_PROCS_SHARE: the next rollout to take, */
    uint8_t *sres;       /* ...and where the results go; else NULL */
} s_shape_t;

/* A worker: rollouts until told to quit or its driver is gone. */
static void
s_worker(int fd, const s_shape_t *sh)
{
    const es_opts_t *o = sh->o;
    size_t pop = (size_t)o->es.population, np = sh->pol->n_params;
    int dim = o->env->obs_dim;
    float *in = malloc(sh->n_in * sizeof(float));
    es_task_t *t = malloc(pop * sizeof *t);
    uint8_t *out = malloc(pop * sh->rs);
    if (!in || !t || !out)
        _exit(3);
    for (;;) {
        s_hdr_t h;
        if (s_io(fd, &h, sizeof h, false) || h.quit)
            _exit(0);
        if (h.count > pop || s_io(fd, in, sh->n_in * sizeof(float), false) ||
            s_io(fd, t, h.count * sizeof *t, false))
            _exit(3);
        es_ctx_t c = {
            .env = o->env,
            .policy = sh->pol,
            .theta = in,
            .obs_mean = o->es.obs_norm ? in + np : NULL,
            .obs_std = o->es.obs_norm ? in + np + dim : NULL,
            .noise = sh->noise,
            .noise_len = o->noise_len,
            .sigma = (float)o->es.sigma,
            .episodes = o->es.episodes,
        };
        if (sh->next) { /* take them one at a time; answer when none is left */
            size_t i;
            while ((i = atomic_fetch_add(sh->next, 1)) < h.count)
                if (es_rollout(&c, &t[i], (es_result_t *)(void *)(sh->sres + i * sh->rs)))
                    _exit(3);
            uint32_t done = 1;
            if (s_io(fd, &done, sizeof done, true) ||
                (s_shadow_fd >= 0 && s_io(s_shadow_fd, sh->sres, h.count * sh->rs, true)))
                _exit(0);
            continue;
        }
        for (uint32_t i = 0; i < h.count; i++)
            if (es_rollout(&c, &t[i], (es_result_t *)(void *)(out + i * sh->rs)))
                _exit(3);
        if (s_io(fd, out, h.count * sh->rs, true) ||
            (s_shadow_fd >= 0 && s_io(s_shadow_fd, out, h.count * sh->rs, true)))
            _exit(0);
    }
}

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            printf("es_procs: es_local's options; --threads N forks N worker processes. Needs "
                   "--max-iters; never evaluates (see the head of examples/es/es_procs.c).\n");
    es_opts_t o;
    int rc = es_opts_parse(&o, argc, argv, "es_procs", ES_OPTS_LOCAL);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.max_iters <= 0) {
        fprintf(stderr, "es_procs: --max-iters N is needed (it runs exactly N iterations)\n");
        return 2;
    }
    if (o.threads < 1 || o.threads > S_MAX_WORKERS) {
        fprintf(stderr, "es_procs: --threads %d: from 1 to %d worker processes\n", o.threads,
                S_MAX_WORKERS);
        return 2;
    }
    const es_env_t *env = o.env;
    int nw = o.threads, dim = env->obs_dim;
    size_t pop = (size_t)o.es.population;
    es_policy_t pol;
    if (es_policy_init(&pol, env, o.n_hidden, o.hidden) != 0) {
        fprintf(stderr, "es_procs: bad policy shape\n");
        return 2;
    }
    size_t np = pol.n_params;
    s_shape_t sh = {.o = &o, .pol = &pol, .n_in = np + 2 * (size_t)dim, .rs = es_result_size(dim)};
    float *noise = malloc(o.noise_len * sizeof(float));
    float *theta0 = malloc(np * sizeof(float));
    es_task_t *tasks = malloc(pop * sizeof *tasks);
    uint8_t *res = malloc(pop * sh.rs);
    es_result_t **arr = malloc(pop * sizeof *arr);
    float *in = calloc(sh.n_in, sizeof(float));
    if (!noise || !theta0 || !tasks || !res || !arr || !in) {
        fprintf(stderr, "es_procs: out of memory\n");
        return 3;
    }
    es_noise_fill(noise, o.noise_len, o.noise_seed);
    sh.noise = noise;
    es_policy_init_weights(&pol, theta0, o.es.seed);
    es_t *es = es_new(&o.es, np, dim, theta0, noise, o.noise_len);
    es_split_t split;
    if (!es || es_split_init(&split, nw, pop, true) != 0) {
        fprintf(stderr, "es_procs: out of memory\n");
        return 3;
    }
    signal(SIGPIPE, SIG_IGN);
    const char *share_env = getenv("ES_PROCS_SHARE");
    bool share = share_env && atoi(share_env) > 0;
    if (share) {
        void *m = mmap(NULL, 64 + pop * sh.rs, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "es_procs: mmap: %s\n", strerror(errno));
            return 3;
        }
        sh.next = m;
        sh.sres = (uint8_t *)m + 64;
    }
    const char *shadow_env = getenv("ES_PROCS_SHADOW");
    s_shadow_t shadow = {.n = 0, .work = shadow_env ? atof(shadow_env) * 1e-6 : 0.0};
    bool shadowed = shadow_env && atof(shadow_env) > 0;
    int fds[S_MAX_WORKERS], shadow_drv = -1;
    pid_t pids[S_MAX_WORKERS];
    for (int k = 0; k < nw; k++) {
        int sv[2], sw[2] = {-1, -1};
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
            (shadowed && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sw) != 0)) {
            fprintf(stderr, "es_procs: socketpair: %s\n", strerror(errno));
            return 3;
        }
        fflush(stdout);
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "es_procs: fork: %s\n", strerror(errno));
            return 3;
        }
        if (p == 0) {
            close(sv[0]);
            for (int j = 0; j < k; j++)
                close(fds[j]);
            for (int j = 0; j < shadow.n; j++)
                close(shadow.fds[j]);
            if (shadowed) {
                close(sw[0]);
                s_shadow_fd = sw[1];
            }
            s_worker(sv[1], &sh);
        }
        if (shadowed) {
            close(sw[1]);
            shadow.fds[shadow.n++] = sw[0];
        }
        close(sv[1]);
        fds[k] = sv[0];
        pids[k] = p;
    }

    if (shadowed) {
        int sd[2];
        pthread_t tid;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sd) != 0) {
            fprintf(stderr, "es_procs: socketpair: %s\n", strerror(errno));
            return 3;
        }
        shadow.fds[shadow.n++] = sd[0];
        shadow_drv = sd[1];
        if ((errno = pthread_create(&tid, NULL, s_shadow, &shadow)) != 0) {
            fprintf(stderr, "es_procs: pthread_create: %s\n", strerror(errno));
            return 3;
        }
        pthread_detach(tid);
    }
    int status = 0;
    double took[S_MAX_WORKERS], sent[S_MAX_WORKERS], t0 = es_opts_now();
    size_t at[S_MAX_WORKERS];
    long it;
    for (it = 0; it < o.max_iters && !status; it++) {
        es_ctx_t c;
        es_ctx(es, env, &pol, &c);
        memcpy(in, c.theta, np * sizeof(float));
        if (c.obs_mean) {
            memcpy(in + np, c.obs_mean, (size_t)dim * sizeof(float));
            memcpy(in + np + dim, c.obs_std, (size_t)dim * sizeof(float));
        }
        for (size_t i = 0; i < pop; i++)
            tasks[i] = es_task(es, (uint32_t)i);
        /* fewer rollouts than workers: one each; sharing, all to each */
        int slots = share ? nw : split.slots;
        size_t first = 0;
        if (share)
            atomic_store(sh.next, 0);
        for (int k = 0; k < slots && !status; k++) {
            s_hdr_t h = {.count = share ? (uint32_t)pop : (uint32_t)split.count[k]};
            at[k] = first;
            sent[k] = es_opts_now();
            if (s_io(fds[k], &h, sizeof h, true) ||
                s_io(fds[k], in, sh.n_in * sizeof(float), true) ||
                s_io(fds[k], &tasks[first], h.count * sizeof *tasks, true))
                status = 3;
            first += share ? 0 : h.count;
        }
        /* the node beside the hand-off hears of the tasks once they are out */
        if (shadow_drv >= 0 && !status && s_io(shadow_drv, tasks, pop * sizeof *tasks, true))
            status = 3;
        bool done[S_MAX_WORKERS] = {false};
        for (int left = slots; left > 0 && !status;) {
            struct pollfd p[S_MAX_WORKERS];
            for (int k = 0; k < slots; k++)
                p[k] = (struct pollfd){.fd = done[k] ? -1 : fds[k], .events = POLLIN};
            if (poll(p, (nfds_t)slots, -1) < 0) {
                if (errno != EINTR)
                    status = 3;
                continue;
            }
            for (int k = 0; k < slots && !status; k++) {
                if (done[k] || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                uint32_t one;
                if (share ? s_io(fds[k], &one, sizeof one, false)
                          : s_io(fds[k], res + at[k] * sh.rs, split.count[k] * sh.rs, false)) {
                    status = 3;
                    break;
                }
                took[k] = es_opts_now() - sent[k];
                done[k] = true;
                left--;
            }
        }
        if (status) {
            fprintf(stderr, "es_procs: a worker process failed in iteration %ld\n", it + 1);
            break;
        }
        if (!share)
            es_split_update(&split, took);
        for (size_t i = 0; i < pop; i++)
            arr[i] = (es_result_t *)(void *)((share ? sh.sres : res) + i * sh.rs);
        es_stats_t st;
        if (es_update(es, arr, pop, &st)) {
            fprintf(stderr, "es_procs: %s\n", es_errmsg(es));
            status = 3;
        }
    }
    double train = es_opts_now() - t0;
    if (shadow_drv >= 0)
        close(shadow_drv); /* the thread ends at its end */
    for (int k = 0; k < nw; k++) {
        s_hdr_t h = {.quit = 1};
        (void)s_io(fds[k], &h, sizeof h, true);
        close(fds[k]);
        waitpid(pids[k], NULL, 0);
    }
    if (!status)
        printf("{\"train_seconds\":%.4f,\"iterations\":%ld,\"workers\":%d,\"share\":%s,"
               "\"shadow_us\":%.0f,\"weights_hash\":\"%016" PRIx64 "\"}\n",
               train, it, nw, share ? "true" : "false", shadow.work * 1e6, es_weights_hash(es));
    es_split_free(&split);
    es_destroy(&es);
    free(noise);
    free(theta0);
    free(tasks);
    free(res);
    free(arr);
    free(in);
    return status;
}

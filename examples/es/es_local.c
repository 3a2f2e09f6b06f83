/*  es_local - train a policy with ES in one process, no Lux runtime.

    The baseline the distributed driver is measured against, and the
    reference for determinism: for a given seed (and the same settings) it
    ends with the same weights, whatever --threads says, because threads
    only change who evaluates which rollout and in what order results come
    back (they are handed to es_update in arrival order on purpose).

    Loop: build the noise table, initialise the policy from the seed, then
    per iteration evaluate the population's rollouts and update. The
    unperturbed policy is evaluated on 100 fresh episodes (the solved test)
    every --eval-every iterations, and whenever the population's mean return
    reaches the solved score; training stops when the evaluation mean
    reaches it, or at --max-iters or --max-seconds.

    Usage: es_local --env cartpole|pendulum [--seed N] [--json] [options];
    see es_opts.c. Exit status: 0 solved, 1 stopped at a limit, 2 bad usage,
    3 out of memory.
*/
#include "env.h"
#include "es.h"
#include "es_noise.h"
#include "es_opts.h"
#include "es_policy.h"
#include "es_rollout.h"

#include "lux.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- a pool of threads for one batch of jobs --------------------------------------- */

typedef struct {
    int (*fn)(void *arg, size_t job); /* does one job; nonzero stops the batch */
    void *arg;                        /* passed to fn */
    size_t jobs;                      /* jobs 0..jobs-1 */
    atomic_size_t next;               /* the next job to claim */
    atomic_int rc;                    /* the first failure */
    atomic_int threads;               /* threads that joined, numbering them */
} s_batch_t;

#define S_THREADS_MAX 64
static _Thread_local int s_thread; /* this thread's number in its batch */

static void *
s_worker(void *p)
{
    s_batch_t *b = p;
    s_thread = atomic_fetch_add(&b->threads, 1);
    for (;;) {
        size_t j = atomic_fetch_add(&b->next, 1);
        if (j >= b->jobs || atomic_load(&b->rc))
            break;
        int rc = b->fn(b->arg, j);
        if (rc) {
            int zero = 0;
            atomic_compare_exchange_strong(&b->rc, &zero, rc);
        }
    }
    return NULL;
}

/* Run fn over jobs 0..jobs-1 on threads threads (this one included). */
static int
s_run_batch(int threads, size_t jobs, int (*fn)(void *, size_t), void *arg)
{
    s_batch_t b = {.fn = fn, .arg = arg, .jobs = jobs};
    atomic_init(&b.next, 0);
    atomic_init(&b.rc, 0);
    atomic_init(&b.threads, 0);
    pthread_t tid[S_THREADS_MAX];
    int started = 0;
    for (int i = 1; i < threads && i < S_THREADS_MAX; i++)
        if (pthread_create(&tid[started], NULL, s_worker, &b) == 0)
            started++;
    s_worker(&b);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return atomic_load(&b.rc);
}

/* --- the two kinds of job: rollouts and evaluation episodes ------------------------ */

typedef struct {
    const es_ctx_t *ctx;    /* this iteration's read-only inputs */
    const es_task_t *tasks; /* population tasks */
    es_result_t **results;  /* result storage, by rollout number */
    es_result_t **arrived;  /* the same results in the order they were finished */
    size_t n_arrived;       /* how many have arrived */
    double busy;            /* seconds spent in rollouts, all threads together */
    double first[S_THREADS_MAX], last[S_THREADS_MAX]; /* this batch: each thread's first start
                                                          and last end (0: none) */
    pthread_mutex_t lock;   /* guards arrived, n_arrived, busy, first and last */
} s_rollouts_t;

static int
s_rollout_job(void *arg, size_t job)
{
    s_rollouts_t *r = arg;
    double t0 = es_opts_now();
    int rc = es_rollout(r->ctx, &r->tasks[job], r->results[job]);
    double took = es_opts_now() - t0;
    pthread_mutex_lock(&r->lock);
    r->busy += took;
    if (r->first[s_thread] == 0.0)
        r->first[s_thread] = t0;
    r->last[s_thread] = t0 + took;
    if (rc == 0)
        r->arrived[r->n_arrived++] = r->results[job];
    pthread_mutex_unlock(&r->lock);
    return rc;
}

typedef struct {
    const es_ctx_t *ctx; /* the policy to evaluate (ctx->theta) */
    uint64_t seed;       /* run seed */
    uint64_t iter;       /* evaluation after this iteration */
    double *ret;         /* returns, by episode number */
    uint64_t *steps;     /* lengths, by episode number */
} s_eval_t;

static int
s_eval_job(void *arg, size_t job)
{
    s_eval_t *e = arg;
    return es_episode(e->ctx, e->ctx->theta, es_eval_seed(e->seed, e->iter, (uint32_t)job),
                      &e->ret[job], &e->steps[job], NULL);
}

/* Building the noise table: its blocks are independent (es_noise.h), so
   they are filled on all threads, with the same result as one thread. */
typedef struct {
    float *table;  /* the table being built */
    size_t len;    /* its length in floats */
    uint64_t seed; /* its seed */
} s_fill_t;

static int
s_fill_job(void *arg, size_t block)
{
    s_fill_t *f = arg;
    es_noise_fill_block(f->table, f->len, f->seed, block);
    return 0;
}

/* Mean return of the unperturbed policy over o->eval_episodes episodes. */
static int
s_evaluate(const es_opts_t *o, const es_ctx_t *ctx, uint64_t iter, double *mean, uint64_t *steps)
{
    size_t n = (size_t)o->eval_episodes;
    s_eval_t e = {.ctx = ctx, .seed = o->es.seed, .iter = iter};
    e.ret = calloc(n, sizeof *e.ret);
    e.steps = calloc(n, sizeof *e.steps);
    int rc = e.ret && e.steps ? s_run_batch(o->threads, n, s_eval_job, &e) : LUX_ENOMEM;
    if (rc == 0) {
        double sum = 0.0;
        for (size_t k = 0; k < n; k++) { /* in episode order: deterministic */
            sum += e.ret[k];
            *steps += e.steps[k];
        }
        *mean = sum / (double)n;
    }
    free(e.ret);
    free(e.steps);
    return rc;
}

/* --- training --------------------------------------------------------------------------- */

/* What an iteration spends outside rollouts, as `measure-dist.sh timeline`
   reads es.so's from its log: from one iteration's first rollout to the
   next one's, less the busiest thread's span from its first rollout's
   start to its last one's end (the update, the hand-off to the threads,
   a thread starting late), over iterations 21 on. */
typedef struct {
    bool have;             /* prev_* hold the last iteration's */
    double prev_start, prev_span;
    double total;          /* the iterations' time */
    double *gaps;          /* what each spent outside rollouts */
    size_t n, cap;
} s_boundary_t;

static int
s_boundary_add(s_boundary_t *bd, const s_rollouts_t *ro, uint64_t iter)
{
    double start = 0.0, span = 0.0;
    for (int i = 0; i < S_THREADS_MAX; i++) {
        if (ro->first[i] == 0.0)
            continue;
        if (start == 0.0 || ro->first[i] < start)
            start = ro->first[i];
        if (ro->last[i] - ro->first[i] > span)
            span = ro->last[i] - ro->first[i];
    }
    if (bd->have && iter > 20) {
        if (bd->n == bd->cap) {
            size_t cap = bd->cap ? 2 * bd->cap : 256;
            double *g = realloc(bd->gaps, cap * sizeof *g);
            if (!g)
                return LUX_ENOMEM;
            bd->gaps = g;
            bd->cap = cap;
        }
        bd->gaps[bd->n++] = start - bd->prev_start - bd->prev_span;
        bd->total += start - bd->prev_start;
    }
    bd->have = start > 0.0;
    bd->prev_start = start;
    bd->prev_span = span;
    return 0;
}

static int
s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Its share of those iterations' time (%) and its median (us) into
   share and us (left alone with too few iterations); frees bd. */
static void
s_boundary_end(s_boundary_t *bd, double *share, double *us)
{
    double sum = 0.0;
    for (size_t i = 0; i < bd->n; i++)
        sum += bd->gaps[i];
    if (bd->n && bd->total > 0.0) {
        qsort(bd->gaps, bd->n, sizeof *bd->gaps, s_cmp_double);
        *share = 100.0 * sum / bd->total;
        size_t h = bd->n / 2;
        *us = 1e6 * (bd->n % 2 ? bd->gaps[h] : (bd->gaps[h - 1] + bd->gaps[h]) / 2);
    }
    free(bd->gaps);
    bd->gaps = NULL;
}

typedef struct {
    bool solved;            /* the evaluation mean reached the solved score */
    uint64_t iters;         /* iterations done */
    double eval_mean;       /* the last evaluation's mean return */
    uint64_t eval_iter;     /* ...done after this many iterations */
    uint64_t hash;          /* es_weights_hash of the final weights */
    uint64_t steps;         /* environment steps, training and evaluation */
    uint64_t episodes;      /* episodes, training and evaluation */
    double noise_seconds;   /* building the noise table */
    double rollout_seconds; /* in rollouts, all threads together (as es.so's task times) */
    double boundary_share;  /* % of iterations 21 on outside the busiest thread's rollouts */
    double boundary_us;     /* ...its median per iteration (both 0 with too few) */
    double seconds;         /* everything, from before the noise table */
    size_t n_params;        /* policy size */
} s_outcome_t;

static int
s_train(const es_opts_t *o, s_outcome_t *out)
{
    const es_env_t *env = o->env;
    double t0 = es_opts_now();
    int rc = LUX_ENOMEM;
    size_t pop = (size_t)o->es.population;
    es_policy_t pol;
    es_t *es = NULL;
    float *theta0 = NULL;
    es_task_t *tasks = NULL;
    es_result_t **results = NULL, **arrived = NULL;
    s_rollouts_t ro = {.n_arrived = 0};
    s_boundary_t bd = {.have = false};
    pthread_mutex_init(&ro.lock, NULL);
    memset(out, 0, sizeof *out);
    out->eval_mean = -INFINITY;

    s_fill_t noise = {.len = o->noise_len, .seed = o->noise_seed};
    noise.table = malloc(noise.len * sizeof(float));
    if (!noise.table)
        goto done;
    s_run_batch(o->threads, (noise.len + ES_NOISE_BLOCK - 1) / ES_NOISE_BLOCK, s_fill_job, &noise);
    out->noise_seconds = es_opts_now() - t0;
    if (es_policy_init(&pol, env, o->n_hidden, o->hidden) != 0) {
        fprintf(stderr, "es_local: bad policy shape\n");
        rc = LUX_EINVAL;
        goto done;
    }
    out->n_params = pol.n_params;
    theta0 = malloc(pol.n_params * sizeof *theta0);
    tasks = calloc(pop, sizeof *tasks);
    results = calloc(pop, sizeof *results);
    arrived = calloc(pop, sizeof *arrived);
    if (!theta0 || !tasks || !results || !arrived)
        goto done;
    for (size_t i = 0; i < pop; i++)
        if (!(results[i] = malloc(es_result_size(env->obs_dim))))
            goto done;
    es_policy_init_weights(&pol, theta0, o->es.seed);
    es = es_new(&o->es, pol.n_params, env->obs_dim, theta0, noise.table, noise.len);
    if (!es)
        goto done;

    double last_print = 0.0, t_iter0 = es_opts_now();
    uint64_t eps_since = 0;
    for (;;) {
        es_ctx_t ctx;
        es_ctx(es, env, &pol, &ctx);
        for (size_t i = 0; i < pop; i++)
            tasks[i] = es_task(es, (uint32_t)i);
        ro.ctx = &ctx;
        ro.tasks = tasks;
        ro.results = results;
        ro.arrived = arrived;
        ro.n_arrived = 0;
        memset(ro.first, 0, sizeof ro.first);
        memset(ro.last, 0, sizeof ro.last);
        rc = s_run_batch(o->threads, pop, s_rollout_job, &ro);
        if (rc)
            goto done;
        if ((rc = s_boundary_add(&bd, &ro, es_iter(es) + 1)))
            goto done;
        es_stats_t st;
        rc = es_update(es, arrived, ro.n_arrived, &st);
        if (rc) {
            fprintf(stderr, "es_local: %s\n", es_errmsg(es));
            goto done;
        }
        out->iters = es_iter(es);
        out->steps += st.steps;
        out->episodes += 2 * pop * (uint64_t)o->es.episodes;
        eps_since += 2 * pop * (uint64_t)o->es.episodes;

        /* the solved test, on the updated weights */
        bool evaluated = false;
        if (out->iters % (uint64_t)o->eval_every == 0 || st.ret_mean >= o->target) {
            bd.have = false; /* an evaluation is no part of the boundary */
            es_ctx(es, env, &pol, &ctx);
            rc = s_evaluate(o, &ctx, out->iters, &out->eval_mean, &out->steps);
            if (rc)
                goto done;
            out->episodes += (uint64_t)o->eval_episodes;
            out->eval_iter = out->iters;
            out->solved = out->eval_mean >= o->target;
            evaluated = true;
        }
        double now = es_opts_now();
        bool stop = out->solved || (o->max_iters && out->iters >= (uint64_t)o->max_iters) ||
                    (o->max_seconds > 0 && now - t0 >= o->max_seconds);
        if (o->progress && (evaluated || stop || now - last_print >= 0.5)) {
            fprintf(stderr,
                    "iter %5" PRIu64 "  mean %9.2f  best %9.2f  eval %9.2f  episodes/s %7.0f"
                    "  elapsed %6.1fs\n",
                    out->iters, st.ret_mean, st.ret_max, out->eval_mean,
                    (double)eps_since / (now - t_iter0), now - t0);
            last_print = now;
            t_iter0 = now;
            eps_since = 0;
        }
        if (stop)
            break;
    }
    /* a final evaluation when the last one is stale, so the reported mean
       always belongs to the final weights */
    if (out->eval_iter != out->iters) {
        es_ctx_t ctx;
        es_ctx(es, env, &pol, &ctx);
        rc = s_evaluate(o, &ctx, out->iters, &out->eval_mean, &out->steps);
        if (rc)
            goto done;
        out->episodes += (uint64_t)o->eval_episodes;
        out->eval_iter = out->iters;
        out->solved = out->eval_mean >= o->target;
    }
    out->hash = es_weights_hash(es);
    rc = 0;
done:
    out->seconds = es_opts_now() - t0;
    out->rollout_seconds = ro.busy;
    s_boundary_end(&bd, &out->boundary_share, &out->boundary_us);
    if (rc == LUX_ENOMEM)
        fprintf(stderr, "es_local: out of memory\n");
    es_destroy(&es);
    if (results)
        for (size_t i = 0; i < pop; i++)
            free(results[i]);
    free(results);
    free(arrived);
    free(tasks);
    free(theta0);
    free(noise.table);
    pthread_mutex_destroy(&ro.lock);
    return rc;
}

int
main(int argc, char **argv)
{
    es_opts_t o;
    int rc = es_opts_parse(&o, argc, argv, "es_local", ES_OPTS_LOCAL);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.progress < 0)
        o.progress = isatty(STDERR_FILENO);
    s_outcome_t out;
    rc = s_train(&o, &out);
    if (rc)
        return rc == LUX_ENOMEM ? 3 : 2;
    double rate = out.seconds > 0 ? (double)out.episodes / out.seconds : 0;
    if (o.json)
        printf("{\"env\":\"%s\",\"gym_id\":\"%s\",\"seed\":%" PRIu64 ",\"solved\":%s,"
               "\"seconds\":%.4f,\"iterations\":%" PRIu64 ",\"mean_return\":%.4f,"
               "\"weights_hash\":\"%016" PRIx64 "\",\"n_params\":%zu,\"threads\":%d,"
               "\"episodes\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"episodes_per_second\":%.1f,"
               "\"noise_seconds\":%.4f,\"rollout_seconds\":%.4f,"
               "\"boundary_share\":%.2f,\"boundary_us\":%.0f}\n",
               o.env->name, o.env->gym_id, o.es.seed, out.solved ? "true" : "false", out.seconds,
               out.iters, out.eval_mean, out.hash, out.n_params, o.threads, out.episodes, out.steps,
               rate, out.noise_seconds, out.rollout_seconds, out.boundary_share, out.boundary_us);
    else
        printf("%s seed %" PRIu64 ": %s after %" PRIu64 " iterations, %.2f s; mean return %.2f "
               "over %d episodes; weights %016" PRIx64 "\n",
               o.env->gym_id, o.es.seed, out.solved ? "solved" : "not solved", out.iters,
               out.seconds, out.eval_mean, o.eval_episodes, out.hash);
    return out.solved ? 0 : 1;
}

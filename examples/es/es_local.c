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
    see s_usage(). Exit status: 0 solved, 1 stopped at a limit, 2 bad usage,
    3 out of memory.
*/
#include "env.h"
#include "es.h"
#include "es_noise.h"
#include "es_policy.h"
#include "es_rollout.h"

#include "lux.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Settings of one run; per-environment defaults in s_defaults(). */
typedef struct {
    const es_env_t *env;              /* what to train on */
    es_config_t es;                   /* the ES settings */
    int n_hidden;                     /* hidden layers */
    int hidden[ES_POLICY_MAX_HIDDEN]; /* their widths */
    size_t noise_len;                 /* noise table floats */
    uint64_t noise_seed;              /* noise table seed */
    int threads;                      /* evaluating threads */
    long max_iters;                   /* stop after this many iterations (0: no limit) */
    double max_seconds;               /* stop after this long (0: no limit) */
    int eval_every;                   /* evaluate the unperturbed policy this often */
    int eval_episodes;                /* episodes per evaluation */
    bool json;                        /* print the summary as JSON on stdout */
    int progress;                     /* -1: when stderr is a terminal, 0 never, 1 always */
} s_opts_t;

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The settings chosen for each environment (README explains them). */
static void
s_defaults(s_opts_t *o)
{
    es_config_default(&o->es);
    o->n_hidden = 1;
    o->noise_len = ES_NOISE_DEFAULT_LEN;
    o->noise_seed = ES_NOISE_DEFAULT_SEED;
    o->threads = 1;
    o->eval_episodes = o->env->solved_episodes;
    if (strcmp(o->env->name, "cartpole") == 0) {
        /* easy: one episode per perturbation, large steps */
        o->hidden[0] = 32;
        o->es.population = 32;
        o->es.episodes = 1;
        o->es.sigma = 0.1;
        o->es.lr = 0.03;
        o->max_seconds = 60;
        o->eval_every = 5;
    } else {
        /* Pendulum's returns depend much on the start, so each perturbation
           plays 4 episodes and the whole population the same 4 starts.
           Running observation statistics made ES settle for spinning the
           pendulum (a -750 plateau lasting thousands of iterations); its
           observations are well scaled already, so they are not used. */
        o->hidden[0] = 32;
        o->es.population = 32;
        o->es.episodes = 4;
        o->es.sigma = 0.05;
        o->es.lr = 0.04;
        o->es.obs_norm = false;
        o->es.shared_env_seed = true;
        o->max_seconds = 180;
        o->eval_every = 10;
    }
}

/* --- a pool of threads for one batch of jobs --------------------------------------- */

typedef struct {
    int (*fn)(void *arg, size_t job); /* does one job; nonzero stops the batch */
    void *arg;                        /* passed to fn */
    size_t jobs;                      /* jobs 0..jobs-1 */
    atomic_size_t next;               /* the next job to claim */
    atomic_int rc;                    /* the first failure */
} s_batch_t;

static void *
s_worker(void *p)
{
    s_batch_t *b = p;
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
    pthread_t tid[64];
    int started = 0;
    for (int i = 1; i < threads && i < 64; i++)
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
    pthread_mutex_t lock;   /* guards arrived and n_arrived */
} s_rollouts_t;

static int
s_rollout_job(void *arg, size_t job)
{
    s_rollouts_t *r = arg;
    int rc = es_rollout(r->ctx, &r->tasks[job], r->results[job]);
    if (rc == 0) {
        pthread_mutex_lock(&r->lock);
        r->arrived[r->n_arrived++] = r->results[job];
        pthread_mutex_unlock(&r->lock);
    }
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
s_evaluate(const s_opts_t *o, const es_ctx_t *ctx, uint64_t iter, double *mean, uint64_t *steps)
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

/* --- command line ------------------------------------------------------------------- */

static void
s_usage(FILE *f)
{
    fprintf(f,
            "usage: es_local --env cartpole|pendulum [--seed N] [--json] [options]\n"
            "  --threads N        evaluate rollouts on N threads (default 1)\n"
            "  --max-iters N      stop after N iterations\n"
            "  --max-seconds S    stop after S seconds (default 60 cartpole, 180 pendulum)\n"
            "  --pop N            antithetic pairs per iteration\n"
            "  --episodes N       episodes per perturbation\n"
            "  --sigma X          perturbation scale\n"
            "  --lr X             Adam step size\n"
            "  --l2 X             weight decay\n"
            "  --hidden W[,W...]  hidden layer widths (0: linear policy)\n"
            "  --noise-len N      noise table floats (default %zu)\n"
            "  --noise-seed N     noise table seed (default %u)\n"
            "  --eval-every N     evaluate every N iterations\n"
            "  --eval-episodes N  episodes per evaluation (default 100)\n"
            "  --shared-env-seed, --no-shared-env-seed\n"
            "                     do all rollouts of an iteration start from the same states\n"
            "                     (default: pendulum yes, cartpole no)\n"
            "  --obs-norm, --no-obs-norm\n"
            "                     normalise observations (default: cartpole yes, pendulum no)\n"
            "  --progress, --quiet  force progress lines on stderr on or off\n",
            ES_NOISE_DEFAULT_LEN, ES_NOISE_DEFAULT_SEED);
}

static bool
s_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || *s == '-')
        return false;
    *out = v;
    return true;
}

static bool
s_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool
s_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0))
        return false;
    *out = v;
    return true;
}

static bool
s_parse_hidden(const char *s, s_opts_t *o)
{
    if (strcmp(s, "0") == 0) {
        o->n_hidden = 0;
        return true;
    }
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long w = strtol(p, &end, 10);
        if (end == p || w < 1 || w > ES_POLICY_MAX_WIDTH || n == ES_POLICY_MAX_HIDDEN)
            return false;
        o->hidden[n++] = (int)w;
        if (*end == ',')
            end++;
        else if (*end)
            return false;
        p = end;
    }
    o->n_hidden = n;
    return n > 0;
}

enum {
    O_ENV = 256,
    O_SEED,
    O_JSON,
    O_THREADS,
    O_MAX_ITERS,
    O_MAX_SECONDS,
    O_POP,
    O_EPISODES,
    O_SIGMA,
    O_LR,
    O_L2,
    O_HIDDEN,
    O_NOISE_LEN,
    O_NOISE_SEED,
    O_EVAL_EVERY,
    O_EVAL_EPISODES,
    O_SHARED,
    O_NO_SHARED,
    O_OBS_NORM,
    O_NO_OBS_NORM,
    O_PROGRESS,
    O_QUIET,
    O_HELP
};

/* Parse argv into o: 0, or 2 after printing why. The environment is
   needed first (it picks the defaults), so it is found in a first pass. */
static int
s_parse(int argc, char **argv, s_opts_t *o)
{
    static const struct option opts[] = {
        {"env", required_argument, NULL, O_ENV},
        {"seed", required_argument, NULL, O_SEED},
        {"json", no_argument, NULL, O_JSON},
        {"threads", required_argument, NULL, O_THREADS},
        {"max-iters", required_argument, NULL, O_MAX_ITERS},
        {"max-seconds", required_argument, NULL, O_MAX_SECONDS},
        {"pop", required_argument, NULL, O_POP},
        {"episodes", required_argument, NULL, O_EPISODES},
        {"sigma", required_argument, NULL, O_SIGMA},
        {"lr", required_argument, NULL, O_LR},
        {"l2", required_argument, NULL, O_L2},
        {"hidden", required_argument, NULL, O_HIDDEN},
        {"noise-len", required_argument, NULL, O_NOISE_LEN},
        {"noise-seed", required_argument, NULL, O_NOISE_SEED},
        {"eval-every", required_argument, NULL, O_EVAL_EVERY},
        {"eval-episodes", required_argument, NULL, O_EVAL_EPISODES},
        {"shared-env-seed", no_argument, NULL, O_SHARED},
        {"no-shared-env-seed", no_argument, NULL, O_NO_SHARED},
        {"obs-norm", no_argument, NULL, O_OBS_NORM},
        {"no-obs-norm", no_argument, NULL, O_NO_OBS_NORM},
        {"progress", no_argument, NULL, O_PROGRESS},
        {"quiet", no_argument, NULL, O_QUIET},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    const char *env = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--env") == 0 && i + 1 < argc)
            env = argv[i + 1];
        else if (strncmp(argv[i], "--env=", 6) == 0)
            env = argv[i] + 6;
        else if (strcmp(argv[i], "--help") == 0) {
            s_usage(stdout);
            exit(0);
        }
    }
    memset(o, 0, sizeof *o);
    o->env = es_env_find(env);
    if (!o->env) {
        fprintf(stderr, "es_local: %s\n",
                env ? "unknown environment (cartpole, pendulum)" : "--env is required");
        s_usage(stderr);
        return 2;
    }
    s_defaults(o);
    o->progress = -1;

    int c, li = -1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
        const char *a = optarg;
        long v = 0;
        uint64_t u = 0;
        double d = 0;
        bool good = true;
        switch (c) {
        case O_ENV:
            break;
        case O_SEED:
            good = s_parse_u64(a, &o->es.seed);
            break;
        case O_JSON:
            o->json = true;
            break;
        case O_THREADS:
            if ((good = s_parse_int(a, 1, 64, &v)))
                o->threads = (int)v;
            break;
        case O_MAX_ITERS:
            good = s_parse_int(a, 0, 1L << 40, &o->max_iters);
            break;
        case O_MAX_SECONDS:
            good = s_parse_double(a, &o->max_seconds);
            break;
        case O_POP:
            if ((good = s_parse_int(a, 1, 1 << 20, &v)))
                o->es.population = (int)v;
            break;
        case O_EPISODES:
            if ((good = s_parse_int(a, 1, 1 << 20, &v)))
                o->es.episodes = (int)v;
            break;
        case O_SIGMA:
            if ((good = s_parse_double(a, &d) && d > 0))
                o->es.sigma = d;
            break;
        case O_LR:
            good = s_parse_double(a, &o->es.lr);
            break;
        case O_L2:
            good = s_parse_double(a, &o->es.l2);
            break;
        case O_HIDDEN:
            good = s_parse_hidden(a, o);
            break;
        case O_NOISE_LEN:
            if ((good = s_parse_u64(a, &u) && u >= 1024 && u <= ((uint64_t)1 << 34)))
                o->noise_len = (size_t)u;
            break;
        case O_NOISE_SEED:
            good = s_parse_u64(a, &o->noise_seed);
            break;
        case O_EVAL_EVERY:
            if ((good = s_parse_int(a, 1, 1 << 30, &v)))
                o->eval_every = (int)v;
            break;
        case O_EVAL_EPISODES:
            if ((good = s_parse_int(a, 1, 1 << 20, &v)))
                o->eval_episodes = (int)v;
            break;
        case O_SHARED:
            o->es.shared_env_seed = true;
            break;
        case O_NO_SHARED:
            o->es.shared_env_seed = false;
            break;
        case O_OBS_NORM:
            o->es.obs_norm = true;
            break;
        case O_NO_OBS_NORM:
            o->es.obs_norm = false;
            break;
        case O_PROGRESS:
            o->progress = 1;
            break;
        case O_QUIET:
            o->progress = 0;
            break;
        default:
            fprintf(stderr, "es_local: unknown option or missing value: %s\n", argv[optind - 1]);
            s_usage(stderr);
            return 2;
        }
        if (!good) {
            fprintf(stderr, "es_local: bad value for --%s: %s\n", opts[li].name, a);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "es_local: unexpected argument: %s\n", argv[optind]);
        return 2;
    }
    if (o->progress < 0)
        o->progress = isatty(STDERR_FILENO);
    return 0;
}

/* --- training --------------------------------------------------------------------------- */

typedef struct {
    bool solved;          /* the evaluation mean reached the solved score */
    uint64_t iters;       /* iterations done */
    double eval_mean;     /* the last evaluation's mean return */
    uint64_t eval_iter;   /* ...done after this many iterations */
    uint64_t hash;        /* es_weights_hash of the final weights */
    uint64_t steps;       /* environment steps, training and evaluation */
    uint64_t episodes;    /* episodes, training and evaluation */
    double noise_seconds; /* building the noise table */
    double seconds;       /* everything, from before the noise table */
    size_t n_params;      /* policy size */
} s_outcome_t;

static int
s_train(const s_opts_t *o, s_outcome_t *out)
{
    const es_env_t *env = o->env;
    double t0 = s_now();
    int rc = LUX_ENOMEM;
    size_t pop = (size_t)o->es.population;
    es_policy_t pol;
    es_t *es = NULL;
    float *theta0 = NULL;
    es_task_t *tasks = NULL;
    es_result_t **results = NULL, **arrived = NULL;
    s_rollouts_t ro = {.n_arrived = 0};
    pthread_mutex_init(&ro.lock, NULL);
    memset(out, 0, sizeof *out);
    out->eval_mean = -INFINITY;

    s_fill_t noise = {.len = o->noise_len, .seed = o->noise_seed};
    noise.table = malloc(noise.len * sizeof(float));
    if (!noise.table)
        goto done;
    s_run_batch(o->threads, (noise.len + ES_NOISE_BLOCK - 1) / ES_NOISE_BLOCK, s_fill_job, &noise);
    out->noise_seconds = s_now() - t0;
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

    double last_print = 0.0, t_iter0 = s_now();
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
        rc = s_run_batch(o->threads, pop, s_rollout_job, &ro);
        if (rc)
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
        if (out->iters % (uint64_t)o->eval_every == 0 || st.ret_mean >= env->solved_return) {
            es_ctx(es, env, &pol, &ctx);
            rc = s_evaluate(o, &ctx, out->iters, &out->eval_mean, &out->steps);
            if (rc)
                goto done;
            out->episodes += (uint64_t)o->eval_episodes;
            out->eval_iter = out->iters;
            out->solved = out->eval_mean >= env->solved_return;
            evaluated = true;
        }
        double now = s_now();
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
        out->solved = out->eval_mean >= env->solved_return;
    }
    out->hash = es_weights_hash(es);
    rc = 0;
done:
    out->seconds = s_now() - t0;
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
    s_opts_t o;
    int rc = s_parse(argc, argv, &o);
    if (rc)
        return rc;
    s_outcome_t out;
    rc = s_train(&o, &out);
    if (rc)
        return rc == LUX_ENOMEM ? 3 : 2;
    double rate = out.seconds > 0 ? (double)out.episodes / out.seconds : 0;
    if (o.json)
        printf("{\"env\":\"%s\",\"gym_id\":\"%s\",\"seed\":%" PRIu64 ",\"solved\":%s,"
               "\"seconds\":%.3f,\"iterations\":%" PRIu64 ",\"mean_return\":%.4f,"
               "\"weights_hash\":\"%016" PRIx64 "\",\"n_params\":%zu,\"threads\":%d,"
               "\"episodes\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"episodes_per_second\":%.1f,"
               "\"noise_seconds\":%.3f}\n",
               o.env->name, o.env->gym_id, o.es.seed, out.solved ? "true" : "false", out.seconds,
               out.iters, out.eval_mean, out.hash, out.n_params, o.threads, out.episodes, out.steps,
               rate, out.noise_seconds);
    else
        printf("%s seed %" PRIu64 ": %s after %" PRIu64 " iterations, %.2f s; mean return %.2f "
               "over %d episodes; weights %016" PRIx64 "\n",
               o.env->gym_id, o.es.seed, out.solved ? "solved" : "not solved", out.iters,
               out.seconds, out.eval_mean, o.eval_episodes, out.hash);
    return out.solved ? 0 : 1;
}

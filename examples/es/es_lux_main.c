/*  es_lux_main - the driver of es.so: `lux run examples/es/es.so --env ENV
    --seed N [--workers N] [--kill-workers] [--ps [--kill-server]] [--json] [options]`.

    LUX_CONFIGURE reads the command line before the cluster starts (so that
    --workers sizes the embedded default, and --help or a bad option start
    nothing); LUX_MAIN trains. The loop is es_local's (the same
    es_opts_t settings, the same es_t, the same evaluation schedule), with
    the rollouts and the evaluation episodes run as Lux tasks (es_lux.h
    describes the data flow), so both end with the same weights. With --ps
    the es_t lives in a parameter-server actor (es_lux_ps.c): the driver
    submits the rollout tasks, which pull the weights from the server and
    push their results to it, and then asks the server to update; the
    weights are the same again.

    Output: progress lines on stdout when it is a terminal (or --progress);
    then, unless --no-report, a report drawn from the run's log with SQL;
    with --json, last, one JSON object on a line of its own. Exit status 0
    when solved, 1 when stopped at a limit, 2 on bad usage, 3 when the run
    failed.
*/
#include "es_lux.h"
#include "es.h"
#include "es_noise.h"
#include "es_opts.h"
#include "es_split.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_PROG "es.so"
#define S_KILL_MIN_MS 30  /* --kill-workers: pauses between kills */
#define S_KILL_MAX_MS 300
#define S_KILL_ATTEMPTS 20 /* runs a task may take when workers are being killed */
#define S_PS_RESTARTS 10000 /* --ps: restarts the server may take (each kill is one) */

/* What LUX_CONFIGURE found, for LUX_MAIN. */
static es_opts_t s_opts;
static bool s_configured;
static int s_cfg_workers;  /* the embedded default's workers as configured (0: per core) */
static bool s_embedded;    /* no address: the embedded default */
static double s_t_start;   /* before lux_init */

static int
s_configure(lux_config_t *cfg, int argc, char **argv)
{
    s_t_start = es_opts_now();
    int rc = es_opts_parse(&s_opts, argc, argv, S_PROG, ES_OPTS_LUX);
    if (rc < 0)
        exit(0); /* --help: nothing has started */
    if (rc)
        return rc;
    if (s_opts.workers)
        cfg->workers = s_opts.workers;
    const char *addr = cfg->address ? cfg->address : getenv("LUX_ADDRESS");
    s_embedded = !addr || !*addr;
    if ((s_opts.kill_workers || s_opts.kill_server) && !s_embedded) {
        fprintf(stderr, "%s: --kill-workers and --kill-server kill processes of the embedded "
                        "default only; run without --address and LUX_ADDRESS\n", S_PROG);
        return 2;
    }
    s_cfg_workers = cfg->workers;
    s_configured = true;
    return 0;
}
LUX_CONFIGURE(s_configure)

/* --- the noise table, built on every core ---------------------------------------------- */

typedef struct {
    float *table;       /* being filled */
    size_t len;         /* floats */
    uint64_t seed;      /* the table's seed */
    atomic_size_t next; /* the next block to fill */
} s_fill_t;

static void *
s_fill(void *arg)
{
    s_fill_t *f = arg;
    size_t blocks = (f->len + ES_NOISE_BLOCK - 1) / ES_NOISE_BLOCK;
    for (size_t b; (b = atomic_fetch_add(&f->next, 1)) < blocks;)
        es_noise_fill_block(f->table, f->len, f->seed, b);
    return NULL;
}

/* Build the table (blocks are independent: any order, any thread, the
   same floats), put it in the store once, and read it back in place. */
static int
s_noise(lux_t *lx, const es_opts_t *o, int threads, lux_ref_t *ref, const float **table,
        double *fill_seconds)
{
    s_fill_t f = {.len = o->noise_len, .seed = o->noise_seed};
    double t0 = es_opts_now();
    if (!(f.table = malloc(f.len * sizeof(float))))
        return LUX_ENOMEM;
    atomic_init(&f.next, 0);
    pthread_t tid[64];
    int started = 0;
    for (int i = 1; i < threads && i < 64; i++)
        if (pthread_create(&tid[started], NULL, s_fill, &f) == 0)
            started++;
    s_fill(&f);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    *fill_seconds = es_opts_now() - t0;
    int rc = lux_put(lx, f.table, f.len * sizeof(float), ref);
    free(f.table);
    if (rc)
        return rc;
    lux_val_t v;
    if ((rc = lux_get(lx, ref, &v, -1)))
        return rc;
    *table = v.data;
    return 0;
}

/* --- a run --------------------------------------------------------------------------- */

typedef struct {
    lux_t *lx;
    const es_opts_t *o;
    es_policy_t pol;          /* the policy's shape */
    es_t *es;                 /* the ES state: weights, Adam, observation statistics */
    lux_ref_t noise;          /* the noise table in the store */
    const float *table;       /* ...read in place */
    lux_ref_t policy;         /* the policy object of iteration policy_iter */
    uint64_t policy_iter;
    bool have_policy;
    int workers;              /* to size tasks */
    int ntasks, neval;        /* rollout tasks per iteration, tasks per evaluation */
    lux_opts_t call;          /* how tasks are called */
    uint64_t iter;            /* the current iteration: updates done */
    bool ps;                  /* --ps: the ES state is in the server, r->es is NULL */
    lux_actor_t server;       /* --ps: the EsServer actor */
    int server_kills;         /* --kill-server: its processes killed */
    uint64_t duplicates;      /* --ps: results the server was pushed twice */
    es_split_t split;         /* rollouts per task (es_split.h) */
    es_board_t *board;        /* the tasks share rollouts through it, or NULL */
    uint64_t helped;          /* rollouts computed by a task not their own */
    lux_ref_t *refs;          /* scratch: one iteration's tasks */
    lux_val_t *vals;
    double *took;             /* scratch: seconds from submission to each task's result */
    int *ready;               /* scratch: lux_wait's flags */
    es_task_t *tasks;         /* scratch: the population's tasks */
    es_result_t **results;    /* scratch: pointers to their results */
    char last_task[33];       /* the last rollout task's ID */
    /* counters */
    long ntasks_done;         /* tasks submitted and finished */
    uint64_t rollouts, episodes, steps;
} s_run_t;

/* The policy object of the current iteration, put (or with --ps, pulled
   from the server) if it is not yet. */
static int
s_policy(s_run_t *r)
{
    uint64_t iter = r->iter;
    if (r->have_policy && r->policy_iter == iter)
        return 0;
    if (r->have_policy)
        lux_free(r->lx, 1, &r->policy);
    r->have_policy = false;
    if (r->ps) {
        int rc = lux_actor_call(r->lx, &r->server, "pull", 1,
                                (lux_arg_t[]){LUX_VAL(&iter, sizeof iter)}, 1, &r->policy);
        if (rc == 0) {
            r->have_policy = true;
            r->policy_iter = iter;
        }
        return rc;
    }
    int obs_dim = r->o->env->obs_dim;
    const float *mean = es_obs_mean(r->es), *std = es_obs_std(r->es);
    size_t n = es_lux_policy_size((uint32_t)r->pol.n_params, mean ? (uint32_t)obs_dim : 0);
    void *buf = malloc(n);
    if (!buf)
        return LUX_ENOMEM;
    es_lux_policy_write(buf, r->o->env->name, &r->pol, r->o->es.episodes, (float)r->o->es.sigma,
                        iter, r->o->noise_len, es_theta(r->es), obs_dim, mean, std);
    if (r->board)
        es_board_stamp(r->board, buf);
    int rc = lux_put(r->lx, buf, n, &r->policy);
    free(buf);
    if (rc == 0) {
        r->have_policy = true;
        r->policy_iter = iter;
    }
    return rc;
}

/* Wait for the n tasks of r->refs, noting in r->took when each was done
   (seconds since t0), for es_split. 0, or the first error of lux_wait
   (lux_get_many then says which task failed). */
static int
s_wait_timed(s_run_t *r, int n, double t0)
{
    int got = 0;
    for (int k = 0; k < n; k++)
        r->took[k] = 0.0;
    while (got < n) {
        int rc = lux_wait(r->lx, n, r->refs, got + 1, -1, r->ready);
        if (rc < 0)
            return rc;
        double now = es_opts_now();
        got = 0;
        for (int k = 0; k < n; k++) {
            if (r->ready[k] && r->took[k] == 0.0)
                r->took[k] = now - t0;
            got += r->ready[k] != 0;
        }
    }
    return 0;
}

/* One iteration: the population's rollouts as tasks, then the update. */
static int
s_iteration(s_run_t *r, es_stats_t *st)
{
    size_t pop = (size_t)r->o->es.population, rs = es_result_size(r->o->env->obs_dim);
    for (size_t i = 0; i < pop; i++)
        r->tasks[i] = es_task(r->es, (uint32_t)i);
    /* the put and the calls go out together in one message (the client
       sends what waited over 100 us): no work between them */
    int rc = s_policy(r);
    if (rc)
        return rc;
    int n = r->ntasks;
    double t0 = es_opts_now();
    size_t a = 0; /* slot k's first rollout */
    for (int k = 0; k < n; a += r->split.count[k++]) {
        lux_arg_t args[3] = {LUX_REF(r->noise), LUX_REF(r->policy),
                             LUX_VAL(&r->tasks[a], r->split.count[k] * sizeof(es_task_t))};
        if ((rc = lux_call_opts(r->lx, &r->call, "es_rollouts", 3, args, 1, &r->refs[k])))
            return rc;
    }
    bool timed = r->split.balance && n > 1 && s_wait_timed(r, n, t0) == 0;
    if ((rc = lux_get_many(r->lx, n, r->refs, r->vals, -1)) == 0) {
        a = 0;
        for (int k = 0; k < n && rc == 0; a += r->split.count[k++]) {
            size_t c = r->split.count[k];
            if (r->vals[k].size != c * rs) {
                rc = LUX_EINVAL;
                fprintf(stderr, "%s: task %d of iteration %" PRIu64 " returned %zu bytes\n",
                        S_PROG, k, r->iter, r->vals[k].size);
            }
            for (size_t i = 0; i < c && rc == 0; i++)
                r->results[a + i] = (es_result_t *)(void *)((uint8_t *)r->vals[k].data + i * rs);
        }
        if (rc == 0 && (rc = es_update(r->es, r->results, pop, st)))
            fprintf(stderr, "%s: %s\n", S_PROG, es_errmsg(r->es));
        if (r->board)
            r->helped += es_board_helped(r->board, r->iter);
        r->iter = es_iter(r->es);
        if (rc == 0 && timed)
            es_split_update(&r->split, r->took);
    } else {
        fprintf(stderr, "%s: %s\n", S_PROG, lux_errmsg());
    }
    char hex[2 * LUX_REF_LEN + 1];
    snprintf(r->last_task, sizeof r->last_task, "%.32s", lux_ref_hex(&r->refs[n - 1], hex));
    lux_free(r->lx, n, r->refs);
    r->ntasks_done += n;
    if (rc == 0) {
        r->rollouts += pop;
        r->episodes += 2 * pop * (uint64_t)r->o->es.episodes;
        r->steps += st->steps;
    }
    return rc;
}

/* --- the parameter-server variant (--ps) ------------------------------------------------- */

/* Kill -9 the server's process, by the PID it reports. */
static int
s_kill_server(s_run_t *r)
{
    lux_ref_t ref;
    lux_val_t v;
    int64_t pid = 0;
    int rc = lux_actor_call(r->lx, &r->server, "pid", 0, NULL, 1, &ref);
    if (rc)
        return rc;
    if ((rc = lux_get(r->lx, &ref, &v, -1)) == 0 && v.size == sizeof pid)
        memcpy(&pid, v.data, sizeof pid);
    lux_free(r->lx, 1, &ref);
    if (rc)
        return rc;
    if (pid <= 1 || kill((pid_t)pid, SIGKILL) != 0) {
        fprintf(stderr, "%s: --kill-server: cannot kill the server's process %lld\n", S_PROG,
                (long long)pid);
        return 0; /* not the run's failure */
    }
    r->server_kills++;
    if (r->o->progress > 0 || (r->o->progress < 0 && isatty(STDOUT_FILENO))) {
        printf("killed the server's process %lld (kill -9) in iteration %" PRIu64 "\n",
               (long long)pid, r->iter + 1);
        fflush(stdout);
    }
    return 0;
}

/* One iteration with the server: rollout tasks pull the weights from it
   and push their results; then the server updates. */
static int
s_ps_iteration(s_run_t *r, es_stats_t *st)
{
    const es_opts_t *o = r->o;
    size_t pop = (size_t)o->es.population;
    for (size_t i = 0; i < pop; i++)
        r->tasks[i] = es_task_make(o->es.seed, r->iter, (uint32_t)i, o->noise_len,
                                   r->pol.n_params, o->es.shared_env_seed);
    int n = r->ntasks, rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        size_t a = pop * (size_t)k / (size_t)n, b = pop * (size_t)(k + 1) / (size_t)n;
        lux_arg_t args[3] = {LUX_VAL(&r->server, sizeof r->server), LUX_REF(r->noise),
                             LUX_VAL(&r->tasks[a], (b - a) * sizeof(es_task_t))};
        rc = lux_call_opts(r->lx, &r->call, "es_ps_rollouts", 3, args, 1, &r->refs[k]);
    }
    if (rc)
        return rc;
    /* --kill-server: in iterations 2, 4, 8, ..., once the first task is
       done (its results are in the server; the others' are on their way) */
    uint64_t it = r->iter + 1;
    if (o->kill_server && it >= 2 && (it & (it - 1)) == 0) {
        int ready[256];
        int *rd = n <= 256 ? ready : calloc((size_t)n, sizeof *rd);
        if (rd)
            lux_wait(r->lx, n, r->refs, 1, -1, rd);
        if (rd != ready)
            free(rd);
        if ((rc = s_kill_server(r)))
            fprintf(stderr, "%s: --kill-server: %s\n", S_PROG, lux_errmsg());
    }
    if (rc == 0 && (rc = lux_get_many(r->lx, n, r->refs, r->vals, -1)) != 0)
        fprintf(stderr, "%s: %s\n", S_PROG, lux_errmsg());
    for (int k = 0; k < n && rc == 0; k++) {
        size_t a = pop * (size_t)k / (size_t)n, b = pop * (size_t)(k + 1) / (size_t)n;
        uint64_t count = 0;
        if (r->vals[k].size == sizeof count)
            memcpy(&count, r->vals[k].data, sizeof count);
        if (count != b - a) {
            rc = LUX_EINVAL;
            fprintf(stderr, "%s: task %d of iteration %" PRIu64 " returned %zu bytes\n",
                    S_PROG, k, r->iter, r->vals[k].size);
        }
    }
    char hex[2 * LUX_REF_LEN + 1];
    snprintf(r->last_task, sizeof r->last_task, "%.32s", lux_ref_hex(&r->refs[n - 1], hex));
    lux_free(r->lx, n, r->refs);
    r->ntasks_done += n;
    if (rc)
        return rc;

    /* every result is in: the update, and the next iteration's policy */
    lux_ref_t out[2];
    lux_val_t v;
    if ((rc = lux_actor_call(r->lx, &r->server, "update", 1,
                             (lux_arg_t[]){LUX_VAL(&r->iter, sizeof r->iter)}, 2, out)))
        return rc;
    es_lux_ps_stats_t ps;
    if ((rc = lux_get(r->lx, &out[0], &v, -1)) != 0 || v.size != sizeof ps) {
        fprintf(stderr, "%s: the update of iteration %" PRIu64 ": %s\n", S_PROG, r->iter,
                rc ? lux_errmsg() : "a reply of the wrong size");
        lux_free(r->lx, 2, out);
        return rc ? rc : LUX_EINVAL;
    }
    memcpy(&ps, v.data, sizeof ps);
    lux_free(r->lx, 1, &out[0]);
    if (r->have_policy)
        lux_free(r->lx, 1, &r->policy);
    r->policy = out[1];
    r->have_policy = true;
    r->policy_iter = ++r->iter;
    *st = ps.st;
    r->duplicates = ps.duplicates;
    r->rollouts += pop;
    r->episodes += 2 * pop * (uint64_t)o->es.episodes;
    r->steps += st->steps;
    return 0;
}

/* The hash of the server's current weights (es_weights_hash's). */
static int
s_ps_hash(s_run_t *r, uint64_t *hash)
{
    lux_val_t v;
    es_lux_view_t view;
    char why[256];
    int rc = s_policy(r);
    if (rc || (rc = lux_get(r->lx, &r->policy, &v, -1)))
        return rc;
    if ((rc = es_lux_view(&view, v.data, v.size, NULL, 0, why, sizeof why))) {
        fprintf(stderr, "%s: the server's weights: %s\n", S_PROG, why);
        return rc;
    }
    *hash = es_hash_floats(view.ctx.theta, view.policy.n_params);
    es_lux_view_free(&view);
    return 0;
}

/* The mean return of the current weights over eval_episodes episodes, as
   tasks; summed in episode order, as es_local does. */
static int
s_evaluate(s_run_t *r, double *mean)
{
    int rc = s_policy(r);
    if (rc)
        return rc;
    size_t ne = (size_t)r->o->eval_episodes;
    int n = r->neval;
    for (int k = 0; k < n; k++) {
        es_lux_eval_t e = {.seed = r->o->es.seed, .iter = r->iter,
                           .first = (uint32_t)(ne * (size_t)k / (size_t)n)};
        e.count = (uint32_t)(ne * (size_t)(k + 1) / (size_t)n) - e.first;
        lux_arg_t args[2] = {LUX_REF(r->policy), LUX_VAL(&e, sizeof e)};
        if ((rc = lux_call_opts(r->lx, &r->call, "es_evaluate", 2, args, 1, &r->refs[k])))
            return rc;
    }
    if ((rc = lux_get_many(r->lx, n, r->refs, r->vals, -1)) == 0) {
        double sum = 0.0;
        for (int k = 0; k < n && rc == 0; k++) {
            size_t count = ne * (size_t)(k + 1) / (size_t)n - ne * (size_t)k / (size_t)n;
            if (r->vals[k].size != count * (sizeof(double) + sizeof(uint64_t))) {
                rc = LUX_EINVAL;
                break;
            }
            const uint8_t *p = r->vals[k].data;
            for (size_t i = 0; i < count; i++) {
                double ret;
                uint64_t len;
                memcpy(&ret, p + i * sizeof ret, sizeof ret);
                memcpy(&len, p + count * sizeof ret + i * sizeof len, sizeof len);
                sum += ret;
                r->steps += len;
            }
        }
        *mean = sum / (double)ne;
        r->episodes += ne;
    } else {
        fprintf(stderr, "%s: %s\n", S_PROG, lux_errmsg());
    }
    lux_free(r->lx, n, r->refs);
    r->ntasks_done += n;
    return rc;
}

/* --- the driver ----------------------------------------------------------------------------- */

typedef struct {
    bool solved;            /* the evaluation mean reached the target */
    uint64_t iters;         /* iterations done */
    double eval_mean;       /* the last evaluation's mean return */
    uint64_t eval_iter;     /* ...done after this many iterations */
    uint64_t hash;          /* es_weights_hash of the final weights */
    double fill_seconds;    /* building the noise table */
    double noise_seconds;   /* building it, putting it in the store, reading it back */
    double train_seconds;   /* the iterations and evaluations */
    double seconds;         /* all of LUX_MAIN's work: noise table and training */
    double startup_seconds; /* lux_init: starting the embedded default */
    int killed;             /* workers --kill-workers killed */
} s_outcome_t;

static void
s_progress(const s_run_t *r, const es_stats_t *st, double eval, double rate, double trate,
           double elapsed)
{
    char ev[32] = "        -";
    if (isfinite(eval))
        snprintf(ev, sizeof ev, "%9.2f", eval);
    printf("iter %5" PRIu64 "  mean %9.2f  best %9.2f  eval %s  rollouts/s %7.0f  tasks/s %6.0f"
           "  elapsed %6.1fs\n",
           r->iter, st->ret_mean, st->ret_max, ev, rate, trate, elapsed);
    fflush(stdout);
}

static int
s_train(s_run_t *r, s_outcome_t *out)
{
    const es_opts_t *o = r->o;
    double t0 = es_opts_now();
    int rc;
    es_lux_killer_t *killer = NULL;
    out->eval_mean = -INFINITY;
    if ((rc = s_noise(r->lx, o, r->workers, &r->noise, &r->table, &out->fill_seconds))) {
        fprintf(stderr, "%s: the noise table: %s\n", S_PROG,
                rc == LUX_ENOMEM ? "out of memory" : lux_errmsg());
        return rc;
    }
    out->noise_seconds = es_opts_now() - t0;

    if (r->ps) {
        /* the server makes the initial weights from the seed, as es_new here would */
        es_lux_ps_init_t init;
        es_lux_ps_init(&init, &o->es, o->env->name, &r->pol, o->noise_len, &r->noise);
        lux_actor_opts_t ao = {.max_restarts = S_PS_RESTARTS,
                               .checkpoint_every = o->checkpoint_every};
        if ((rc = lux_actor_create(r->lx, "EsServer", 1,
                                   (lux_arg_t[]){LUX_VAL(&init, sizeof init)}, &ao,
                                   &r->server))) {
            fprintf(stderr, "%s: the parameter server: %s\n", S_PROG, lux_errmsg());
            return rc;
        }
    } else {
        float *theta0 = malloc(r->pol.n_params * sizeof *theta0);
        if (!theta0)
            return LUX_ENOMEM;
        es_policy_init_weights(&r->pol, theta0, o->es.seed);
        r->es = es_new(&o->es, r->pol.n_params, o->env->obs_dim, theta0, r->table,
                       o->noise_len);
        free(theta0);
        if (!r->es)
            return LUX_ENOMEM;
    }
    if (o->kill_workers && !(killer = es_lux_killer_start(0, S_KILL_MIN_MS, S_KILL_MAX_MS)))
        return LUX_ENOMEM;

    bool progress = o->progress > 0 || (o->progress < 0 && isatty(STDOUT_FILENO));
    if (progress) {
        char hex[33];
        printf("ES on %s, seed %" PRIu64 ": %d pairs per iteration in %d tasks on %d workers, "
               "%zu parameters; log in %s\n",
               o->env->gym_id, o->es.seed, o->es.population, r->ntasks, r->workers,
               r->pol.n_params, lux_dir(r->lx));
        if (r->ps)
            printf("the weights live in a parameter server, actor %s (EsServer)\n",
                   lux_actor_hex(&r->server, hex));
        fflush(stdout);
    }
    double t_train = es_opts_now(), last_print = t_train;
    uint64_t rollouts_since = 0;
    long tasks_since = r->ntasks_done;
    for (;;) {
        es_stats_t st;
        if ((rc = r->ps ? s_ps_iteration(r, &st) : s_iteration(r, &st)))
            break;
        out->iters = r->iter;
        es_lux_killer_progress(killer);
        rollouts_since += (uint64_t)o->es.population;
        bool evaluated = false;
        if (out->iters % (uint64_t)o->eval_every == 0 || st.ret_mean >= o->target) {
            if ((rc = s_evaluate(r, &out->eval_mean)))
                break;
            out->eval_iter = out->iters;
            out->solved = out->eval_mean >= o->target;
            evaluated = true;
        }
        double now = es_opts_now();
        bool stop = out->solved || (o->max_iters && out->iters >= (uint64_t)o->max_iters) ||
                    (o->max_seconds > 0 && now - t0 >= o->max_seconds);
        if (progress && (out->iters == 1 || evaluated || stop || now - last_print >= 0.25)) {
            double dt = now - last_print > 0 ? now - last_print : 1e-9;
            s_progress(r, &st, out->eval_mean, (double)rollouts_since / dt,
                       (double)(r->ntasks_done - tasks_since) / dt, now - s_t_start);
            last_print = now;
            rollouts_since = 0;
            tasks_since = r->ntasks_done;
        }
        if (stop)
            break;
    }
    /* a final evaluation when the last one is stale, so the reported mean
       always belongs to the final weights */
    if (rc == 0 && out->eval_iter != out->iters) {
        if ((rc = s_evaluate(r, &out->eval_mean)) == 0) {
            out->eval_iter = out->iters;
            out->solved = out->eval_mean >= o->target;
        }
    }
    out->train_seconds = es_opts_now() - t_train;
    out->killed = es_lux_killer_stop(&killer);
    if (rc == 0) {
        if (r->ps)
            rc = s_ps_hash(r, &out->hash);
        else
            out->hash = es_weights_hash(r->es);
    }
    out->seconds = es_opts_now() - t0;
    return rc;
}

static int
s_main(lux_t *lx, int argc, char **argv)
{
    if (!s_configured) { /* run by a host other than `lux run` */
        int rc = es_opts_parse(&s_opts, argc, argv, S_PROG, ES_OPTS_LUX);
        if (rc)
            return rc < 0 ? 0 : rc;
        s_t_start = es_opts_now();
    }
    const es_opts_t *o = &s_opts;
    double t_main = es_opts_now();
    s_run_t r = {.lx = lx, .o = o, .ps = o->ps};
    s_outcome_t out = {0};
    size_t pop = (size_t)o->es.population;
    int rc;

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    r.workers = s_cfg_workers > 0 ? s_cfg_workers : cores > 0 ? (int)cores : 1;
    /* One task per worker by default. The node manager splits the tasks
       that are ready among the idle workers evenly by count, once: more
       tasks than workers only add events, and if the client's batching
       sent them in two messages, the first worker to be idle would get all
       of the second (measured: 2 ms of imbalance per iteration with 32
       tasks, against 0.5-0.9 ms with 2 or 4). */
    r.ntasks = o->tasks ? o->tasks : r.workers;
    if ((size_t)r.ntasks > pop)
        r.ntasks = (int)pop;
    r.neval = o->eval_tasks ? o->eval_tasks : r.workers;
    if (r.neval > o->eval_episodes)
        r.neval = o->eval_episodes;
    if (o->kill_workers)
        r.call.max_attempts = S_KILL_ATTEMPTS;
    int nrefs = r.ntasks > r.neval ? r.ntasks : r.neval;
    r.refs = calloc((size_t)nrefs, sizeof *r.refs);
    r.vals = calloc((size_t)nrefs, sizeof *r.vals);
    r.took = calloc((size_t)nrefs, sizeof *r.took);
    r.ready = calloc((size_t)nrefs, sizeof *r.ready);
    r.tasks = calloc(pop, sizeof *r.tasks);
    r.results = calloc(pop, sizeof *r.results);
    /* balancing times each task from its submission, which says how fast
       its worker ran only when every task has a worker to itself; --ps
       splits its own way (its tasks push to the server) */
    if (!r.refs || !r.vals || !r.took || !r.ready || !r.tasks || !r.results ||
        es_split_init(&r.split, r.ntasks, pop, o->balance && !o->ps && r.ntasks <= r.workers) != 0) {
        rc = LUX_ENOMEM;
        goto done;
    }
    /* the board, when more than one task shares an iteration's rollouts;
       without it (it cannot be made) each task computes its own */
    if (o->board && !o->ps && r.ntasks > 1) {
        char why[160];
        if (!(r.board = es_board_new(pop, es_result_size(o->env->obs_dim), why, sizeof why)))
            fprintf(stderr, "%s: the tasks compute only their own rollouts: %s\n", S_PROG, why);
    }
    if ((rc = es_policy_init(&r.pol, o->env, o->n_hidden, o->hidden))) {
        fprintf(stderr, "%s: bad policy shape\n", S_PROG);
        goto done;
    }
    rc = s_train(&r, &out);
    out.startup_seconds = t_main - s_t_start;

done:
    if (rc == LUX_ENOMEM)
        fprintf(stderr, "%s: out of memory\n", S_PROG);
    char job[33];
    lux_job_id(lx, job);
    if (rc == 0 && o->report) {
        printf("\n%s seed %" PRIu64 ": %s after %" PRIu64 " iterations in %.2f s "
               "(+ %.2f s to start the cluster); mean return %.2f over %d episodes; "
               "%ld tasks on %d workers; weights %016" PRIx64 "\n",
               o->env->gym_id, o->es.seed, out.solved ? "solved" : "not solved", out.iters,
               out.seconds, out.startup_seconds, out.eval_mean, o->eval_episodes, r.ntasks_done,
               r.workers, out.hash);
        char hex[33] = "";
        if (r.ps)
            printf("--ps: the weights lived in the parameter server, actor %s; %" PRIu64
                   " results were pushed to it twice (by retried tasks)\n",
                   lux_actor_hex(&r.server, hex), r.duplicates);
        if (r.board)
            printf("the board: %" PRIu64 " of %" PRIu64 " rollouts computed by a task other than "
                   "their own, once it was done with its own (the results are the same bytes)\n",
                   r.helped, r.rollouts);
        if (o->kill_workers)
            printf("--kill-workers: %d worker processes killed (kill -9) while training%s\n",
                   out.killed, r.ps ? " (the server's among them)" : "");
        if (o->kill_server)
            printf("--kill-server: the server's process killed (kill -9) %d times while "
                   "training\n", r.server_kills);
        es_lux_report(stdout, lux_dir(lx), job, r.ntasks_done,
                      r.last_task[0] ? r.last_task : NULL, r.ps ? hex : NULL, 10000);
    }
    if (rc == 0 && o->json) {
        double tr = out.train_seconds > 0 ? out.train_seconds : 1e-9;
        printf("{\"env\":\"%s\",\"gym_id\":\"%s\",\"seed\":%" PRIu64 ",\"solved\":%s,"
               "\"seconds\":%.3f,\"iterations\":%" PRIu64 ",\"mean_return\":%.4f,"
               "\"weights_hash\":\"%016" PRIx64 "\",\"n_params\":%zu,\"workers\":%d,"
               "\"tasks\":%ld,\"tasks_per_iteration\":%d,\"rollouts\":%" PRIu64 ","
               "\"episodes\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"rollouts_per_second\":%.1f,"
               "\"tasks_per_second\":%.1f,\"noise_seconds\":%.3f,\"noise_fill_seconds\":%.3f,"
               "\"train_seconds\":%.4f,\"balanced\":%s,\"uneven_iterations\":%ld,"
               "\"board\":%s,\"helped_rollouts\":%" PRIu64 ","
               "\"startup_seconds\":%.3f,\"killed\":%d,\"ps\":%s,\"server_kills\":%d,"
               "\"duplicate_results\":%" PRIu64 ",\"job\":\"%s\",\"log\":\"%s\"}\n",
               o->env->name, o->env->gym_id, o->es.seed, out.solved ? "true" : "false",
               out.seconds, out.iters, out.eval_mean, out.hash, r.pol.n_params, r.workers,
               r.ntasks_done, r.ntasks, r.rollouts, r.episodes, r.steps,
               (double)r.rollouts / tr, (double)r.ntasks_done / tr, out.noise_seconds,
               out.fill_seconds, out.train_seconds, r.split.balance ? "true" : "false",
               r.split.uneven, r.board ? "true" : "false", r.helped, out.startup_seconds,
               out.killed, r.ps ? "true" : "false", r.server_kills, r.duplicates, job, lux_dir(lx));
    }
    fflush(stdout);
    if (r.have_policy)
        lux_free(lx, 1, &r.policy);
    if (r.table)
        lux_free(lx, 1, &r.noise);
    es_destroy(&r.es);
    free(r.refs);
    free(r.vals);
    free(r.took);
    free(r.ready);
    es_split_free(&r.split);
    es_board_destroy(&r.board);
    free(r.tasks);
    free(r.results);
    if (rc)
        return 3;
    return out.solved ? 0 : 1;
}
LUX_MAIN(s_main)

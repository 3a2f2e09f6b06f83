/*  es_opts - defaults and command line of an ES run; see es_opts.h.
    (Moved here from es_local.c so that es.so shares them.)
*/
#include "es_opts.h"
#include "es_noise.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The settings chosen for each environment (README explains them). */
static void
s_defaults(es_opts_t *o)
{
    es_config_default(&o->es);
    o->n_hidden = 1;
    o->noise_len = ES_NOISE_DEFAULT_LEN;
    o->noise_seed = ES_NOISE_DEFAULT_SEED;
    o->threads = 1;
    o->eval_episodes = o->env->solved_episodes;
    o->target = o->env->solved_return;
    o->report = true;
    o->balance = true;
    o->board = true;
    o->checkpoint_every = 32;
    o->progress = -1;
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

void
es_opts_usage(FILE *f, const char *prog, int which)
{
    fprintf(f, "usage: %s --env cartpole|pendulum [--seed N] [--json] [options]\n", prog);
    if (which & ES_OPTS_LOCAL)
        fprintf(f, "  --threads N        evaluate rollouts on N threads (default 1)\n");
    if (which & ES_OPTS_LUX)
        fprintf(f,
                "  --workers N        worker processes of the embedded default (default: one\n"
                "                     per core)\n"
                "  --kill-workers     kill -9 this run's workers at random while it trains\n"
                "                     (the final weights do not change)\n"
                "  --tasks N          rollout tasks per iteration (default: one per worker,\n"
                "                     at most the population)\n"
                "  --eval-tasks N     tasks per evaluation (default: one per worker)\n"
                "  --no-balance       split each iteration's rollouts evenly over its tasks\n"
                "                     (default: in proportion to how fast each task's\n"
                "                     worker ran lately; the final weights are the same)\n"
                "  --no-board         each task computes only its own rollouts (default: tasks\n"
                "                     on the driver's machine take each other's once theirs\n"
                "                     are done, through a shared board; the same weights)\n"
                "  --no-report        no closing report from the log\n"
                "  --ps               the parameter-server variant: the weights, Adam and the\n"
                "                     observation statistics live in an actor (EsServer);\n"
                "                     rollout tasks pull the weights from it and push their\n"
                "                     results, and it updates once an iteration's are in\n"
                "                     (the final weights are the same as without --ps)\n"
                "  --kill-server      with --ps: kill -9 the server's process (the PID it\n"
                "                     reports) in iterations 2, 4, 8, 16, ..., once the first\n"
                "                     rollout task is done; it restarts from its checkpoint\n"
                "                     and the log, and the final weights do not change\n"
                "  --checkpoint-every N\n"
                "                     with --ps: the server's calls between checkpoints\n"
                "                     (default 32; 0: none, a restart replays every call)\n");
    fprintf(f,
            "  --max-iters N      stop after N iterations\n"
            "  --max-seconds S    stop after S seconds (default 60 cartpole, 180 pendulum)\n"
            "  --target R         the evaluation mean that counts as solved (default: the\n"
            "                     environment's, 475 cartpole, -200 pendulum)\n"
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
            "  --progress, --quiet  force progress lines on or off\n",
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
s_parse_real(const char *s, double *out) /* any finite sign */
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v != v)
        return false;
    *out = v;
    return true;
}

static bool
s_parse_hidden(const char *s, es_opts_t *o)
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
    O_WORKERS,
    O_KILL,
    O_TASKS,
    O_EVAL_TASKS,
    O_NO_BALANCE,
    O_NO_BOARD,
    O_NO_REPORT,
    O_PS,
    O_KILL_SERVER,
    O_CHECKPOINT_EVERY,
    O_MAX_ITERS,
    O_MAX_SECONDS,
    O_TARGET,
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

/* Which program may use an option: 0 for every one. */
static int
s_owner(int c)
{
    switch (c) {
    case O_THREADS:
        return ES_OPTS_LOCAL;
    case O_WORKERS:
    case O_KILL:
    case O_TASKS:
    case O_EVAL_TASKS:
    case O_NO_BALANCE:
    case O_NO_BOARD:
    case O_NO_REPORT:
    case O_PS:
    case O_KILL_SERVER:
    case O_CHECKPOINT_EVERY:
        return ES_OPTS_LUX;
    default:
        return 0;
    }
}

/* The environment is needed first (it picks the defaults), so it is found
   in a first pass. */
int
es_opts_parse(es_opts_t *o, int argc, char **argv, const char *prog, int which)
{
    static const struct option opts[] = {
        {"env", required_argument, NULL, O_ENV},
        {"seed", required_argument, NULL, O_SEED},
        {"json", no_argument, NULL, O_JSON},
        {"threads", required_argument, NULL, O_THREADS},
        {"workers", required_argument, NULL, O_WORKERS},
        {"kill-workers", no_argument, NULL, O_KILL},
        {"tasks", required_argument, NULL, O_TASKS},
        {"eval-tasks", required_argument, NULL, O_EVAL_TASKS},
        {"no-balance", no_argument, NULL, O_NO_BALANCE},
        {"no-board", no_argument, NULL, O_NO_BOARD},
        {"no-report", no_argument, NULL, O_NO_REPORT},
        {"ps", no_argument, NULL, O_PS},
        {"kill-server", no_argument, NULL, O_KILL_SERVER},
        {"checkpoint-every", required_argument, NULL, O_CHECKPOINT_EVERY},
        {"max-iters", required_argument, NULL, O_MAX_ITERS},
        {"max-seconds", required_argument, NULL, O_MAX_SECONDS},
        {"target", required_argument, NULL, O_TARGET},
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
            es_opts_usage(stdout, prog, which);
            return -1;
        }
    }
    memset(o, 0, sizeof *o);
    o->env = es_env_find(env);
    if (!o->env) {
        fprintf(stderr, "%s: %s\n", prog,
                env ? "unknown environment (cartpole, pendulum)" : "--env is required");
        es_opts_usage(stderr, prog, which);
        return 2;
    }
    s_defaults(o);

    int c, li = -1;
    opterr = 0;
    optind = 0; /* a fresh scan: another parser may have run in this process */
    while ((c = getopt_long(argc, argv, "", opts, &li)) != -1) {
        const char *a = optarg;
        long v = 0;
        uint64_t u = 0;
        double d = 0;
        bool good = true;
        if (c != '?' && c != ':' && s_owner(c) && !(s_owner(c) & which)) {
            fprintf(stderr, "%s: --%s is an option of %s only\n", prog, opts[li].name,
                    s_owner(c) == ES_OPTS_LOCAL ? "es_local" : "es.so");
            return 2;
        }
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
        case O_WORKERS:
            if ((good = s_parse_int(a, 1, 256, &v)))
                o->workers = (int)v;
            break;
        case O_KILL:
            o->kill_workers = true;
            break;
        case O_TASKS:
            if ((good = s_parse_int(a, 1, 1 << 20, &v)))
                o->tasks = (int)v;
            break;
        case O_EVAL_TASKS:
            if ((good = s_parse_int(a, 1, 1 << 20, &v)))
                o->eval_tasks = (int)v;
            break;
        case O_NO_BALANCE:
            o->balance = false;
            break;
        case O_NO_BOARD:
            o->board = false;
            break;
        case O_NO_REPORT:
            o->report = false;
            break;
        case O_PS:
            o->ps = true;
            break;
        case O_KILL_SERVER:
            o->kill_server = true;
            break;
        case O_CHECKPOINT_EVERY:
            if ((good = s_parse_int(a, 0, 1 << 20, &v)))
                o->checkpoint_every = (int)v;
            break;
        case O_MAX_ITERS:
            good = s_parse_int(a, 0, 1L << 40, &o->max_iters);
            break;
        case O_MAX_SECONDS:
            good = s_parse_double(a, &o->max_seconds);
            break;
        case O_TARGET:
            good = s_parse_real(a, &o->target);
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
            fprintf(stderr, "%s: unknown option or missing value: %s\n", prog, argv[optind - 1]);
            es_opts_usage(stderr, prog, which);
            return 2;
        }
        if (!good) {
            fprintf(stderr, "%s: bad value for --%s: %s\n", prog, opts[li].name, a);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument: %s\n", prog, argv[optind]);
        return 2;
    }
    if (o->kill_server && !o->ps) {
        fprintf(stderr, "%s: --kill-server kills the parameter server of --ps; add --ps\n", prog);
        return 2;
    }
    return 0;
}

double
es_opts_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*  ps - a parameter server actor, as in the Ray paper: worker tasks pull
    the weights, compute a gradient on data of their own, and push it; the
    server applies pushes in the order its calls are logged.

        lux run examples/actors/ps.so [--workers N] [--steps N] [--kill]

    The model is a linear regression in D dimensions against hidden true
    weights (from a fixed seed), so progress is a number anyone can check:
    the distance of the server's weights to the true ones. The server
    checkpoints every 100 calls and may restart 3 times; --kill kills its
    process (kill -9) halfway, and the run still ends with the same kind of
    weights: the restart loads the checkpoint and re-applies the logged
    pushes after it. */
#include "lux.h"

#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define D 64
#define BATCH 32

typedef struct {
    float w[D];
    int64_t version; /* pushes applied */
    float lr;
} ps_t;

/* A small deterministic generator (splitmix64), and normal deviates. */
static uint64_t
s_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double
s_normal(uint64_t *s)
{
    double u = ((s_next(s) >> 11) + 0.5) / 9007199254740992.0;
    double v = ((s_next(s) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void
s_truth(float *w)
{
    uint64_t s = 42;
    for (int i = 0; i < D; i++)
        w[i] = (float) s_normal(&s);
}

/* --- the server -------------------------------------------------------------------------- */

static void *
Ps_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    ps_t *p = calloc(1, sizeof *p);
    if (!p || argv[0].size != sizeof(float)) {
        free(p);
        lux_raise(lx, "Ps takes a learning rate (float)");
        return NULL;
    }
    memcpy(&p->lr, argv[0].data, sizeof(float));
    return p;
}

static void
Ps_destroy(void *self)
{
    free(self);
}

static int
Ps_save(lux_t *lx, void *self)
{
    return lux_set(lx, 0, self, sizeof(ps_t));
}

static void *
Ps_load(lux_t *lx, const lux_val_t *state)
{
    if (state->size != sizeof(ps_t)) {
        lux_raise(lx, "Ps: a checkpoint of %zu bytes, not %zu", state->size, sizeof(ps_t));
        return NULL;
    }
    ps_t *p = malloc(sizeof *p);
    if (p)
        memcpy(p, state->data, sizeof *p);
    return p;
}
LUX_ACTOR(Ps, 1, Ps_create, Ps_destroy, Ps_save, Ps_load)

/* get(): the weights and the version, in place of a copy. */
static int
Ps_get(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    return lux_set(lx, 0, self, sizeof(ps_t));
}
LUX_METHOD(Ps, get, 0, 1)

/* push(gradient): w -= lr * gradient; returns the new version. */
static int
Ps_push(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    ps_t *p = self;
    if (argv[0].size != sizeof(float) * D)
        return lux_raise(lx, "Ps.push: a gradient of %zu bytes, not %zu", argv[0].size,
                         sizeof(float) * D);
    const float *g = argv[0].data;
    for (int i = 0; i < D; i++)
        p->w[i] -= p->lr * g[i];
    p->version++;
    return lux_set(lx, 0, &p->version, 8);
}
LUX_METHOD(Ps, push, 1, 1)

static int
Ps_pid(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    int64_t pid = getpid();
    return lux_set(lx, 0, &pid, 8);
}
LUX_METHOD(Ps, pid, 0, 1)

/* --- a worker ------------------------------------------------------------------------------ */

/* ps_worker(server, id, steps): pull, compute a gradient on a batch of
   its own data, push; returns its last batch's mean squared error. */
static int
ps_worker(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_actor_t ps;
    int64_t id, steps;
    float truth[D];
    double mse = 0;
    if (lux_actor_from(&argv[0], &ps) || argv[1].size != 8 || argv[2].size != 8)
        return lux_raise(lx, "ps_worker: (server, id, steps)");
    memcpy(&id, argv[1].data, 8);
    memcpy(&steps, argv[2].data, 8);
    s_truth(truth);
    uint64_t seed = 1000 + (uint64_t) id;
    lux_ref_t pushed = {{0}};
    for (int64_t k = 0; k < steps; k++) {
        lux_ref_t r;
        lux_val_t v;
        if (lux_actor_call(lx, &ps, "get", 0, NULL, 1, &r) || lux_get(lx, &r, &v, -1))
            return lux_raise(lx, "ps_worker %lld: pull: %s", (long long) id, lux_errmsg());
        const ps_t *p = v.data;
        float g[D] = {0};
        mse = 0;
        for (int b = 0; b < BATCH; b++) {
            double x[D], y = 0, pred = 0;
            for (int i = 0; i < D; i++) {
                x[i] = s_normal(&seed);
                y += x[i] * truth[i];
                pred += x[i] * p->w[i];
            }
            y += 0.01 * s_normal(&seed);
            double err = pred - y;
            mse += err * err / BATCH;
            for (int i = 0; i < D; i++)
                g[i] += (float) (2 * err * x[i] / BATCH);
        }
        lux_free(lx, 1, &r);
        if (k > 0)
            lux_free(lx, 1, &pushed);
        if (lux_actor_call(lx, &ps, "push", 1, (lux_arg_t[]) {LUX_VAL(g, sizeof g)}, 1, &pushed))
            return lux_raise(lx, "ps_worker %lld: push: %s", (long long) id, lux_errmsg());
    }
    lux_val_t v;
    if (steps > 0 && lux_get(lx, &pushed, &v, -1))
        return lux_raise(lx, "ps_worker %lld: push: %s", (long long) id, lux_errmsg());
    return lux_set(lx, 0, &mse, sizeof mse);
}
LUX_FUNCTION(ps_worker, 3, 1)

/* --- the driver ---------------------------------------------------------------------------- */

static double
s_distance(const ps_t *p)
{
    float truth[D];
    double d = 0;
    s_truth(truth);
    for (int i = 0; i < D; i++)
        d += (p->w[i] - truth[i]) * (p->w[i] - truth[i]);
    return sqrt(d);
}

static int
ps_main(lux_t *lx, int argc, char **argv)
{
    int64_t workers = 4, steps = 300;
    int kill_it = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
            workers = atoll(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoll(argv[++i]);
        else if (strcmp(argv[i], "--kill") == 0)
            kill_it = 1;
        else {
            fprintf(stderr, "usage: lux run ps.so [--workers N] [--steps N] [--kill]\n");
            return 2;
        }
    }
    if (workers < 1 || workers > 64 || steps < 1) {
        fprintf(stderr, "ps: --workers must be 1..64 and --steps at least 1\n");
        return 2;
    }
    float lr = 0.05f;
    lux_actor_t ps;
    lux_actor_opts_t o = {.name = "ps", .max_restarts = 3, .checkpoint_every = 100};
    if (lux_actor_create(lx, "Ps", 1, (lux_arg_t[]) {LUX_VAL(&lr, sizeof lr)}, &o, &ps)) {
        fprintf(stderr, "ps: %s\n", lux_errmsg());
        return 1;
    }
    lux_ref_t *done = calloc((size_t) workers, sizeof *done);
    for (int64_t k = 0; k < workers; k++)
        if (lux_call(lx, "ps_worker", 3,
                     (lux_arg_t[]) {LUX_VAL(&ps, sizeof ps), LUX_VAL(&k, 8), LUX_VAL(&steps, 8)}, 1,
                     &done[k])) {
            fprintf(stderr, "ps: %s\n", lux_errmsg());
            return 1;
        }
    int64_t target = workers * steps, killed_at = -1;
    for (;;) {
        lux_ref_t r;
        lux_val_t v;
        if (lux_actor_call(lx, &ps, "get", 0, NULL, 1, &r) || lux_get(lx, &r, &v, -1)) {
            fprintf(stderr, "ps: %s\n", lux_errmsg());
            return 1;
        }
        const ps_t *p = v.data;
        int64_t version = p->version;
        /* Until the kill, poll every millisecond (printing only the first
           and the last): at 100 ms the workers of a quiet machine pushed
           from below half to the end between two polls, and no kill came. */
        bool hurry = kill_it && killed_at < 0 && version < target / 2;
        if (!hurry || version == 0) {
            printf("version %6lld of %lld  distance to the true weights %.4f\n",
                   (long long) version, (long long) target, s_distance(p));
            fflush(stdout);
        }
        lux_free(lx, 1, &r);
        if (version >= target)
            break;
        if (kill_it && killed_at < 0 && version >= target / 2) {
            int64_t pid = 0;
            if (lux_actor_call(lx, &ps, "pid", 0, NULL, 1, &r) == 0 && lux_get(lx, &r, &v, -1) == 0)
                memcpy(&pid, v.data, 8);
            if (pid > 0 && kill((pid_t) pid, SIGKILL) == 0) {
                killed_at = version;
                printf("killed the server's process %lld (kill -9) at version %lld\n",
                       (long long) pid, (long long) version);
            }
        }
        usleep(hurry ? 1000 : 100000);
    }
    double worst = 0;
    for (int64_t k = 0; k < workers; k++) {
        lux_val_t v;
        double mse;
        if (lux_get(lx, &done[k], &v, -1)) {
            fprintf(stderr, "ps: worker %lld: %s\n", (long long) k, lux_errmsg());
            return 1;
        }
        memcpy(&mse, v.data, sizeof mse);
        if (mse > worst)
            worst = mse;
    }
    free(done);
    printf("%lld workers, %lld pushes each: the workers' last batch error is at most %.5f\n",
           (long long) workers, (long long) steps, worst);
    printf("every call is in the log: lux sql --dir %s \"SELECT method, count(*) FROM "
           "actor_calls GROUP BY method\"\n",
           lux_dir(lx));
    return 0;
}
LUX_MAIN(ps_main)

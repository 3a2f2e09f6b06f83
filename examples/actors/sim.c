/*  sim - simulators as actors: each actor holds a CartPole-v1 environment
    (examples/es, written in C after Gymnasium's equations) and steps it on
    request; the driver runs a fixed controller against several at once,
    one step of each per round, the way an RL learner drives its
    simulators.

        lux run examples/actors/sim.so [--sims N] [--episodes N]

    Each simulator may restart twice and checkpoints every 200 steps: its
    state is the environment's bytes, so a restart loads them and
    re-applies the steps logged after. */
#include "lux.h"
#include "env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double ret;     /* this episode's return so far */
    int64_t episodes;
    unsigned char st[]; /* the environment's state blob */
} sim_t;

static const es_env_t *
s_env(void)
{
    return &es_env_cartpole;
}

static void *
Sim_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    sim_t *s = calloc(1, sizeof *s + s_env()->state_size);
    uint64_t seed;
    if (!s || argv[0].size != 8) {
        free(s);
        lux_raise(lx, "Sim takes a seed (uint64)");
        return NULL;
    }
    memcpy(&seed, argv[0].data, 8);
    s_env()->reset(s->st, seed);
    return s;
}

static void
Sim_destroy(void *self)
{
    free(self);
}

static int
Sim_save(lux_t *lx, void *self)
{
    return lux_set(lx, 0, self, sizeof(sim_t) + s_env()->state_size);
}

static void *
Sim_load(lux_t *lx, const lux_val_t *state)
{
    size_t n = sizeof(sim_t) + s_env()->state_size;
    if (state->size != n) {
        lux_raise(lx, "Sim: a checkpoint of %zu bytes, not %zu", state->size, n);
        return NULL;
    }
    sim_t *s = malloc(n);
    if (s)
        memcpy(s, state->data, n);
    return s;
}
LUX_ACTOR(Sim, 1, Sim_create, Sim_destroy, Sim_save, Sim_load)

/* reset(seed): a new episode; returns the observation. */
static int
Sim_reset(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    sim_t *s = self;
    uint64_t seed;
    double obs[16];
    if (argv[0].size != 8)
        return lux_raise(lx, "Sim.reset takes a seed (uint64)");
    memcpy(&seed, argv[0].data, 8);
    s_env()->reset(s->st, seed);
    s->ret = 0;
    s_env()->observe(s->st, obs);
    return lux_set(lx, 0, obs, sizeof(double) * (size_t) s_env()->obs_dim);
}
LUX_METHOD(Sim, reset, 1, 1)

/* step(action): returns the observation, then the reward, the episode's
   return so far and whether it ended (as doubles). */
static int
Sim_step(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    sim_t *s = self;
    int64_t action;
    double out[16 + 3], reward = 0;
    int d = s_env()->obs_dim;
    if (argv[0].size != 8)
        return lux_raise(lx, "Sim.step takes an action (int64)");
    memcpy(&action, argv[0].data, 8);
    if (action < 0 || action >= s_env()->act_dim)
        return lux_raise(lx, "Sim.step: action %lld is not one of 0..%d", (long long) action,
                         s_env()->act_dim - 1);
    es_action_t a = {.index = (int) action};
    es_env_status_t st = s_env()->step(s->st, &a, &reward);
    s->ret += reward;
    if (st != ES_ENV_RUNNING)
        s->episodes++;
    s_env()->observe(s->st, out);
    out[d] = reward;
    out[d + 1] = s->ret;
    out[d + 2] = st != ES_ENV_RUNNING;
    return lux_set(lx, 0, out, sizeof(double) * (size_t) (d + 3));
}
LUX_METHOD(Sim, step, 1, 1)

/* The controller: push the cart the way the pole falls (angle and its
   rate, with a little of the cart's own motion). */
static int64_t
s_policy(const double *obs)
{
    return obs[2] + 0.5 * obs[3] + 0.05 * obs[1] > 0 ? 1 : 0;
}

static int
sim_main(lux_t *lx, int argc, char **argv)
{
    int nsims = 4, episodes = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sims") == 0 && i + 1 < argc)
            nsims = atoi(argv[++i]);
        else if (strcmp(argv[i], "--episodes") == 0 && i + 1 < argc)
            episodes = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: lux run sim.so [--sims N] [--episodes N]\n");
            return 2;
        }
    }
    if (nsims < 1 || nsims > 64 || episodes < 1) {
        fprintf(stderr, "sim: --sims must be 1..64 and --episodes at least 1\n");
        return 2;
    }
    int d = s_env()->obs_dim;
    lux_actor_t sims[64];
    lux_actor_opts_t o = {.max_restarts = 2, .checkpoint_every = 200};
    for (int k = 0; k < nsims; k++) {
        uint64_t seed = 100 + (uint64_t) k;
        if (lux_actor_create(lx, "Sim", 1, (lux_arg_t[]) {LUX_VAL(&seed, 8)}, &o, &sims[k])) {
            fprintf(stderr, "sim: %s\n", lux_errmsg());
            return 1;
        }
    }
    double total = 0;
    int64_t steps = 0;
    for (int e = 0; e < episodes; e++) {
        double obs[64][16], ret[64] = {0};
        int live[64], nlive = nsims;
        lux_ref_t r[64];
        lux_val_t v[64];
        for (int k = 0; k < nsims; k++) {
            uint64_t seed = (uint64_t) (1000 * e + k);
            lux_actor_call(lx, &sims[k], "reset", 1, (lux_arg_t[]) {LUX_VAL(&seed, 8)}, 1, &r[k]);
        }
        if (lux_get_many(lx, nsims, r, v, -1)) {
            fprintf(stderr, "sim: %s\n", lux_errmsg());
            return 1;
        }
        for (int k = 0; k < nsims; k++) {
            memcpy(obs[k], v[k].data, sizeof(double) * (size_t) d);
            live[k] = 1;
        }
        lux_free(lx, nsims, r);
        while (nlive > 0) {
            /* one step of every simulator still running, all at once */
            int idx[64], n = 0;
            for (int k = 0; k < nsims; k++) {
                if (!live[k])
                    continue;
                int64_t action = s_policy(obs[k]);
                lux_actor_call(lx, &sims[k], "step", 1, (lux_arg_t[]) {LUX_VAL(&action, 8)}, 1,
                               &r[n]);
                idx[n++] = k;
            }
            if (lux_get_many(lx, n, r, v, -1)) {
                fprintf(stderr, "sim: %s\n", lux_errmsg());
                return 1;
            }
            for (int i = 0; i < n; i++) {
                const double *out = v[i].data;
                int k = idx[i];
                memcpy(obs[k], out, sizeof(double) * (size_t) d);
                ret[k] = out[d + 1];
                if (out[d + 2] != 0) {
                    live[k] = 0;
                    nlive--;
                }
            }
            lux_free(lx, n, r);
            steps += n;
        }
        double mean = 0;
        for (int k = 0; k < nsims; k++)
            mean += ret[k] / nsims;
        total += mean;
        printf("episode %d: mean return %.1f over %d simulators (CartPole-v1, at most 500)\n",
               e + 1, mean, nsims);
    }
    printf("%lld steps in all; mean return %.1f\n", (long long) steps, total / episodes);
    printf("every step is in the log: lux sql --dir %s \"SELECT actor_id, count(*) FROM "
           "actor_calls GROUP BY actor_id\"\n",
           lux_dir(lx));
    return 0;
}
LUX_MAIN(sim_main)

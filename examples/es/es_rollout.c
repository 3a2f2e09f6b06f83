/*  es_rollout - episodes and antithetic rollouts; see es_rollout.h. */
#include "es_rollout.h"
#include "es_obstat.h"
#include "es_rng.h"

#include "lux.h"

#include <stdlib.h>
#include <string.h>

size_t
es_result_size(int obs_dim)
{
    return sizeof(es_result_t) + 2 * (size_t)obs_dim * sizeof(double);
}

es_task_t
es_task_make(uint64_t seed, uint64_t iter, uint32_t rollout, size_t noise_len, size_t n_params,
             bool shared_env_seed)
{
    es_task_t t = {.iter = iter, .rollout = rollout};
    es_rng_t r;
    es_rng_seed(&r, es_derive(seed, ES_DOMAIN_NOISE_IDX, iter, rollout));
    t.noise_idx = noise_len > n_params ? es_rng_below(&r, noise_len - n_params + 1) : 0;
    t.env_seed = es_derive(seed, ES_DOMAIN_ENV, iter, shared_env_seed ? 0 : rollout);
    return t;
}

uint64_t
es_eval_seed(uint64_t seed, uint64_t iter, uint32_t k)
{
    return es_derive(seed, ES_DOMAIN_EVAL, iter, k);
}

int
es_episode(const es_ctx_t *ctx, const float *w, uint64_t seed, double *ret, uint64_t *steps,
           double *obs_sums)
{
    const es_env_t *env = ctx->env;
    int dim = env->obs_dim;
    void *st = malloc(env->state_size);
    if (!st)
        return LUX_ENOMEM;
    double obs[ES_POLICY_MAX_WIDTH], u[ES_POLICY_MAX_WIDTH];
    float x[ES_POLICY_MAX_WIDTH];
    es_action_t a = {.index = 0, .u = u};
    double total = 0.0;
    uint64_t n = 0;

    env->reset(st, seed);
    for (;;) {
        env->observe(st, obs);
        if (obs_sums)
            for (int i = 0; i < dim; i++) {
                obs_sums[i] += obs[i];
                obs_sums[dim + i] += obs[i] * obs[i];
            }
        es_obs_normalise(dim, obs, ctx->obs_mean, ctx->obs_std, x);
        es_policy_act(ctx->policy, w, x, &a.index, u);
        double r;
        es_env_status_t done = env->step(st, &a, &r);
        total += r;
        n++;
        if (done)
            break;
    }
    free(st);
    *ret = total;
    *steps = n;
    return 0;
}

int
es_rollout(const es_ctx_t *ctx, const es_task_t *task, es_result_t *out)
{
    size_t n = ctx->policy->n_params;
    int dim = ctx->env->obs_dim;
    if (ctx->episodes < 1 || ctx->policy->dims[0] != dim || n > ctx->noise_len ||
        task->noise_idx > ctx->noise_len - n)
        return LUX_EINVAL;
    float *w = malloc(n * sizeof *w);
    double *sums = calloc(2 * (size_t)dim, sizeof *sums);
    if (!w || !sums) {
        free(w);
        free(sums);
        return LUX_ENOMEM;
    }
    const float *eps = ctx->noise + task->noise_idx;
    double ret[2];
    uint64_t steps[2], count = 0;
    int rc = 0;
    for (int side = 0; side < 2 && rc == 0; side++) {
        float s =
            side == 0 ? ctx->sigma : -ctx->sigma; /* theta - sigma eps == theta + (-sigma) eps */
        for (size_t j = 0; j < n; j++)
            w[j] = ctx->theta[j] + s * eps[j];
        double total = 0.0;
        steps[side] = 0;
        for (int k = 0; k < ctx->episodes && rc == 0; k++) {
            double r;
            uint64_t len;
            rc = es_episode(ctx, w, es_derive(task->env_seed, ES_DOMAIN_EPISODE, (uint64_t)k, 0),
                            &r, &len, sums);
            total += r;
            steps[side] += len;
        }
        ret[side] = total / ctx->episodes;
        count += steps[side];
    }
    if (rc == 0) {
        out->iter = task->iter;
        out->rollout = task->rollout;
        out->obs_dim = (uint32_t)dim;
        out->noise_idx = task->noise_idx;
        memcpy(out->ret, ret, sizeof ret);
        memcpy(out->steps, steps, sizeof steps);
        out->obs_count = (double)count;
        memcpy(out->obs, sums, 2 * (size_t)dim * sizeof *sums);
    }
    free(w);
    free(sums);
    return rc;
}

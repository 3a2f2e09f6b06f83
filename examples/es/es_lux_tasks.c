/*  es_lux_tasks - the remote functions of es.so (es_rollouts, es_evaluate)
    and the policy object they read; see es_lux.h.

    A worker keeps nothing between tasks but the mapping of the driver's
    board (es_lux_board.c): each task finds its environment and policy
    shape in the policy object's header, reads the weights and the noise
    table where they lie (the noise table always in the store; the policy
    object, a few KB, travels inline in the task message and is copied once
    when its floats are not aligned), and writes its results straight into
    the return value with lux_set_alloc, through the board when the policy
    names one: the same bytes, sooner when other tasks help.
*/
#include "es_lux.h"
#include "es_noise.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the policy object --------------------------------------------------------------- */

size_t
es_lux_policy_size(uint32_t n_params, uint32_t obs_dim)
{
    return sizeof(es_lux_policy_t) + ((size_t)n_params + 2 * (size_t)obs_dim) * sizeof(float);
}

void
es_lux_policy_write(void *buf, const char *env, const es_policy_t *pol, int episodes,
                    float sigma, uint64_t iter, size_t noise_len, const float *theta,
                    int obs_dim, const float *obs_mean, const float *obs_std)
{
    es_lux_policy_t h;
    memset(&h, 0, sizeof h);
    h.magic = ES_LUX_MAGIC;
    h.n_params = (uint32_t)pol->n_params;
    snprintf(h.env, sizeof h.env, "%s", env);
    h.n_hidden = pol->n_hidden;
    for (int i = 0; i < pol->n_hidden; i++)
        h.hidden[i] = pol->dims[i + 1];
    h.episodes = episodes;
    h.sigma = sigma;
    h.obs_dim = obs_mean ? (uint32_t)obs_dim : 0;
    h.iter = iter;
    h.noise_len = noise_len;
    uint8_t *p = buf;
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    memcpy(p, theta, pol->n_params * sizeof(float));
    p += pol->n_params * sizeof(float);
    if (obs_mean) {
        memcpy(p, obs_mean, (size_t)obs_dim * sizeof(float));
        memcpy(p + (size_t)obs_dim * sizeof(float), obs_std, (size_t)obs_dim * sizeof(float));
    }
}

int
es_lux_view(es_lux_view_t *v, const void *p, size_t n, const float *noise, size_t noise_len,
            char *why, size_t len)
{
    memset(v, 0, sizeof *v);
    if (n < sizeof v->h) {
        snprintf(why, len, "policy object of %zu bytes: too short", n);
        return LUX_EINVAL;
    }
    memcpy(&v->h, p, sizeof v->h);
    v->h.env[sizeof v->h.env - 1] = '\0';
    if (v->h.magic != ES_LUX_MAGIC || n != es_lux_policy_size(v->h.n_params, v->h.obs_dim)) {
        snprintf(why, len, "not a policy object (magic %08x, %zu bytes)", v->h.magic, n);
        return LUX_EINVAL;
    }
    const es_env_t *env = es_env_find(v->h.env);
    if (!env) {
        snprintf(why, len, "unknown environment '%s'", v->h.env);
        return LUX_EINVAL;
    }
    if (v->h.n_hidden < 0 || v->h.n_hidden > ES_POLICY_MAX_HIDDEN ||
        es_policy_init(&v->policy, env, v->h.n_hidden, v->h.hidden) != 0 ||
        v->policy.n_params != v->h.n_params || v->h.episodes < 1 ||
        (v->h.obs_dim && v->h.obs_dim != (uint32_t)env->obs_dim)) {
        snprintf(why, len, "policy object of a shape %s cannot have", env->gym_id);
        return LUX_EINVAL;
    }
    if (noise && v->h.noise_len != noise_len) {
        snprintf(why, len, "the noise table has %zu floats, the policy expects %llu", noise_len,
                 (unsigned long long)v->h.noise_len);
        return LUX_EINVAL;
    }
    const float *f = (const float *)((const uint8_t *)p + sizeof v->h);
    if ((uintptr_t)f % _Alignof(float)) {
        /* an inline value sits where its message put it */
        size_t nf = (n - sizeof v->h) / sizeof(float);
        if (!(v->own = malloc(nf * sizeof(float)))) {
            snprintf(why, len, "out of memory");
            return LUX_ENOMEM;
        }
        memcpy(v->own, f, nf * sizeof(float));
        f = v->own;
    }
    v->ctx = (es_ctx_t){
        .env = env,
        .policy = &v->policy,
        .theta = f,
        .obs_mean = v->h.obs_dim ? f + v->h.n_params : NULL,
        .obs_std = v->h.obs_dim ? f + v->h.n_params + v->h.obs_dim : NULL,
        .noise = noise,
        .noise_len = noise_len,
        .sigma = v->h.sigma,
        .episodes = v->h.episodes,
    };
    return 0;
}

void
es_lux_view_free(es_lux_view_t *v)
{
    free(v->own);
    v->own = NULL;
}

/* --- es_rollouts ------------------------------------------------------------------------ */

static int
es_rollouts(lux_t *lx, int argc, const lux_val_t *argv)
{
    const lux_val_t *noise = &argv[0], *pol = &argv[1], *tasks = &argv[2];
    char why[256];
    es_lux_view_t v;
    if (noise->size % sizeof(float) || (uintptr_t)noise->data % _Alignof(float))
        return lux_raise(lx, "es_rollouts: the noise table (%zu bytes) is not a float array",
                         noise->size);
    if (tasks->size % sizeof(es_task_t))
        return lux_raise(lx, "es_rollouts: %zu bytes of tasks", tasks->size);
    int rc = es_lux_view(&v, pol->data, pol->size, noise->data, noise->size / sizeof(float), why,
                         sizeof why);
    if (rc)
        return lux_raise(lx, "es_rollouts: %s", why);
    size_t count = tasks->size / sizeof(es_task_t), rs = es_result_size(v.ctx.env->obs_dim);
    uint8_t *out = count ? lux_set_alloc(lx, 0, count * rs) : NULL;
    if (count && !out) {
        es_lux_view_free(&v);
        return lux_raise(lx, "es_rollouts: no room for %zu results: %s", count, lux_errmsg());
    }
    /* read in place: a task's arguments are aligned to 16 bytes (lux.h) */
    const es_task_t *t = tasks->data;
    for (size_t i = 0; i < count; i++)
        if (t[i].iter != v.h.iter) {
            es_lux_view_free(&v);
            return lux_raise(lx, "es_rollouts: a task of iteration %llu with the policy of %llu",
                             (unsigned long long)t[i].iter, (unsigned long long)v.h.iter);
        }
    /* results are 8-byte multiples and the return value is aligned
       (malloc'd inline, or a 64-byte block of the store) */
    size_t failed = 0;
    rc = count ? es_board_rollouts(&v.h, &v.ctx, t, count, out, rs, &failed) : 0;
    if (rc) {
        es_lux_view_free(&v);
        return lux_raise(lx, "es_rollouts: rollout %u of iteration %llu: %s", t[failed].rollout,
                         (unsigned long long)t[failed].iter, lux_strerror(rc));
    }
    es_lux_view_free(&v);
    return 0;
}
LUX_FUNCTION(es_rollouts, 3, 1)

/* --- es_evaluate ------------------------------------------------------------------------ */

static int
es_evaluate(lux_t *lx, int argc, const lux_val_t *argv)
{
    char why[256];
    es_lux_view_t v;
    es_lux_eval_t e;
    if (argv[1].size != sizeof e)
        return lux_raise(lx, "es_evaluate: a spec of %zu bytes", argv[1].size);
    memcpy(&e, argv[1].data, sizeof e);
    int rc = es_lux_view(&v, argv[0].data, argv[0].size, NULL, 0, why, sizeof why);
    if (rc)
        return lux_raise(lx, "es_evaluate: %s", why);
    size_t n = e.count;
    uint8_t *out = lux_set_alloc(lx, 0, n * (sizeof(double) + sizeof(uint64_t)));
    if (n && !out) {
        es_lux_view_free(&v);
        return lux_raise(lx, "es_evaluate: no room for %zu returns: %s", n, lux_errmsg());
    }
    for (size_t k = 0; k < n && rc == 0; k++) {
        double ret;
        uint64_t steps;
        rc = es_episode(&v.ctx, v.ctx.theta, es_eval_seed(e.seed, e.iter, e.first + (uint32_t)k),
                        &ret, &steps, NULL);
        memcpy(out + k * sizeof ret, &ret, sizeof ret);
        memcpy(out + n * sizeof ret + k * sizeof steps, &steps, sizeof steps);
    }
    es_lux_view_free(&v);
    if (rc)
        return lux_raise(lx, "es_evaluate: %s", lux_strerror(rc));
    return 0;
}
LUX_FUNCTION(es_evaluate, 2, 1)

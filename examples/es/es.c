/*  es - the ES driver: tasks, the update, and its bookkeeping. See es.h
    for the algorithm and the determinism argument.
*/
#include "es.h"
#include "es_adam.h"
#include "es_noise.h"
#include "es_obstat.h"

#include "lux.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct es {
    es_config_t cfg;     /* settings, copied */
    size_t n_params;     /* length of theta */
    int obs_dim;         /* observation length, 0 for none */
    uint64_t iter;       /* updates done */
    float *theta;        /* current weights, owned */
    es_adam_t *adam;     /* optimiser state, owned */
    es_obstat_t *obstat; /* running observation statistics, NULL without */
    float *obs_mean;     /* frozen mean for this iteration, obs_dim, NULL without */
    float *obs_std;      /* frozen std for this iteration, obs_dim, NULL without */
    const float *noise;  /* the noise table, borrowed */
    size_t noise_len;    /* its length in floats */
    double *grad;        /* scratch: n_params */
    double *rets;        /* scratch: 2 population returns */
    double *ranks;       /* scratch: their centered ranks */
    es_result_t **slot;  /* scratch: results by rollout number */
    char errmsg[256];    /* last failure */
};

/* --- centered ranks ------------------------------------------------------------ */

/* A value and where it was. qsort orders them by value, then position: a
   total order, so the outcome does not depend on qsort's algorithm. */
typedef struct {
    double v; /* the value */
    size_t i; /* its position */
} s_keyed_t;

static int
s_cmp_keyed(const void *pa, const void *pb)
{
    const s_keyed_t *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

int
es_centered_ranks(const double *x, size_t n, double *out)
{
    if (n == 0)
        return 0;
    if (n == 1) {
        out[0] = 0.0;
        return 0;
    }
    s_keyed_t *k = malloc(n * sizeof *k);
    if (!k)
        return LUX_ENOMEM;
    for (size_t i = 0; i < n; i++)
        k[i] = (s_keyed_t){x[i], i};
    qsort(k, n, sizeof *k, s_cmp_keyed);
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo + 1;
        while (hi < n && k[hi].v == k[lo].v)
            hi++;
        /* ranks lo..hi-1 are tied: each gets their mean */
        double r = 0.5 * (double)(lo + hi - 1) / (double)(n - 1) - 0.5;
        for (size_t j = lo; j < hi; j++)
            out[k[j].i] = r;
        lo = hi;
    }
    free(k);
    return 0;
}

/* --- construction ------------------------------------------------------------------ */

void
es_config_default(es_config_t *cfg)
{
    *cfg = (es_config_t){
        .seed = 0,
        .population = 32,
        .episodes = 1,
        .sigma = 0.05,
        .lr = 0.01,
        .beta1 = 0.9,
        .beta2 = 0.999,
        .adam_eps = 1e-8,
        .l2 = 0.0,
        .obs_norm = true,
        .shared_env_seed = false,
    };
}

es_t *
es_new(const es_config_t *cfg, size_t n_params, int obs_dim, const float *theta0,
       const float *noise, size_t noise_len)
{
    if (cfg->population < 1 || cfg->episodes < 1 || n_params == 0 || obs_dim < 0 || !noise ||
        noise_len < n_params)
        return NULL;
    es_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cfg = *cfg;
    self->n_params = n_params;
    self->obs_dim = obs_dim;
    self->noise = noise;
    self->noise_len = noise_len;
    size_t pop = (size_t)cfg->population;
    self->theta = malloc(n_params * sizeof(float));
    self->adam = es_adam_new(n_params, cfg->lr, cfg->beta1, cfg->beta2, cfg->adam_eps);
    self->grad = malloc(n_params * sizeof(double));
    self->rets = malloc(2 * pop * sizeof(double));
    self->ranks = malloc(2 * pop * sizeof(double));
    self->slot = malloc(pop * sizeof(es_result_t *));
    bool ok = self->theta && self->adam && self->grad && self->rets && self->ranks && self->slot;
    if (ok && cfg->obs_norm && obs_dim > 0) {
        self->obstat = es_obstat_new(obs_dim);
        self->obs_mean = malloc((size_t)obs_dim * sizeof(float));
        self->obs_std = malloc((size_t)obs_dim * sizeof(float));
        ok = self->obstat && self->obs_mean && self->obs_std;
        if (ok)
            es_obstat_get(self->obstat, self->obs_mean, self->obs_std);
    }
    if (!ok) {
        es_destroy(&self);
        return NULL;
    }
    memcpy(self->theta, theta0, n_params * sizeof(float));
    return self;
}

void
es_destroy(es_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    es_t *self = *self_p;
    free(self->theta);
    es_adam_destroy(&self->adam);
    es_obstat_destroy(&self->obstat);
    free(self->obs_mean);
    free(self->obs_std);
    free(self->grad);
    free(self->rets);
    free(self->ranks);
    free(self->slot);
    free(self);
    *self_p = NULL;
}

/* --- one iteration --------------------------------------------------------------- */

es_task_t
es_task(const es_t *self, uint32_t rollout)
{
    return es_task_make(self->cfg.seed, self->iter, rollout, self->noise_len, self->n_params,
                        self->cfg.shared_env_seed);
}

void
es_ctx(const es_t *self, const es_env_t *env, const es_policy_t *policy, es_ctx_t *ctx)
{
    *ctx = (es_ctx_t){
        .env = env,
        .policy = policy,
        .theta = self->theta,
        .obs_mean = self->obs_mean,
        .obs_std = self->obs_std,
        .noise = self->noise,
        .noise_len = self->noise_len,
        .sigma = (float)self->cfg.sigma,
        .episodes = self->cfg.episodes,
    };
}

static int
s_fail(es_t *self, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(self->errmsg, sizeof self->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

/* Check the results and put them in self->slot by rollout number. */
static int
s_collect(es_t *self, es_result_t *const *results, size_t n)
{
    size_t pop = (size_t)self->cfg.population;
    if (n != pop)
        return s_fail(self, LUX_EINVAL, "iteration %llu: %zu results for a population of %zu",
                      (unsigned long long)self->iter, n, pop);
    memset(self->slot, 0, pop * sizeof *self->slot);
    for (size_t i = 0; i < n; i++) {
        es_result_t *r = results[i];
        if (!r)
            return s_fail(self, LUX_EINVAL, "result %zu is missing", i);
        if (r->iter != self->iter)
            return s_fail(self, LUX_EINVAL, "rollout %u: from iteration %llu, expected %llu",
                          r->rollout, (unsigned long long)r->iter, (unsigned long long)self->iter);
        if (r->rollout >= pop)
            return s_fail(self, LUX_EINVAL, "rollout %u: beyond the population of %zu", r->rollout,
                          pop);
        if (self->slot[r->rollout])
            return s_fail(self, LUX_EINVAL, "rollout %u: reported twice", r->rollout);
        if (r->obs_dim != (uint32_t)self->obs_dim)
            return s_fail(self, LUX_EINVAL, "rollout %u: %u observation values, expected %d",
                          r->rollout, r->obs_dim, self->obs_dim);
        if (r->noise_idx > self->noise_len - self->n_params)
            return s_fail(self, LUX_EINVAL, "rollout %u: noise index %llu outside the table",
                          r->rollout, (unsigned long long)r->noise_idx);
        if (!isfinite(r->ret[0]) || !isfinite(r->ret[1]))
            return s_fail(self, LUX_EINVAL, "rollout %u: return %g / %g is not finite", r->rollout,
                          r->ret[0], r->ret[1]);
        self->slot[r->rollout] = r;
    }
    return 0; /* n == pop distinct numbers below pop: every slot is filled */
}

int
es_update(es_t *self, es_result_t *const *results, size_t n, es_stats_t *stats)
{
    int rc = s_collect(self, results, n);
    if (rc)
        return rc;
    size_t pop = n, np = self->n_params;
    es_stats_t st = {.iter = self->iter, .ret_min = INFINITY, .ret_max = -INFINITY};
    for (size_t i = 0; i < pop; i++)
        for (int s = 0; s < 2; s++) {
            double v = self->slot[i]->ret[s];
            self->rets[2 * i + s] = v;
            st.ret_mean += v;
            st.ret_min = v < st.ret_min ? v : st.ret_min;
            st.ret_max = v > st.ret_max ? v : st.ret_max;
            st.steps += self->slot[i]->steps[s];
        }
    st.ret_mean /= (double)(2 * pop);
    if (es_centered_ranks(self->rets, 2 * pop, self->ranks))
        return s_fail(self, LUX_ENOMEM, "iteration %llu: out of memory ranking returns",
                      (unsigned long long)self->iter);

    /* g = sum_r (rank+ - rank-) eps_r / (2 pop), summed in rollout order */
    memset(self->grad, 0, np * sizeof(double));
    for (size_t i = 0; i < pop; i++) {
        double w = self->ranks[2 * i] - self->ranks[2 * i + 1];
        if (w == 0.0)
            continue;
        const float *eps = self->noise + self->slot[i]->noise_idx;
        for (size_t j = 0; j < np; j++)
            self->grad[j] += w * (double)eps[j];
    }
    double gn = 0.0;
    for (size_t j = 0; j < np; j++) {
        self->grad[j] /= (double)(2 * pop);
        gn += self->grad[j] * self->grad[j];
        /* Adam minimises: ascend g, decay theta */
        self->grad[j] = -self->grad[j] + self->cfg.l2 * (double)self->theta[j];
    }
    st.grad_norm = sqrt(gn);
    es_adam_step(self->adam, self->theta, self->grad);
    double tn = 0.0;
    for (size_t j = 0; j < np; j++)
        tn += (double)self->theta[j] * self->theta[j];
    st.theta_norm = sqrt(tn);

    if (self->obstat) {
        int d = self->obs_dim;
        for (size_t i = 0; i < pop; i++)
            es_obstat_add(self->obstat, self->slot[i]->obs, self->slot[i]->obs + d,
                          self->slot[i]->obs_count);
        es_obstat_get(self->obstat, self->obs_mean, self->obs_std);
    }
    self->iter++;
    self->errmsg[0] = '\0';
    if (stats)
        *stats = st;
    return 0;
}

/* --- accessors ------------------------------------------------------------------- */

const float *
es_theta(const es_t *self)
{
    return self->theta;
}

size_t
es_n_params(const es_t *self)
{
    return self->n_params;
}

uint64_t
es_iter(const es_t *self)
{
    return self->iter;
}

const float *
es_obs_mean(const es_t *self)
{
    return self->obs_mean;
}

const float *
es_obs_std(const es_t *self)
{
    return self->obs_std;
}

const char *
es_errmsg(const es_t *self)
{
    return self->errmsg;
}

uint64_t
es_weights_hash(const es_t *self)
{
    return es_hash_floats(self->theta, self->n_params);
}

/* --- the state as bytes ------------------------------------------------------------- */

/* The header of es_state_write()'s bytes; then n_params floats of weights,
   n_params doubles of Adam's first moment and n_params of its second, and
   with observation statistics their count, obs_dim sums and obs_dim sums
   of squares (doubles). Native byte order, any alignment. The frozen mean
   and std are not stored: they are es_obstat_get() of the statistics,
   before the first update and after each. */
#define S_STATE_MAGIC 0x31535345u /* "ESS1" */

typedef struct {
    uint32_t magic;
    uint32_t n_params;
    int32_t obs_dim;
    uint32_t obstat; /* 1: statistics follow */
    uint64_t iter;
    uint64_t adam_t;
} s_state_hdr_t;

size_t
es_state_size(const es_t *self)
{
    size_t n = sizeof(s_state_hdr_t) + self->n_params * (sizeof(float) + 2 * sizeof(double));
    if (self->obstat)
        n += (1 + 2 * (size_t)self->obs_dim) * sizeof(double);
    return n;
}

static uint8_t *
s_put(uint8_t *p, const void *src, size_t n)
{
    memcpy(p, src, n);
    return p + n;
}

static const uint8_t *
s_get(const uint8_t *p, void *dst, size_t n)
{
    memcpy(dst, p, n);
    return p + n;
}

void
es_state_write(const es_t *self, void *buf)
{
    s_state_hdr_t h = {.magic = S_STATE_MAGIC, .n_params = (uint32_t)self->n_params,
                       .obs_dim = self->obs_dim, .obstat = self->obstat != NULL,
                       .iter = self->iter, .adam_t = self->adam->t};
    size_t np = self->n_params;
    uint8_t *p = s_put(buf, &h, sizeof h);
    p = s_put(p, self->theta, np * sizeof(float));
    p = s_put(p, self->adam->m, np * sizeof(double));
    p = s_put(p, self->adam->v, np * sizeof(double));
    if (self->obstat) {
        size_t d = (size_t)self->obs_dim;
        p = s_put(p, &self->obstat->count, sizeof(double));
        p = s_put(p, self->obstat->sum, d * sizeof(double));
        s_put(p, self->obstat->sumsq, d * sizeof(double));
    }
}

int
es_state_read(es_t *self, const void *buf, size_t n)
{
    s_state_hdr_t h;
    if (n < sizeof h)
        return s_fail(self, LUX_EINVAL, "a state of %zu bytes is too short", n);
    const uint8_t *p = s_get(buf, &h, sizeof h);
    if (h.magic != S_STATE_MAGIC)
        return s_fail(self, LUX_EINVAL, "not an ES state (magic %08x)", h.magic);
    if (h.n_params != self->n_params || h.obs_dim != self->obs_dim ||
        h.obstat != (self->obstat != NULL) || n != es_state_size(self))
        return s_fail(self, LUX_EINVAL,
                      "a state of %u parameters, %d observation values, statistics %s "
                      "(%zu bytes) for a driver of %zu, %d, %s",
                      h.n_params, h.obs_dim, h.obstat ? "on" : "off", n, self->n_params,
                      self->obs_dim, self->obstat ? "on" : "off");
    size_t np = self->n_params;
    self->iter = h.iter;
    self->adam->t = h.adam_t;
    p = s_get(p, self->theta, np * sizeof(float));
    p = s_get(p, self->adam->m, np * sizeof(double));
    p = s_get(p, self->adam->v, np * sizeof(double));
    if (self->obstat) {
        size_t d = (size_t)self->obs_dim;
        p = s_get(p, &self->obstat->count, sizeof(double));
        p = s_get(p, self->obstat->sum, d * sizeof(double));
        s_get(p, self->obstat->sumsq, d * sizeof(double));
        es_obstat_get(self->obstat, self->obs_mean, self->obs_std);
    }
    self->errmsg[0] = '\0';
    return 0;
}

/*  es_policy - shaping, initialising and running the MLP policy. */
#include "es_policy.h"
#include "es_rng.h"

#include "lux.h"

#include <math.h>

/* GCC's -O2 vectorises only loops whose trip count it knows; the layer
   loops here have run-time sizes. Its "dynamic" cost model vectorises them
   (about 15% faster episodes). It cannot change results: the vectorised
   loops compute each element with the same operations in the same order
   (build flags keep a*b+c from contracting). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Layers at most this wide are computed one output at a time (below). */
#define ES_POLICY_NARROW 4

/* The hidden layers' squashing function: tanh by the [7/6] Pade
   approximant that Lambert's continued fraction for tanh gives,

     tanh x ~ x (135135 + 17325 x^2 + 378 x^4 + x^6)
              / (135135 + 62370 x^2 + 3150 x^4 + 28 x^6),

   clamped to [-1, 1] (it increases through 1 at |x| ~ 4.97, so the clamp
   keeps it continuous and monotone). Within 1e-4 of tanh everywhere, 2e-5
   for |x| <= 4. Only +, *, / and comparisons: the same bits on every IEEE
   machine, where libm's tanhf may differ between versions, and it took
   two thirds of the time of an episode when libm's was used. */
static inline float
s_tanh(float x)
{
    /* written as selects, not branches, so that loops over it vectorise */
    x = x < -5.0f ? -5.0f : x;
    x = x > 5.0f ? 5.0f : x;
    float x2 = x * x;
    float p = x * (135135.0f + x2 * (17325.0f + x2 * (378.0f + x2)));
    float q = 135135.0f + x2 * (62370.0f + x2 * (3150.0f + x2 * 28.0f));
    float y = p / q;
    y = y < -1.0f ? -1.0f : y;
    return y > 1.0f ? 1.0f : y;
}

float
es_policy_squash(float x)
{
    return s_tanh(x);
}

int
es_policy_init(es_policy_t *p, const es_env_t *env, int n_hidden, const int *widths)
{
    if (n_hidden < 0 || n_hidden > ES_POLICY_MAX_HIDDEN)
        return LUX_EINVAL;
    int out = env->act_dim;
    if (env->obs_dim < 1 || env->obs_dim > ES_POLICY_MAX_WIDTH || out < 1 ||
        out > ES_POLICY_MAX_WIDTH)
        return LUX_EINVAL;
    p->n_hidden = n_hidden;
    p->dims[0] = env->obs_dim;
    for (int l = 0; l < n_hidden; l++) {
        if (widths[l] < 1 || widths[l] > ES_POLICY_MAX_WIDTH)
            return LUX_EINVAL;
        p->dims[l + 1] = widths[l];
    }
    p->dims[n_hidden + 1] = out;
    p->n_params = 0;
    for (int l = 0; l <= n_hidden; l++)
        p->n_params += (size_t)(p->dims[l] + 1) * (size_t)p->dims[l + 1];
    p->continuous = env->continuous;
    p->act_bound = env->act_bound;
    return 0;
}

void
es_policy_init_weights(const es_policy_t *p, float *theta, uint64_t seed)
{
    es_rng_t r;
    es_rng_seed(&r, es_derive(seed, ES_DOMAIN_INIT, 0, 0));
    float *w = theta;
    for (int l = 0; l <= p->n_hidden; l++) {
        int in = p->dims[l], out = p->dims[l + 1];
        double scale = l == p->n_hidden ? 0.01 : 1.0;
        for (int o = 0; o < out; o++) {
            double col[ES_POLICY_MAX_WIDTH], norm = 0.0;
            for (int i = 0; i < in; i += 2) {
                double b;
                es_rng_gauss2(&r, &col[i], &b);
                if (i + 1 < in)
                    col[i + 1] = b;
            }
            for (int i = 0; i < in; i++)
                norm += col[i] * col[i];
            norm = norm > 0.0 ? sqrt(norm) : 1.0;
            for (int i = 0; i < in; i++)
                w[(size_t)i * out + o] = (float)(col[i] * scale / norm);
        }
        w += (size_t)in * out;
        for (int o = 0; o < out; o++)
            w[o] = 0.0f;
        w += out;
    }
}

void
es_policy_forward(const es_policy_t *p, const float *theta, const float *x, float *out)
{
    float buf[2][ES_POLICY_MAX_WIDTH];
    const float *in = x;
    const float *w = theta;
    for (int l = 0; l <= p->n_hidden; l++) {
        int n_in = p->dims[l], n_out = p->dims[l + 1];
        bool last = l == p->n_hidden;
        float *y = last ? out : buf[l & 1];
        const float *b = w + (size_t)n_in * n_out;
        /* y = b + sum_i in[i] W[i][.], each y[o] summed in input order
           whichever way the loops run, so both ways give the same bits. */
        if (n_out <= ES_POLICY_NARROW) {
            /* A narrow layer (the output layer of the environments here):
               one output at a time, its sum in a register. Summed in y,
               each step would wait for the previous one's store to reach
               the next load, since y may alias the weights for all the
               compiler knows; that chain took half of a forward pass. */
            for (int o = 0; o < n_out; o++) {
                float s = b[o];
                for (int i = 0; i < n_in; i++)
                    s += in[i] * w[(size_t)i * n_out + o];
                y[o] = s;
            }
        } else {
            /* row by row, so the inner loop runs along contiguous memory
               and vectorises */
            for (int o = 0; o < n_out; o++)
                y[o] = b[o];
            for (int i = 0; i < n_in; i++) {
                float xi = in[i];
                const float *row = w + (size_t)i * n_out;
                for (int o = 0; o < n_out; o++)
                    y[o] += xi * row[o];
            }
        }
        if (!last)
            for (int o = 0; o < n_out; o++)
                y[o] = s_tanh(y[o]);
        w = b + n_out;
        in = y;
    }
}

void
es_policy_act(const es_policy_t *p, const float *theta, const float *x, int *index, double *u)
{
    float out[ES_POLICY_MAX_WIDTH];
    int n_out = p->dims[p->n_hidden + 1];
    es_policy_forward(p, theta, x, out);
    if (p->continuous) {
        for (int o = 0; o < n_out; o++)
            u[o] = p->act_bound * tanh((double)out[o]);
        return;
    }
    int best = 0;
    for (int o = 1; o < n_out; o++)
        if (out[o] > out[best])
            best = o;
    *index = best;
}

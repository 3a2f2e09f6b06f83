/* 7002-es-core: the ES core without a runtime - centered ranks, the noise
   table, hashing, Adam, the policy, rollouts, the update and its
   determinism whatever order results arrive in, and es.so's split of an
   iteration's rollouts over its tasks.
*/
#include "tap.h"

#include "env.h"
#include "es.h"
#include "es_adam.h"
#include "es_noise.h"
#include "es_policy.h"
#include "es_rng.h"
#include "es_rollout.h"
#include "es_split.h"

#include "lux.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Small tables keep the test fast, under valgrind too. */
#define NOISE_LEN ((size_t)1 << 20)

static void
s_test_ranks(void)
{
    double out[8];
    const double a[3] = {3.0, 1.0, 2.0};
    es_centered_ranks(a, 3, out);
    ok(out[0] == 0.5 && out[1] == -0.5 && out[2] == 0.0, "ranks of 3 1 2: 0.5 -0.5 0");

    /* ranks 1, 2.5, 2.5, 0 of 0..3 -> r / 3 - 0.5 */
    const double b[4] = {1.0, 5.0, 5.0, 0.0};
    es_centered_ranks(b, 4, out);
    ok(fabs(out[0] - (1.0 / 3 - 0.5)) < 1e-15 && fabs(out[1] - (2.5 / 3 - 0.5)) < 1e-15 &&
           out[1] == out[2] && out[3] == -0.5,
       "tied values share their average rank (%g %g %g %g)", out[0], out[1], out[2], out[3]);

    const double c[5] = {7, 7, 7, 7, 7};
    es_centered_ranks(c, 5, out);
    ok(out[0] == 0 && out[1] == 0 && out[2] == 0 && out[3] == 0 && out[4] == 0,
       "all equal: all zero, no signal");

    const double d[1] = {-3};
    es_centered_ranks(d, 1, out);
    ok(out[0] == 0.0, "a single value ranks 0");

    /* ranks depend on order only: a monotone transform changes nothing */
    const double e[6] = {-1000, 3, 2.5, 1e9, -7, 0};
    double f[6], re[6], rf[6];
    for (int i = 0; i < 6; i++)
        f[i] = atan(e[i]) * 3 + 1;
    es_centered_ranks(e, 6, re);
    es_centered_ranks(f, 6, rf);
    ok(memcmp(re, rf, sizeof re) == 0 && re[3] == 0.5 && re[0] == -0.5,
       "centered ranks ignore the scale of returns");
}

static void
s_test_noise_and_hash(void)
{
    /* FNV-1a 64 test vectors published by its authors */
    ok(es_fnv1a64("", 0) == 0xcbf29ce484222325ULL && es_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL &&
           es_fnv1a64("foobar", 6) == 0x85944171f73967e8ULL,
       "FNV-1a 64 test vectors");
    const float one[2] = {1.0f, -2.0f};
    const unsigned char le[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    ok(es_hash_floats(one, 2) == es_fnv1a64(le, 8), "weights hash = FNV-1a of little-endian bytes");

    es_noise_t *n1 = es_noise_new(7, NOISE_LEN);
    es_noise_t *n2 = es_noise_new(7, NOISE_LEN);
    es_noise_t *n3 = es_noise_new(8, NOISE_LEN);
    if (!n1 || !n2 || !n3)
        bail("out of memory for noise tables");
    ok(memcmp(n1->data, n2->data, NOISE_LEN * sizeof(float)) == 0 &&
           es_noise_hash(n1) == es_noise_hash(n2),
       "the same seed builds the same table");
    ok(es_noise_hash(n1) != es_noise_hash(n3) && memcmp(n1->data, n3->data, 64) != 0,
       "another seed builds another table");

    double sum = 0, sumsq = 0;
    size_t tails = 0;
    for (size_t i = 0; i < NOISE_LEN; i++) {
        double x = n1->data[i];
        sum += x;
        sumsq += x * x;
        tails += fabs(x) > 2.0;
    }
    double mean = sum / NOISE_LEN, var = sumsq / NOISE_LEN - mean * mean;
    double tail = (double)tails / NOISE_LEN;
    /* standard errors for 2^20 samples: mean 0.001, variance 0.0014,
       P(|x| > 2) = 0.0455 +- 0.0002; allow five of them */
    ok(fabs(mean) < 0.005 && fabs(var - 1) < 0.007 && fabs(tail - 0.0455) < 0.001,
       "table looks N(0, 1): mean %.4f var %.4f P(|x|>2) %.4f", mean, var, tail);

    /* a block can be built alone, and a shorter table is a prefix */
    float *part = calloc(NOISE_LEN, sizeof(float));
    es_noise_fill_block(part, NOISE_LEN, 7, 3);
    size_t b0 = 3 * (size_t)ES_NOISE_BLOCK, b1 = b0 + ES_NOISE_BLOCK;
    ok(memcmp(part + b0, n1->data + b0, ES_NOISE_BLOCK * sizeof(float)) == 0 && part[b0 - 1] == 0 &&
           part[b1] == 0,
       "block 3 built alone equals block 3 of the table, and nothing else is written");
    size_t odd = 2 * ES_NOISE_BLOCK + 3;
    es_noise_t *short_t = es_noise_new(7, odd);
    ok(short_t && memcmp(short_t->data, n1->data, odd * sizeof(float)) == 0,
       "a table of %zu floats is a prefix of the longer one", odd);

    /* Pinned fingerprint: stored weights and run hashes depend on exactly
       these numbers. If this changes, the generator changed: every run's
       weights_hash changes with it. */
    es_noise_t *pin = es_noise_new(ES_NOISE_DEFAULT_SEED, 4096);
    uint64_t h = es_noise_hash(pin);
    ok(h == 0x446ba72d3a7125ecULL, "noise table of 4096 floats from the default seed: %016llx",
       (unsigned long long)h);
    es_noise_destroy(&pin);
    es_noise_destroy(&short_t);
    free(part);
    es_noise_destroy(&n1);
    es_noise_destroy(&n2);
    es_noise_destroy(&n3);
    ok(n1 == NULL && es_noise_new(1, 0) == NULL, "destroy nulls the pointer; empty table refused");
    es_noise_destroy(&n1); /* idempotent */
}

/* Two Adam steps, worked by hand (lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8).
   Step 1: m = 0.1 g, v = 0.001 g^2, a = 0.1 sqrt(0.001) / 0.1, so the step
   is lr sign(g) (a hair less, for eps: 0.9 + 3.6e-8 after rounding to
   float), and zero where g is zero.
   Step 2: a = 0.1 sqrt(1 - 0.999^2) / (1 - 0.9^2) = 0.0235316725...
     theta0: m = 0.9 (0.05) + 0.1 (-1) = -0.055, v = 0.999 (0.00025) + 0.001 (1)
             = 0.00124975; 0.9 + a 0.055 / (0.0353518 + 1e-8) = 0.9366104
     theta1: m = -0.16, v = 0.019984; -1.9 + a 0.16 / 0.1413648 = -1.8733662
     theta2: m = 1e-4, v = 1e-9; 0.25 - a 1e-4 / (3.16228e-5 + 1e-8) = 0.1756098
   (the numbers checked with python3 in double, rounded to float). */
static void
s_test_adam(void)
{
    es_adam_t *adam = es_adam_new(3, 0.1, 0.9, 0.999, 1e-8);
    float theta[3] = {1.0f, -2.0f, 0.25f};
    const double g1[3] = {0.5, -4.0, 0.0}, g2[3] = {-1.0, 2.0, 1e-3};
    es_adam_step(adam, theta, g1);
    ok(fabs(theta[0] - 0.9000000357627869) < 1e-7 && fabs(theta[1] - -1.899999976158142) < 1e-7 &&
           theta[2] == 0.25f,
       "adam step 1 moves each weight by lr against the gradient's sign: %.9g %.9g %.9g", theta[0],
       theta[1], theta[2]);
    ok(fabs(adam->m[1] - -0.4) < 1e-15 && fabs(adam->v[1] - 0.016) < 1e-15, "adam step 1 moments");
    es_adam_step(adam, theta, g2);
    ok(fabs(theta[0] - 0.9366104006767273) < 1e-7 && fabs(theta[1] - -1.8733662366867065) < 1e-7 &&
           fabs(theta[2] - 0.17560984194278717) < 1e-7,
       "adam step 2: %.9g %.9g %.9g", theta[0], theta[1], theta[2]);
    ok(fabs(adam->m[0] - -0.055) < 1e-15 && fabs(adam->v[0] - 0.00124975) < 1e-15 && adam->t == 2,
       "adam step 2 moments and count");
    es_adam_destroy(&adam);
    ok(adam == NULL, "adam destroy nulls the pointer");
}

static void
s_test_policy(void)
{
    es_policy_t p;
    int w32 = 32;
    is_int(es_policy_init(&p, &es_env_cartpole, 1, &w32), 0, "cartpole policy 4-32-2");
    is_int((int64_t)p.n_params, 5 * 32 + 33 * 2, "its parameter count");
    float *theta = malloc(p.n_params * sizeof(float));
    es_policy_init_weights(&p, theta, 11);
    /* normc: every hidden unit's incoming weights have norm 1, every output
       unit's 0.01, biases 0 */
    double worst = 0, bias = 0;
    for (int o = 0; o < 32; o++) {
        double n = 0;
        for (int i = 0; i < 4; i++)
            n += (double)theta[i * 32 + o] * theta[i * 32 + o];
        worst = fmax(worst, fabs(sqrt(n) - 1.0));
        bias += fabs(theta[4 * 32 + o]);
    }
    for (int o = 0; o < 2; o++) {
        double n = 0;
        for (int i = 0; i < 32; i++)
            n += (double)theta[160 + i * 2 + o] * theta[160 + i * 2 + o];
        worst = fmax(worst, fabs(sqrt(n) / 0.01 - 1.0));
        bias += fabs(theta[160 + 64 + o]);
    }
    ok(worst < 1e-6 && bias == 0,
       "initial weights: unit-norm columns (0.01 at the output), zero biases");
    free(theta);

    /* a hand-made network: 3 inputs -> 2 tanh units -> 1 output, torque
       2 tanh(out) */
    int w2 = 2;
    is_int(es_policy_init(&p, &es_env_pendulum, 1, &w2), 0, "pendulum policy 3-2-1");
    float t[] = {
        0.5f,  -1.0f,  /* input 0 to units 0, 1 */
        0.25f, 0.0f,   /* input 1 */
        -0.5f, 2.0f,   /* input 2 */
        0.1f,  -0.2f,  /* biases */
        1.5f,  -0.75f, /* units to output */
        0.05f,         /* output bias */
    };
    is_int((int64_t)p.n_params, 11, "its parameter count");
    const float x[3] = {0.3f, -0.6f, 0.2f};
    double h0 = tanh(0.5 * 0.3 + 0.25 * -0.6 + -0.5 * 0.2 + 0.1);
    double h1 = tanh(-1.0 * 0.3 + 0.0 * -0.6 + 2.0 * 0.2 - 0.2);
    double want = 2.0 * tanh(1.5 * h0 - 0.75 * h1 + 0.05);
    double u;
    int idx;
    es_policy_act(&p, t, x, &idx, &u);
    ok(fabs(u - want) < 1e-5, "forward pass: torque %.7f, by hand %.7f", u, want);
    /* saturation: huge and infinite pre-activations (unit 0 gets -1.5e38,
       unit 1 overflows to +inf) give exactly -1 and 1 */
    const float big[3] = {1e30f, -1e30f, 3e38f};
    float out;
    es_policy_forward(&p, t, big, &out);
    ok(out == 1.5f * -1.0f - 0.75f * 1.0f + 0.05f, "hidden units saturate at -1 and 1 (%g)", out);

    /* Every unit's sum runs from its bias through the inputs in order,
       in float, however wide its layer: the same bits as the plain loop.
       4 -> 32 -> 3 -> 2 takes both ways the layers are computed. */
    int ws[2] = {32, 3};
    is_int(es_policy_init(&p, &es_env_cartpole, 2, ws), 0, "cartpole policy 4-32-3-2");
    float *th = malloc(p.n_params * sizeof(float));
    es_rng_t r;
    es_rng_seed(&r, 77);
    for (size_t k = 0; k < p.n_params; k++)
        th[k] = (float)(es_rng_uniform(&r) * 2.0 - 1.0);
    int same = 0;
    for (int trial = 0; trial < 50; trial++) {
        float x4[4], in[ES_POLICY_MAX_WIDTH], y[ES_POLICY_MAX_WIDTH], got[2];
        for (int i = 0; i < 4; i++)
            x4[i] = in[i] = (float)(es_rng_uniform(&r) * 4.0 - 2.0);
        const float *wp = th;
        for (int l = 0; l <= p.n_hidden; l++) {
            int ni = p.dims[l], no = p.dims[l + 1];
            const float *b = wp + (size_t)ni * no;
            for (int o = 0; o < no; o++) {
                float s = b[o];
                for (int i = 0; i < ni; i++)
                    s += in[i] * wp[(size_t)i * no + o];
                y[o] = l < p.n_hidden ? es_policy_squash(s) : s;
            }
            memcpy(in, y, (size_t)no * sizeof(float));
            wp = b + no;
        }
        es_policy_forward(&p, th, x4, got);
        same += memcmp(got, in, sizeof got) == 0;
    }
    is_int(same, 50, "forward pass: the bits of the plain loop, wide and narrow layers");
    free(th);

    int bad[2] = {0, 300};
    ok(es_policy_init(&p, &es_env_pendulum, 1, &bad[0]) == LUX_EINVAL &&
           es_policy_init(&p, &es_env_pendulum, 1, &bad[1]) == LUX_EINVAL &&
           es_policy_init(&p, &es_env_pendulum, 9, bad) == LUX_EINVAL,
       "bad shapes are refused");
}

/* --- the update on a known problem ------------------------------------------- */

#define TOY_N 10

/* The toy objective: -||theta - target||^2, target_j = j / 4 - 1. */
static double
s_toy(const float *theta)
{
    double f = 0;
    for (int j = 0; j < TOY_N; j++) {
        double d = theta[j] - (j / 4.0 - 1.0);
        f -= d * d;
    }
    return f;
}

/* Evaluate rollout r of es's current iteration on the toy objective the
   way a worker would: theta +- sigma eps from the noise index. */
static void
s_toy_rollout(const es_t *es, const float *noise, float sigma, uint32_t r, es_result_t *out)
{
    es_task_t t = es_task(es, r);
    const float *th = es_theta(es), *eps = noise + t.noise_idx;
    float w[TOY_N];
    memset(out, 0, es_result_size(0));
    out->iter = t.iter;
    out->rollout = t.rollout;
    out->noise_idx = t.noise_idx;
    for (int s = 0; s < 2; s++) {
        float sg = s ? -sigma : sigma;
        for (int j = 0; j < TOY_N; j++)
            w[j] = th[j] + sg * eps[j];
        out->ret[s] = s_toy(w);
        out->steps[s] = 1;
    }
}

static void
s_test_toy(const es_noise_t *noise)
{
    es_config_t cfg;
    es_config_default(&cfg);
    cfg.seed = 5;
    cfg.population = 20;
    cfg.sigma = 0.1;
    cfg.lr = 0.05;
    float theta0[TOY_N] = {0};
    es_t *es = es_new(&cfg, TOY_N, 0, theta0, noise->data, noise->len);
    ok(es != NULL && es_obs_mean(es) == NULL, "a driver without observations");
    es_result_t *res[20], *ptrs[20];
    for (int i = 0; i < 20; i++)
        res[i] = malloc(es_result_size(0));

    /* iteration 0 by hand: centered ranks of the 40 returns, the gradient
       from the noise slices, then Adam's first step on -g (see s_test_adam):
       theta = lr sqrt(0.001) / 0.1 * 0.1 g / (sqrt(0.001) |g| + 1e-8) */
    double rets[40], ranks[40], g[TOY_N] = {0};
    for (uint32_t r = 0; r < 20; r++) {
        s_toy_rollout(es, noise->data, (float)cfg.sigma, r, res[r]);
        rets[2 * r] = res[r]->ret[0];
        rets[2 * r + 1] = res[r]->ret[1];
        ptrs[r] = res[r];
    }
    es_centered_ranks(rets, 40, ranks);
    for (int r = 0; r < 20; r++)
        for (int j = 0; j < TOY_N; j++)
            g[j] += (ranks[2 * r] - ranks[2 * r + 1]) * noise->data[res[r]->noise_idx + j] / 40;
    es_stats_t st;
    is_int(es_update(es, ptrs, 20, &st), 0, "update of iteration 0");
    double gn = 0;
    int moved = 0;
    for (int j = 0; j < TOY_N; j++) {
        gn += g[j] * g[j];
        double want = 0.05 * sqrt(0.001) / 0.1 * 0.1 * g[j] / (sqrt(0.001) * fabs(g[j]) + 1e-8);
        moved += fabs(es_theta(es)[j] - want) < 1e-7;
    }
    is_int(moved, TOY_N, "the first step follows the gradient rebuilt from noise indices");
    ok(fabs(st.grad_norm - sqrt(gn)) < 1e-12 && st.iter == 0 && es_iter(es) == 1,
       "stats: gradient norm %.6f, iteration numbers", st.grad_norm);

    /* then ES climbs: after 300 iterations the distance to the target is
       a small fraction of the starting one */
    double start = sqrt(-s_toy(theta0));
    for (int it = 1; it < 300; it++) {
        for (uint32_t r = 0; r < 20; r++)
            s_toy_rollout(es, noise->data, (float)cfg.sigma, r, res[r]);
        if (es_update(es, ptrs, 20, NULL) != 0)
            break;
    }
    double end = sqrt(-s_toy(es_theta(es)));
    ok(es_iter(es) == 300 && end < 0.1 * start, "ES moves toward the target: distance %.3f -> %.3f",
       start, end);

    for (int i = 0; i < 20; i++)
        free(res[i]);
    es_destroy(&es);
    ok(es == NULL, "es_destroy nulls the pointer");
}

/* --- rollouts and determinism on a real environment ----------------------------- */

typedef struct {
    es_t *es;           /* the driver */
    es_result_t **res;  /* results, by rollout number */
    es_result_t **ptrs; /* handed to es_update in this order */
} s_run_t;

/* One iteration on CartPole: evaluate the rollouts in order (reverse when
   asked), hand them over in the permutation perm (NULL: rollout order). */
static int
s_cartpole_iter(s_run_t *run, const es_policy_t *pol, int pop, bool reverse, const int *perm)
{
    es_ctx_t ctx;
    es_ctx(run->es, &es_env_cartpole, pol, &ctx);
    for (int k = 0; k < pop; k++) {
        int r = reverse ? pop - 1 - k : k;
        es_task_t t = es_task(run->es, (uint32_t)r);
        if (es_rollout(&ctx, &t, run->res[r]) != 0)
            return -1;
    }
    for (int k = 0; k < pop; k++)
        run->ptrs[k] = run->res[perm ? perm[k] : k];
    return es_update(run->es, run->ptrs, (size_t)pop, NULL);
}

static void
s_test_rollout(const es_noise_t *noise)
{
    enum { POP = 16 };
    es_policy_t pol;
    int w = 8;
    es_policy_init(&pol, &es_env_cartpole, 1, &w);
    float *theta0 = malloc(pol.n_params * sizeof(float));
    es_policy_init_weights(&pol, theta0, 3);
    es_config_t cfg;
    es_config_default(&cfg);
    cfg.seed = 99;
    cfg.population = POP;
    cfg.sigma = 0.1;
    cfg.lr = 0.03;
    cfg.l2 = 0.005;

    /* a rollout is a pure function of its inputs */
    es_t *es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
    es_ctx_t ctx;
    es_ctx(es, &es_env_cartpole, &pol, &ctx);
    size_t rsz = es_result_size(4);
    es_result_t *a = calloc(1, rsz), *b = calloc(1, rsz);
    es_task_t t = es_task(es, 5);
    es_rollout(&ctx, &t, a);
    es_rollout(&ctx, &t, b);
    ok(memcmp(a, b, rsz) == 0 && a->rollout == 5 && a->noise_idx == t.noise_idx &&
           a->steps[0] >= 1 && a->obs_count == (double)(a->steps[0] + a->steps[1]),
       "the same task twice gives the same bytes (returns %g / %g)", a->ret[0], a->ret[1]);
    es_task_t t2 = es_task_make(99, 0, 5, noise->len, pol.n_params, false);
    ok(memcmp(&t, &t2, sizeof t) == 0 && t.noise_idx <= noise->len - pol.n_params,
       "a task is a pure function of (seed, iteration, rollout)");
    es_task_t t6 = es_task(es, 6);
    ok(t6.noise_idx != t.noise_idx && t6.env_seed != t.env_seed, "another rollout, another task");
    es_task_t s5 = es_task_make(99, 0, 5, noise->len, pol.n_params, true);
    es_task_t s6 = es_task_make(99, 0, 6, noise->len, pol.n_params, true);
    ok(s5.env_seed == s6.env_seed && s5.noise_idx == t.noise_idx,
       "shared env seeds: one per iteration, noise indices unchanged");
    ctx.sigma = 0;
    es_rollout(&ctx, &t, a);
    ok(a->ret[0] == a->ret[1] && a->steps[0] == a->steps[1],
       "with sigma 0 both sides of the pair are the same policy");
    ctx.sigma = 0.1f;
    es_task_t bad = t;
    bad.noise_idx = noise->len - pol.n_params + 1;
    ok(es_rollout(&ctx, &bad, a) == LUX_EINVAL, "a noise slice past the table is refused");
    free(a);
    free(b);

    /* bad result sets are refused, and change nothing */
    s_run_t r1 = {.es = es};
    r1.res = calloc(POP, sizeof *r1.res);
    r1.ptrs = calloc(POP, sizeof *r1.ptrs);
    for (int i = 0; i < POP; i++)
        r1.res[i] = calloc(1, rsz);
    es_ctx(es, &es_env_cartpole, &pol, &ctx);
    for (int r = 0; r < POP; r++) {
        es_task_t tk = es_task(es, (uint32_t)r);
        es_rollout(&ctx, &tk, r1.res[r]);
        r1.ptrs[r] = r1.res[r];
    }
    uint64_t h0 = es_weights_hash(es);
    int refused = 0;
    refused += es_update(es, r1.ptrs, POP - 1, NULL) == LUX_EINVAL;
    r1.ptrs[3] = r1.res[4];
    refused += es_update(es, r1.ptrs, POP, NULL) == LUX_EINVAL &&
               strstr(es_errmsg(es), "rollout 4: reported twice") != NULL;
    r1.ptrs[3] = r1.res[3];
    r1.res[7]->iter = 1;
    refused += es_update(es, r1.ptrs, POP, NULL) == LUX_EINVAL;
    r1.res[7]->iter = 0;
    r1.res[2]->ret[1] = NAN;
    refused += es_update(es, r1.ptrs, POP, NULL) == LUX_EINVAL;
    es_rollout(&ctx, &(es_task_t){0}, r1.res[2]); /* rollout 0's result... */
    r1.res[2]->rollout = 2;                       /* ...claiming to be rollout 2: */
    r1.res[2]->noise_idx = noise->len;            /* and out of the table */
    refused += es_update(es, r1.ptrs, POP, NULL) == LUX_EINVAL;
    is_int(refused, 5, "missing, duplicate, stale, non-finite and out-of-table results refused");
    ok(es_weights_hash(es) == h0 && es_iter(es) == 0, "and refusing them changed nothing");
    if (tap_verbose())
        diag("last refusal: %s", es_errmsg(es));
    es_destroy(&es);

    /* Determinism whatever the order: run A evaluates and hands results
       over in rollout order; run B evaluates them backwards and hands them
       over shuffled, a different shuffle each iteration. */
    s_run_t r2 = {0};
    r1.es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
    r2.es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
    r2.res = calloc(POP, sizeof *r2.res);
    r2.ptrs = calloc(POP, sizeof *r2.ptrs);
    for (int i = 0; i < POP; i++)
        r2.res[i] = calloc(1, rsz);
    int perm[POP], same = 0, iters = 4;
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < POP; k++)
            perm[k] = (k * 7 + 3 * it + 1) % POP; /* 7 is coprime with 16 */
        int rc1 = s_cartpole_iter(&r1, &pol, POP, false, NULL);
        int rc2 = s_cartpole_iter(&r2, &pol, POP, true, perm);
        same += rc1 == 0 && rc2 == 0 && es_weights_hash(r1.es) == es_weights_hash(r2.es) &&
                memcmp(es_theta(r1.es), es_theta(r2.es), pol.n_params * sizeof(float)) == 0 &&
                memcmp(es_obs_mean(r1.es), es_obs_mean(r2.es), 4 * sizeof(float)) == 0 &&
                memcmp(es_obs_std(r1.es), es_obs_std(r2.es), 4 * sizeof(float)) == 0;
    }
    is_int(same, iters, "any evaluation and arrival order: the same weights and statistics");
    ok(es_obs_std(r1.es)[0] != 1.0f && es_obs_mean(r1.es)[0] != 0.0f,
       "observation statistics were updated (x mean %g std %g)", es_obs_mean(r1.es)[0],
       es_obs_std(r1.es)[0]);
    ok(memcmp(es_theta(r1.es), theta0, pol.n_params * sizeof(float)) != 0, "the weights moved");

    /* the control: another seed ends elsewhere */
    es_destroy(&r2.es);
    cfg.seed = 100;
    r2.es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
    for (int it = 0; it < iters; it++)
        s_cartpole_iter(&r2, &pol, POP, false, NULL);
    ok(es_weights_hash(r1.es) != es_weights_hash(r2.es), "another run seed, other weights");

    for (int i = 0; i < POP; i++) {
        free(r1.res[i]);
        free(r2.res[i]);
    }
    free(r1.res);
    free(r1.ptrs);
    free(r2.res);
    free(r2.ptrs);
    es_destroy(&r1.es);
    es_destroy(&r2.es);
    free(theta0);
}

/* A driver restored from es_state_write()'s bytes into a fresh one goes
   on exactly as the saved one does (what a parameter-server actor's
   checkpoint relies on), with observation statistics on and off. */
static void
s_test_state(const es_noise_t *noise)
{
    enum { POP = 8 };
    es_policy_t pol;
    int w = 8;
    es_policy_init(&pol, &es_env_cartpole, 1, &w);
    float *theta0 = malloc(pol.n_params * sizeof(float));
    float *zero = calloc(pol.n_params, sizeof(float));
    es_policy_init_weights(&pol, theta0, 5);
    s_run_t a = {0}, b = {0};
    a.res = calloc(POP, sizeof *a.res);
    a.ptrs = calloc(POP, sizeof *a.ptrs);
    for (int i = 0; i < POP; i++)
        a.res[i] = calloc(1, es_result_size(4));
    b.res = a.res;
    b.ptrs = a.ptrs;
    for (int norm = 1; norm >= 0; norm--) {
        es_config_t cfg;
        es_config_default(&cfg);
        cfg.seed = 7;
        cfg.population = POP;
        cfg.sigma = 0.1;
        cfg.lr = 0.03;
        cfg.obs_norm = norm;
        a.es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
        b.es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
        int rc = 0;
        for (int it = 0; it < 3; it++) {
            rc |= s_cartpole_iter(&a, &pol, POP, false, NULL);
            rc |= s_cartpole_iter(&b, &pol, POP, false, NULL);
        }
        size_t n = es_state_size(b.es);
        uint8_t *buf = malloc(n + 1);
        es_state_write(b.es, buf + 1); /* any alignment */
        es_destroy(&b.es);
        b.es = es_new(&cfg, pol.n_params, 4, zero, noise->data, noise->len);
        rc |= es_state_read(b.es, buf + 1, n);
        ok(rc == 0 && es_iter(b.es) == 3 && es_weights_hash(b.es) == es_weights_hash(a.es),
           "obs norm %s: a state of %zu bytes restores iteration and weights",
           norm ? "on" : "off", n);
        for (int it = 0; it < 3; it++) {
            rc |= s_cartpole_iter(&a, &pol, POP, false, NULL);
            rc |= s_cartpole_iter(&b, &pol, POP, false, NULL);
        }
        ok(rc == 0 && es_iter(b.es) == 6 &&
               memcmp(es_theta(a.es), es_theta(b.es), pol.n_params * sizeof(float)) == 0 &&
               (!norm || (memcmp(es_obs_mean(a.es), es_obs_mean(b.es), 4 * sizeof(float)) == 0 &&
                          memcmp(es_obs_std(a.es), es_obs_std(b.es), 4 * sizeof(float)) == 0)),
           "obs norm %s: ...and goes on bit for bit (Adam's moments and statistics too)",
           norm ? "on" : "off");

        /* refused, changing nothing */
        uint64_t h = es_weights_hash(b.es);
        int refused = es_state_read(b.es, buf + 1, n - 1) == LUX_EINVAL;
        buf[1] ^= 0xff;
        refused += es_state_read(b.es, buf + 1, n) == LUX_EINVAL;
        buf[1] ^= 0xff;
        cfg.obs_norm = !norm;
        es_t *other = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len);
        refused += es_state_read(other, buf + 1, n) == LUX_EINVAL;
        ok(refused == 3 && es_weights_hash(b.es) == h && es_iter(b.es) == 6 && es_iter(other) == 0,
           "obs norm %s: a short, a foreign and a mismatched state are refused (%s)",
           norm ? "on" : "off", es_errmsg(other));
        es_destroy(&other);
        free(buf);
        es_destroy(&a.es);
        es_destroy(&b.es);
    }
    for (int i = 0; i < POP; i++)
        free(a.res[i]);
    free(a.res);
    free(a.ptrs);
    free(theta0);
    free(zero);
}

/* A short CartPole training run learns: the mean return of the
   unperturbed policy over 20 episodes rises well above a random policy's
   (about 22). Deterministic for the seed, so it does not flake. */
static void
s_test_learns(const es_noise_t *noise)
{
    enum { POP = 16, ITERS = 25 };
    es_policy_t pol;
    int w = 16;
    es_policy_init(&pol, &es_env_cartpole, 1, &w);
    float *theta0 = malloc(pol.n_params * sizeof(float));
    es_policy_init_weights(&pol, theta0, 1);
    es_config_t cfg;
    es_config_default(&cfg);
    cfg.seed = 1;
    cfg.population = POP;
    cfg.sigma = 0.1;
    cfg.lr = 0.03;
    s_run_t run = {.es = es_new(&cfg, pol.n_params, 4, theta0, noise->data, noise->len)};
    run.res = calloc(POP, sizeof *run.res);
    run.ptrs = calloc(POP, sizeof *run.ptrs);
    for (int i = 0; i < POP; i++)
        run.res[i] = calloc(1, es_result_size(4));

    es_ctx_t ctx;
    double before = 0, after = 0, ret;
    uint64_t len;
    es_ctx(run.es, &es_env_cartpole, &pol, &ctx);
    for (uint32_t k = 0; k < 20; k++) {
        es_episode(&ctx, ctx.theta, es_eval_seed(1, 0, k), &ret, &len, NULL);
        before += ret / 20;
    }
    int rc = 0;
    for (int it = 0; it < ITERS && rc == 0; it++)
        rc = s_cartpole_iter(&run, &pol, POP, false, NULL);
    es_ctx(run.es, &es_env_cartpole, &pol, &ctx);
    for (uint32_t k = 0; k < 20; k++) {
        es_episode(&ctx, ctx.theta, es_eval_seed(1, ITERS, k), &ret, &len, NULL);
        after += ret / 20;
    }
    ok(rc == 0 && after > 200 && after > 3 * before,
       "CartPole: mean return %.1f before, %.1f after %d iterations", before, after, ITERS);

    for (int i = 0; i < POP; i++)
        free(run.res[i]);
    free(run.res);
    free(run.ptrs);
    es_destroy(&run.es);
    free(theta0);
}

/* Whether s's counts are the n given, and add up to its total. */
static bool
s_counts(const es_split_t *s, int n, const size_t *want)
{
    size_t sum = 0;
    bool same = s->slots == n;
    for (int k = 0; k < s->slots; k++) {
        sum += s->count[k];
        same = same && k < n && s->count[k] == want[k];
    }
    return same && sum == s->total;
}

static void
s_test_split(void)
{
    es_split_t s;
    ok(es_split_init(&s, 3, 32, true) == 0 && s_counts(&s, 3, (size_t[]){10, 11, 11}),
       "split: 32 rollouts over 3 tasks start even (10 11 11)");
    is_int((int64_t)(s.count[0] + s.count[1]), 21, "split: the third task's rollouts start at 21");
    es_split_free(&s);
    ok(es_split_init(&s, 5, 3, true) == 0 && s_counts(&s, 3, (size_t[]){1, 1, 1}),
       "split: more tasks than rollouts: a task per rollout");
    es_split_free(&s);

    /* two slots, the second 1.5 times as slow per rollout */
    ok(es_split_init(&s, 2, 32, true) == 0, "split: two slots");
    es_split_update(&s, (double[]){16 * 1e-4, 16 * 1.5e-4});
    ok(s_counts(&s, 2, (size_t[]){19, 13}), "split: a slot 1.5x slower gets 13 of 32 (%zu %zu)",
       s.count[0], s.count[1]);
    is_int(s.uneven, 1, "split: one uneven iteration counted");
    /* the same speeds again, timed on the new counts: the split holds */
    es_split_update(&s, (double[]){19 * 1e-4, 13 * 1.5e-4});
    ok(s_counts(&s, 2, (size_t[]){19, 13}), "split: the same speeds keep it (%zu %zu)",
       s.count[0], s.count[1]);
    /* the slow one recovers: the estimate follows over a few iterations,
       and back within ES_SPLIT_MIN_GAP the split is even again */
    int iters = 0;
    while (!s_counts(&s, 2, (size_t[]){16, 16}) && iters < 20) {
        es_split_update(&s, (double[]){s.count[0] * 1e-4, s.count[1] * 1e-4});
        iters++;
    }
    ok(iters >= 1 && iters <= 6, "split: even again %d iterations after the speeds are", iters);
    /* noise within the gap leaves it even */
    es_split_update(&s, (double[]){16 * 1e-4, 16 * 1.1e-4});
    ok(s_counts(&s, 2, (size_t[]){16, 16}), "split: 10%% apart stays even");
    /* a task 10 times as slow (its worker killed and the task retried)
       gets no less than half an even share */
    es_split_update(&s, (double[]){16 * 1e-4, 16 * 1e-3});
    ok(s_counts(&s, 2, (size_t[]){24, 8}), "split: at most 1.5 times an even share (%zu %zu)",
       s.count[0], s.count[1]);
    /* a task with no time (it failed) changes no estimate */
    es_split_update(&s, (double[]){0.0, 0.0});
    ok(s_counts(&s, 2, (size_t[]){24, 8}), "split: tasks without a time change nothing");
    es_split_free(&s);

    /* balancing off: always even */
    ok(es_split_init(&s, 2, 32, false) == 0, "split: balancing off");
    es_split_update(&s, (double[]){16 * 1e-4, 16 * 2e-4});
    ok(s_counts(&s, 2, (size_t[]){16, 16}) && s.uneven == 0, "split: balancing off stays even");
    es_split_free(&s);

    /* four slots, one fast: rollouts move to it, and the total holds */
    ok(es_split_init(&s, 4, 30, true) == 0, "split: four slots");
    es_split_update(&s, (double[]){7 * 0.5e-4, 8 * 1e-4, 7 * 1e-4, 8 * 1e-4}); /* 7 8 7 8 */
    ok(s.count[0] > s.count[1] && s.count[1] >= s.count[3] && s.count[0] <= 12 &&
           s.count[0] + s.count[1] + s.count[2] + s.count[3] == 30,
       "split: a fast slot of four gets more, within 1.5 shares (%zu %zu %zu %zu)", s.count[0],
       s.count[1], s.count[2], s.count[3]);
    es_split_free(&s);
}

int
main(void)
{
    s_test_ranks();
    s_test_split();
    s_test_noise_and_hash();
    s_test_adam();
    s_test_policy();
    es_noise_t *noise = es_noise_new(ES_NOISE_DEFAULT_SEED, NOISE_LEN);
    if (!noise)
        bail("out of memory for the noise table");
    s_test_toy(noise);
    s_test_rollout(noise);
    s_test_state(noise);
    s_test_learns(noise);
    es_noise_destroy(&noise);
    return done_testing();
}

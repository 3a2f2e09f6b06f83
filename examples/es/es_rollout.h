/*  es_rollout - evaluating perturbed policies: the work ES distributes.

    A rollout is one antithetic pair (Salimans et al. 2017, section 2.1,
    "mirrored sampling"): with eps = noise[idx .. idx + d), it runs the
    policy with weights theta + sigma eps and then theta - sigma eps, each
    for the same `episodes` episodes (same initial states: common random
    numbers, so the difference of the two returns measures eps, not luck),
    and reports only the noise index, the two mean returns, the step counts
    and the sums of the observations seen.

    es_rollout() is a pure function of its inputs: everything it reads is
    in es_ctx_t (shared, read-only: the environment class, the policy shape,
    theta, the frozen observation statistics, the noise table) and es_task_t
    (what this rollout is: iteration, number, noise index, env seed). It
    keeps no state between calls and allocates only its own scratch, so a
    worker process holding the noise table and theta as read-only memory can
    call it from any thread, any number of times, in any order, and a retry
    gives the identical result.

    Which noise index and env seed rollout number r of iteration i gets is
    itself a pure function of (run seed, i, r): es_task_make(). Any process
    can derive it; the driver never has to ship it.
*/
#ifndef ES_ROLLOUT_H_INCLUDED
#define ES_ROLLOUT_H_INCLUDED

#include "env.h"
#include "es_policy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What every rollout of one iteration reads. Borrowed pointers, read-only. */
typedef struct {
    const es_env_t *env;       /* the environment class */
    const es_policy_t *policy; /* the policy's shape; policy->n_params weights */
    const float *theta;        /* the current weights, policy->n_params floats */
    const float *obs_mean;     /* env->obs_dim floats, or NULL: no normalisation */
    const float *obs_std;      /* env->obs_dim floats (when obs_mean is set) */
    const float *noise;        /* the noise table (es_noise.h) */
    size_t noise_len;          /* its length in floats */
    float sigma;               /* perturbation scale */
    int episodes;              /* episodes per perturbation, >= 1 */
} es_ctx_t;

/* One rollout to do. 32 bytes of plain data. */
typedef struct {
    uint64_t iter;      /* the iteration it belongs to */
    uint32_t rollout;   /* its number in the iteration: the sort key */
    uint32_t reserved;  /* zero */
    uint64_t noise_idx; /* eps = noise[noise_idx .. noise_idx + n_params) */
    uint64_t env_seed;  /* episode k starts from es_derive(env_seed, EPISODE, k, 0) */
} es_task_t;

/* What a rollout returns: plain data with no pointers, es_result_size()
   bytes, so it can travel between processes as bytes (same architecture). */
typedef struct {
    uint64_t iter;      /* copied from the task */
    uint32_t rollout;   /* copied from the task */
    uint32_t obs_dim;   /* length of each of the two arrays in obs[] */
    uint64_t noise_idx; /* copied from the task */
    double ret[2]; /* mean return over the episodes: [0] theta + sigma eps, [1] theta - sigma eps */
    uint64_t steps[2]; /* total steps of those episodes */
    double obs_count;  /* observations summed in obs[] */
    double obs[];      /* obs_dim sums of observations, then obs_dim sums of squares */
} es_result_t;

/* Bytes of a result for observations of obs_dim values. */
size_t es_result_size(int obs_dim);

/* The task of rollout number rollout of iteration iter in the run seeded
   with seed: its noise index, uniform over the slices of a table of
   noise_len floats that hold n_params floats, and its env seed. With
   shared_env_seed every rollout of an iteration gets the same env seed
   (the whole population faces the same initial states). */
es_task_t es_task_make(uint64_t seed, uint64_t iter, uint32_t rollout, size_t noise_len,
                       size_t n_params, bool shared_env_seed);

/* The initial-state seed of evaluation episode k after iteration iter. */
uint64_t es_eval_seed(uint64_t seed, uint64_t iter, uint32_t k);

/* Run one episode of the policy with weights w (not necessarily
   ctx->theta) from the initial state of seed. *ret gets the return, *steps
   the length; when obs_sums is not NULL, the observations the policy saw
   are added to obs_sums[0..obs_dim) and their squares to
   obs_sums[obs_dim..2 obs_dim). 0, or LUX_ENOMEM. */
int es_episode(const es_ctx_t *ctx, const float *w, uint64_t seed, double *ret, uint64_t *steps,
               double *obs_sums);

/* Evaluate the antithetic pair of task into out (es_result_size(obs_dim)
   bytes). 0, LUX_EINVAL when the noise slice is outside the table, or
   LUX_ENOMEM; out is filled only on success. */
int es_rollout(const es_ctx_t *ctx, const es_task_t *task, es_result_t *out);

#endif

/*  es - the Evolution Strategies driver (Salimans, Ho, Chen, Sidor and
    Sutskever, "Evolution Strategies as a Scalable Alternative to
    Reinforcement Learning", 2017), without any runtime.

    One iteration:

      1. the driver names population rollouts: es_task(es, r) for r in
         0..population-1 (a pure function of run seed, iteration, r);
      2. anyone evaluates them: es_rollout(ctx, task, result), ctx from
         es_ctx() (the weights and observation statistics of this
         iteration, the noise table) - in this process or in workers that
         hold copies of the same read-only data;
      3. the driver hands back all population results, in any order, to
         es_update(), which puts them in rollout order, turns the 2 x
         population returns into centered ranks, rebuilds the gradient
         estimate g = sum_r (rank+_r - rank-_r) eps_r / (2 population)
         from the noise indices, takes an Adam step on -g + l2 theta, adds
         the rollouts' observation sums to the running statistics, and
         moves to the next iteration.

    Determinism: every random choice derives from the run seed (es_rng.h),
    rollouts are pure functions, and es_update() orders results by rollout
    number before any floating-point sum, so the same seed gives
    bit-identical weights whatever the number of workers and whatever the
    order in which results arrive (t/7002-es-core.c checks it).

    The driver is generic over the parameter vector: it knows n_params and
    the observation length, not the environment or the policy, so it also
    optimises functions that are not environments (the tests do that).
*/
#ifndef ES_H_INCLUDED
#define ES_H_INCLUDED

#include "es_rollout.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t seed;        /* the run seed: noise indices, env seeds */
    int population;       /* rollouts (antithetic pairs) per iteration, >= 1 */
    int episodes;         /* episodes per perturbation, >= 1 */
    double sigma;         /* perturbation scale */
    double lr;            /* Adam step size */
    double beta1;         /* Adam first moment decay */
    double beta2;         /* Adam second moment decay */
    double adam_eps;      /* Adam denominator guard */
    double l2;            /* weight decay: the step follows -g + l2 theta; 0 for none */
    bool obs_norm;        /* normalise observations with running statistics */
    bool shared_env_seed; /* all rollouts of an iteration share initial states */
} es_config_t;

/* What es_update() saw, for progress reports. */
typedef struct {
    uint64_t iter;     /* the iteration these numbers are about */
    double ret_mean;   /* mean of the 2 x population perturbed returns */
    double ret_min;    /* their minimum */
    double ret_max;    /* their maximum */
    uint64_t steps;    /* environment steps taken by the rollouts */
    double grad_norm;  /* Euclidean norm of g */
    double theta_norm; /* Euclidean norm of theta after the step */
} es_stats_t;

typedef struct es es_t;

/* Middle-of-the-road settings (Salimans et al.'s Adam constants, no weight
   decay, observation normalisation on); callers set seed and tune the
   rest for their problem. */
void es_config_default(es_config_t *cfg);

/* A driver for n_params parameters starting at theta0 (copied), with
   observations of obs_dim values (0: none, no statistics), drawing
   perturbations from noise[0..noise_len) which it borrows and must outlive
   it. NULL on bad arguments or out of memory. */
es_t *es_new(const es_config_t *cfg, size_t n_params, int obs_dim, const float *theta0,
             const float *noise, size_t noise_len);

void es_destroy(es_t **self_p);

/* Rollout number rollout of the current iteration. */
es_task_t es_task(const es_t *self, uint32_t rollout);

/* Fill ctx for the current iteration: env and policy as given (the
   policy must have es_n_params() parameters), theta and observation
   statistics borrowed from self (valid until the next es_update), the
   noise table, sigma and episodes from the configuration. */
void es_ctx(const es_t *self, const es_env_t *env, const es_policy_t *policy, es_ctx_t *ctx);

/* Finish the current iteration with its n results (borrowed, any order).
   0, or on bad results - not exactly one per rollout number, another
   iteration's, wrong observation length, noise index outside the table,
   a return that is not finite - LUX_EINVAL with es_errmsg() saying which,
   and nothing changed; LUX_ENOMEM. stats may be NULL. */
int es_update(es_t *self, es_result_t *const *results, size_t n, es_stats_t *stats);

/* The current weights (n_params floats), borrowed. */
const float *es_theta(const es_t *self);
size_t es_n_params(const es_t *self);
/* The current iteration: the number of updates done. */
uint64_t es_iter(const es_t *self);
/* The frozen observation mean and std of this iteration (obs_dim floats),
   NULL when there is no normalisation. */
const float *es_obs_mean(const es_t *self);
const float *es_obs_std(const es_t *self);
/* The message of the last failure; "" when none. */
const char *es_errmsg(const es_t *self);

/* Fingerprint of the current weights: es_hash_floats(theta, n_params). */
uint64_t es_weights_hash(const es_t *self);

/* The driver's whole state as bytes, for a checkpoint (the parameter-server
   variant of es.so saves its actor with it): the iteration, the weights,
   Adam's moments and step count, the running observation statistics. The
   settings are not in it: es_state_read() restores into a driver made by
   es_new() with the same settings, sizes and noise table, which then goes
   on exactly as the saved one would have (bit for bit). */
size_t es_state_size(const es_t *self);
/* Write es_state_size() bytes into buf (any alignment). */
void es_state_write(const es_t *self, void *buf);
/* Overwrite self's state with n bytes from es_state_write(). 0, or
   LUX_EINVAL (es_errmsg() says why: not a state, or one of another shape)
   and nothing changed. */
int es_state_read(es_t *self, const void *buf, size_t n);

/* Centered ranks (Salimans et al., section 2.1 "fitness shaping"): x[i]
   becomes rank(x[i]) / (n - 1) - 0.5 in [-0.5, 0.5], rank 0 the smallest;
   equal values share their average rank, so ties carry no signal. n == 1
   gives 0. 0, or LUX_ENOMEM. */
int es_centered_ranks(const double *x, size_t n, double *out);

#endif

/*  es_obstat - observation normalisation from running statistics.

    Observations differ wildly in scale (CartPole's angle is a few hundredths
    of a radian, Pendulum's velocity up to 8), so the policy sees each one
    shifted and scaled by a running mean and standard deviation, clipped to
    [-5, 5] (Salimans et al. 2017, section 2.2, and their code: the counts
    start at 0.01 and the variance is floored at 0.01).

    Workers do not update anything: each rollout returns the sums of the
    observations it saw (es_result_t), and the driver adds them here, in
    rollout order, after each iteration. The policy then uses the frozen
    mean and std (float32) for the whole next iteration, so a rollout stays
    a pure function of its inputs.
*/
#ifndef ES_OBSTAT_H_INCLUDED
#define ES_OBSTAT_H_INCLUDED

#include <stddef.h>

#define ES_OBSTAT_EPS 1e-2 /* prior count and variance floor */
#define ES_OBS_CLIP 5.0f   /* normalised observations are clipped to +-this */

typedef struct {
    int dim;       /* observation length */
    double count;  /* observations added, plus the prior ES_OBSTAT_EPS */
    double *sum;   /* dim sums of observations */
    double *sumsq; /* dim sums of squared observations (plus the prior) */
} es_obstat_t;

/* Empty statistics for observations of dim values; NULL when out of memory. */
es_obstat_t *es_obstat_new(int dim);

void es_obstat_destroy(es_obstat_t **self_p);

/* Add the sums of count observations (sum and sumsq, dim values each). */
void es_obstat_add(es_obstat_t *self, const double *sum, const double *sumsq, double count);

/* The mean and std (dim floats each) the policy should use. */
void es_obstat_get(const es_obstat_t *self, float *mean, float *std);

/* Normalise obs (dim doubles) into x (dim floats): rounded to float as
   Gymnasium's observations are, then (x - mean) / std clipped to
   [-ES_OBS_CLIP, ES_OBS_CLIP]; mean NULL means no normalisation. */
void es_obs_normalise(int dim, const double *obs, const float *mean, const float *std, float *x);

#endif

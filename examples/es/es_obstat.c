/*  es_obstat - running observation statistics and their use. */
#include "es_obstat.h"

#include <math.h>
#include <stdlib.h>

es_obstat_t *
es_obstat_new(int dim)
{
    if (dim < 1)
        return NULL;
    es_obstat_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->dim = dim;
    self->count = ES_OBSTAT_EPS;
    self->sum = calloc((size_t)dim, sizeof(double));
    self->sumsq = calloc((size_t)dim, sizeof(double));
    if (!self->sum || !self->sumsq) {
        es_obstat_destroy(&self);
        return NULL;
    }
    for (int i = 0; i < dim; i++)
        self->sumsq[i] = ES_OBSTAT_EPS;
    return self;
}

void
es_obstat_destroy(es_obstat_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->sum);
    free((*self_p)->sumsq);
    free(*self_p);
    *self_p = NULL;
}

void
es_obstat_add(es_obstat_t *self, const double *sum, const double *sumsq, double count)
{
    for (int i = 0; i < self->dim; i++) {
        self->sum[i] += sum[i];
        self->sumsq[i] += sumsq[i];
    }
    self->count += count;
}

void
es_obstat_get(const es_obstat_t *self, float *mean, float *std)
{
    for (int i = 0; i < self->dim; i++) {
        double m = self->sum[i] / self->count;
        double var = self->sumsq[i] / self->count - m * m;
        mean[i] = (float)m;
        std[i] = (float)sqrt(var > ES_OBSTAT_EPS ? var : ES_OBSTAT_EPS);
    }
}

void
es_obs_normalise(int dim, const double *obs, const float *mean, const float *std, float *x)
{
    for (int i = 0; i < dim; i++) {
        float v = (float)obs[i];
        if (mean) {
            v = (v - mean[i]) / std[i];
            v = v < -ES_OBS_CLIP ? -ES_OBS_CLIP : v > ES_OBS_CLIP ? ES_OBS_CLIP : v;
        }
        x[i] = v;
    }
}

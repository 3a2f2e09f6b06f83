/*  es_adam - the Adam update; see es_adam.h for the equations. */
#include "es_adam.h"

#include <math.h>
#include <stdlib.h>

es_adam_t *
es_adam_new(size_t n, double lr, double beta1, double beta2, double eps)
{
    if (n == 0)
        return NULL;
    es_adam_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->n = n;
    self->lr = lr;
    self->beta1 = beta1;
    self->beta2 = beta2;
    self->eps = eps;
    self->m = calloc(n, sizeof(double));
    self->v = calloc(n, sizeof(double));
    if (!self->m || !self->v)
        es_adam_destroy(&self);
    return self;
}

void
es_adam_destroy(es_adam_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->m);
    free((*self_p)->v);
    free(*self_p);
    *self_p = NULL;
}

void
es_adam_step(es_adam_t *self, float *theta, const double *grad)
{
    self->t++;
    double t = (double)self->t;
    double a = self->lr * sqrt(1.0 - pow(self->beta2, t)) / (1.0 - pow(self->beta1, t));
    for (size_t i = 0; i < self->n; i++) {
        double g = grad[i];
        self->m[i] = self->beta1 * self->m[i] + (1.0 - self->beta1) * g;
        self->v[i] = self->beta2 * self->v[i] + (1.0 - self->beta2) * (g * g);
        theta[i] = (float)((double)theta[i] - a * self->m[i] / (sqrt(self->v[i]) + self->eps));
    }
}

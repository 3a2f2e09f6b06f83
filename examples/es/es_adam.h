/*  es_adam - the Adam optimiser (Kingma and Ba, "Adam: a method for
    stochastic optimization", 2015), as ES uses it.

    After step t (counting from 1), for gradient g of a loss to minimise:

        m     = beta1 m + (1 - beta1) g
        v     = beta2 v + (1 - beta2) g^2
        a     = lr sqrt(1 - beta2^t) / (1 - beta1^t)
        theta = theta - a m / (sqrt(v) + eps)

    (the bias corrections folded into the step size, as in the paper's
    section 2 "efficient version" and Salimans et al.'s code). The moments
    are kept in double; theta is float32 because that is what rollouts read.
*/
#ifndef ES_ADAM_H_INCLUDED
#define ES_ADAM_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t n;     /* parameters */
    uint64_t t;   /* steps taken */
    double lr;    /* step size */
    double beta1; /* first moment decay */
    double beta2; /* second moment decay */
    double eps;   /* denominator guard */
    double *m;    /* first moment, n values, owned */
    double *v;    /* second moment, n values, owned */
} es_adam_t;

/* An optimiser for n parameters, moments zero; NULL when out of memory. */
es_adam_t *es_adam_new(size_t n, double lr, double beta1, double beta2, double eps);

void es_adam_destroy(es_adam_t **self_p);

/* One step: move theta (n floats) against grad (n doubles). */
void es_adam_step(es_adam_t *self, float *theta, const double *grad);

#endif

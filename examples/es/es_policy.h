/*  es_policy - the policy: a small multilayer perceptron over one flat
    float32 parameter vector.

    obs (normalised) -> [dense -> tanh] x n_hidden -> dense -> action

    The hidden layers' tanh is a rational approximation (es_policy.c) made
    of plain arithmetic, so a forward pass gives the same bits everywhere.
    Discrete environments take the argmax of the outputs (one per action,
    ties to the lowest index); continuous ones take act_bound * tanh(output).
    The parameters are laid out layer after layer, each as its weight matrix
    W[in][out] (row i holds the weights from input i to every output) then
    its bias b[out]; ES only ever sees the flat vector.

    es_policy_t is a value: the shape, no weights, no pointers. Forward
    passes use a scratch buffer on the stack, so they may run in any number
    of threads at once over shared read-only weights.
*/
#ifndef ES_POLICY_H_INCLUDED
#define ES_POLICY_H_INCLUDED

#include "env.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ES_POLICY_MAX_HIDDEN 4  /* hidden layers */
#define ES_POLICY_MAX_WIDTH 256 /* units in any layer, inputs and outputs included */

typedef struct {
    int n_hidden;                       /* hidden layers, 0..ES_POLICY_MAX_HIDDEN */
    int dims[ES_POLICY_MAX_HIDDEN + 2]; /* dims[0] inputs, then each layer's outputs */
    size_t n_params;                    /* length of the flat parameter vector */
    bool continuous;                    /* outputs -> action: tanh-scaled or argmax */
    double act_bound;                   /* continuous: the action bound */
} es_policy_t;

/* Shape a policy for env with n_hidden hidden layers of the given widths.
   0, or LUX_EINVAL when a size is out of range. */
int es_policy_init(es_policy_t *p, const es_env_t *env, int n_hidden, const int *widths);

/* Initial weights from seed: each unit's incoming weights are normal,
   scaled to norm 1 (hidden layers) or 0.01 (output layer), biases zero
   (the "normc" initialisation of Salimans et al.'s code): outputs start
   near zero, so the first policy is close to uniform. */
void es_policy_init_weights(const es_policy_t *p, float *theta, uint64_t seed);

/* Outputs of the network for input x (dims[0] floats) into out
   (dims[n_hidden + 1] floats). */
void es_policy_forward(const es_policy_t *p, const float *theta, const float *x, float *out);

/* The hidden layers' squashing function (a rational tanh), as the
   forward pass computes it. */
float es_policy_squash(float x);

/* The action for input x: *index for discrete policies, u[0..outputs) for
   continuous ones. */
void es_policy_act(const es_policy_t *p, const float *theta, const float *x, int *index, double *u);

#endif

/*  env_cartpole - CartPole-v1, as Gymnasium defines it.

    A pole is hinged on a cart that moves along a frictionless track; each
    step pushes the cart left (action 0) or right (action 1) with a fixed
    force. The constants, the equations of motion (Florian, "Correct
    equations for the dynamics of the cart-pole system", 2007, as coded in
    Gymnasium's classic_control/cartpole.py), the explicit Euler integrator
    ("euler" kinematics), the termination test and the reward are
    Gymnasium's; t/7001-es-env.c checks them step by step against values
    from an independent transcription (examples/es/gym_ref.py).

    Observation: x, x_dot, theta, theta_dot (the state itself).
    Reward: 1 for every step, the terminating one included.
    Ends: |x| > 2.4 or |theta| > 12 degrees (terminated), or 500 steps
    (truncated, the TimeLimit of CartPole-v1). Solved: mean return 475 over
    100 episodes. Initial state: each component uniform in [-0.05, 0.05).
    The random stream is this file's own; Gymnasium's numpy generator would
    give other initial states for the same seed.
*/
#include "env.h"
#include "es_rng.h"

#include <math.h>

/* Gymnasium's constants. */
#define GRAVITY 9.8
#define MASSCART 1.0
#define MASSPOLE 0.1
#define TOTAL_MASS (MASSPOLE + MASSCART)
#define LENGTH 0.5 /* half the pole's length */
#define POLEMASS_LENGTH (MASSPOLE * LENGTH)
#define FORCE_MAG 10.0
#define TAU 0.02 /* seconds between state updates */
#define THETA_THRESHOLD (12 * 2 * M_PI / 360)
#define X_THRESHOLD 2.4
#define MAX_STEPS 500
#define RESET_BOUND 0.05

typedef struct {
    double x, x_dot, theta, theta_dot; /* the physical state */
    int steps;                         /* steps taken in this episode */
    int done;                          /* es_env_status_t once the episode ended, else 0 */
} s_state_t;

static void
s_reset(void *st, uint64_t seed)
{
    s_state_t *s = st;
    es_rng_t r;
    es_rng_seed(&r, seed);
    s->x = es_rng_range(&r, -RESET_BOUND, RESET_BOUND);
    s->x_dot = es_rng_range(&r, -RESET_BOUND, RESET_BOUND);
    s->theta = es_rng_range(&r, -RESET_BOUND, RESET_BOUND);
    s->theta_dot = es_rng_range(&r, -RESET_BOUND, RESET_BOUND);
    s->steps = 0;
    s->done = ES_ENV_RUNNING;
}

static es_env_status_t
s_step(void *st, const es_action_t *a, double *reward)
{
    s_state_t *s = st;
    if (s->done) {
        *reward = 0.0;
        return s->done;
    }
    double force = a->index == 1 ? FORCE_MAG : -FORCE_MAG;
    double costheta = cos(s->theta);
    double sintheta = sin(s->theta);
    /* Same operations in the same order as Gymnasium, so that the doubles
       agree to the last bit where the maths library does. */
    double temp = (force + POLEMASS_LENGTH * (s->theta_dot * s->theta_dot) * sintheta) / TOTAL_MASS;
    double thetaacc = (GRAVITY * sintheta - costheta * temp) /
                      (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
    double xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
    s->x = s->x + TAU * s->x_dot;
    s->x_dot = s->x_dot + TAU * xacc;
    s->theta = s->theta + TAU * s->theta_dot;
    s->theta_dot = s->theta_dot + TAU * thetaacc;
    s->steps++;

    *reward = 1.0;
    if (s->x < -X_THRESHOLD || s->x > X_THRESHOLD || s->theta < -THETA_THRESHOLD ||
        s->theta > THETA_THRESHOLD)
        s->done = ES_ENV_TERMINATED;
    else if (s->steps >= MAX_STEPS)
        s->done = ES_ENV_TRUNCATED;
    return s->done;
}

static void
s_observe(const void *st, double *obs)
{
    const s_state_t *s = st;
    obs[0] = s->x;
    obs[1] = s->x_dot;
    obs[2] = s->theta;
    obs[3] = s->theta_dot;
}

static void
s_set_state(void *st, const double *v)
{
    s_state_t *s = st;
    s->x = v[0];
    s->x_dot = v[1];
    s->theta = v[2];
    s->theta_dot = v[3];
    s->steps = 0;
    s->done = ES_ENV_RUNNING;
}

const es_env_t es_env_cartpole = {
    .name = "cartpole",
    .gym_id = "CartPole-v1",
    .obs_dim = 4,
    .act_dim = 2,
    .continuous = false,
    .act_bound = 0.0,
    .max_episode_steps = MAX_STEPS,
    .solved_return = 475.0,
    .solved_episodes = 100,
    .state_dim = 4,
    .state_size = sizeof(s_state_t),
    .reset = s_reset,
    .step = s_step,
    .observe = s_observe,
    .get_state = s_observe,
    .set_state = s_set_state,
};

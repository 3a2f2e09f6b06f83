/*  env_pendulum - Pendulum-v1, as Gymnasium defines it.

    An inverted pendulum on a motor: swing it up and hold it upright with a
    bounded torque. Constants and equations are Gymnasium's
    (classic_control/pendulum.py); t/7001-es-env.c checks them step by step
    against examples/es/gym_ref.py.

      u       = clip(u, -2, 2)
      cost    = angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2
      thdot'  = clip(thdot + (3g/(2l) sin(th) + 3/(m l^2) u) dt, -8, 8)
      th'     = th + thdot' dt
      reward  = -cost   (of the state before the step)

    with g = 10, m = 1, l = 1, dt = 0.05 and angle_normalize(x) =
    ((x + pi) mod 2pi) - pi, the modulo taking the sign of the divisor as in
    Python. th itself is never wrapped (it winds up as the pendulum spins);
    only the cost sees the normalised angle, the policy sees cos and sin.

    Observation: cos th, sin th, thdot. Ends: never terminates; truncated at
    200 steps. Initial state: th uniform in [-pi, pi), thdot in [-1, 1).
    There is no official solved score; -200 mean over 100 episodes is the
    target used here (good policies reach about -150).
*/
#include "env.h"
#include "es_rng.h"

#include <math.h>

#define MAX_SPEED 8.0
#define MAX_TORQUE 2.0
#define DT 0.05
#define G 10.0
#define M 1.0
#define L 1.0
#define MAX_STEPS 200

typedef struct {
    double th, thdot; /* angle (0 = upright, unwrapped) and angular velocity */
    int steps;        /* steps taken in this episode */
    int done;         /* es_env_status_t once the episode ended, else 0 */
} s_state_t;

static double
s_clip(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ((x + pi) % (2 pi)) - pi with Python's float %: fmod, then moved into
   the divisor's sign, exactly as CPython and numpy do. */
static double
s_angle_normalize(double x)
{
    double two_pi = 2 * M_PI;
    double m = fmod(x + M_PI, two_pi);
    if (m != 0.0 && m < 0.0)
        m += two_pi;
    return m - M_PI;
}

static void
s_reset(void *st, uint64_t seed)
{
    s_state_t *s = st;
    es_rng_t r;
    es_rng_seed(&r, seed);
    s->th = es_rng_range(&r, -M_PI, M_PI);
    s->thdot = es_rng_range(&r, -1.0, 1.0);
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
    double u = s_clip(a->u[0], -MAX_TORQUE, MAX_TORQUE);
    double an = s_angle_normalize(s->th);
    double costs = an * an + 0.1 * (s->thdot * s->thdot) + 0.001 * (u * u);
    double newthdot = s->thdot + (3 * G / (2 * L) * sin(s->th) + 3.0 / (M * (L * L)) * u) * DT;
    newthdot = s_clip(newthdot, -MAX_SPEED, MAX_SPEED);
    s->th = s->th + newthdot * DT;
    s->thdot = newthdot;
    s->steps++;
    *reward = -costs;
    if (s->steps >= MAX_STEPS)
        s->done = ES_ENV_TRUNCATED;
    return s->done;
}

static void
s_observe(const void *st, double *obs)
{
    const s_state_t *s = st;
    obs[0] = cos(s->th);
    obs[1] = sin(s->th);
    obs[2] = s->thdot;
}

static void
s_get_state(const void *st, double *v)
{
    const s_state_t *s = st;
    v[0] = s->th;
    v[1] = s->thdot;
}

static void
s_set_state(void *st, const double *v)
{
    s_state_t *s = st;
    s->th = v[0];
    s->thdot = v[1];
    s->steps = 0;
    s->done = ES_ENV_RUNNING;
}

const es_env_t es_env_pendulum = {
    .name = "pendulum",
    .gym_id = "Pendulum-v1",
    .obs_dim = 3,
    .act_dim = 1,
    .continuous = true,
    .act_bound = MAX_TORQUE,
    .max_episode_steps = MAX_STEPS,
    .solved_return = -200.0,
    .solved_episodes = 100,
    .state_dim = 2,
    .state_size = sizeof(s_state_t),
    .reset = s_reset,
    .step = s_step,
    .observe = s_observe,
    .get_state = s_get_state,
    .set_state = s_set_state,
};

/*  env - the environments ES trains on, behind one small interface.

    An environment is a constant descriptor (es_env_t): its shape (what it
    observes, what it accepts), its episode limits and the score that counts
    as solved, and four functions over a state blob that the caller owns.
    The state is plain bytes of env->state_size, holding the physics, the
    step counter (Gymnasium's TimeLimit wrapper) and nothing else: no
    pointers, no global state, so a worker can keep one per thread, copy it,
    or throw it away. Randomness comes only from the seed given to reset().

    Episodes: reset(seed), then step() until it returns nonzero, reading
    observe() after reset and after each step. Stepping a finished episode is
    harmless: it returns the same status again with reward 0.

    Adding an environment (MuJoCo, Box2D): write env_NAME.c defining a
    const es_env_t, add it to the list in env.c. One that needs a loaded
    model can keep it read-only behind a static pointer set up once per
    process; per-episode data goes in the state blob.
*/
#ifndef ES_ENV_H_INCLUDED
#define ES_ENV_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What step() returns. Gymnasium's "terminated" (the task ended: the pole
   fell) and "truncated" (the time limit cut it) both end an episode; ES
   treats them the same, the distinction is kept for tests and logs. */
typedef enum {
    ES_ENV_RUNNING = 0,
    ES_ENV_TERMINATED = 1,
    ES_ENV_TRUNCATED = 2,
} es_env_status_t;

/* One action: discrete environments read index (0..act_dim-1), continuous
   ones read u[0..act_dim-1]. */
typedef struct {
    int index;       /* discrete action */
    const double *u; /* continuous action, act_dim values; may be out of bounds */
} es_action_t;

typedef struct es_env {
    const char *name;      /* short name for command lines: "cartpole" */
    const char *gym_id;    /* the Gymnasium environment it follows: "CartPole-v1" */
    int obs_dim;           /* length of the observation vector */
    int act_dim;           /* continuous: action vector length; discrete: number of actions */
    bool continuous;       /* continuous (Box) or discrete actions */
    double act_bound;      /* continuous: the env clips actions to [-act_bound, act_bound] */
    int max_episode_steps; /* truncation limit */
    double solved_return;  /* mean return that counts as solved... */
    int solved_episodes;   /* ...over this many evaluation episodes */
    int state_dim;         /* doubles in the physical state, for get_state/set_state */
    size_t state_size;     /* bytes of one state blob */

    /* Start an episode: the initial state is a pure function of seed. */
    void (*reset)(void *st, uint64_t seed);
    /* Advance one step; *reward gets the step's reward. */
    es_env_status_t (*step)(void *st, const es_action_t *a, double *reward);
    /* The observation, obs_dim doubles (Gymnasium returns them as float32;
       the policy rounds them to float the same way). */
    void (*observe)(const void *st, double *obs);
    /* The physical state as state_dim doubles, and back (setting it also
       starts a new episode: step counter zero). For tests and debugging. */
    void (*get_state)(const void *st, double *s);
    void (*set_state)(void *st, const double *s);
} es_env_t;

extern const es_env_t es_env_cartpole;
extern const es_env_t es_env_pendulum;

/* The environment called name (its short name or Gymnasium id, any case);
   NULL when there is none. */
const es_env_t *es_env_find(const char *name);

/* The known environments, NULL-terminated. */
extern const es_env_t *const es_envs[];

#endif

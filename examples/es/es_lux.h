/*  es_lux - Evolution Strategies on Lux: the module es.so.

    The data flow of Salimans et al. (2017), with Lux objects and tasks:

      driver, once      the noise table (64 MiB) is built and lux_put once;
                        every task reads it in place in the node's
                        shared-memory store (a ref argument), never copied
      each iteration    the policy (shape, weights, frozen observation
                        statistics: a few hundred floats) is lux_put once
                        and passed by ref to every task of the iteration;
                        es_rollouts tasks evaluate antithetic pairs named by
                        (iteration, rollout, noise index, env seed) and
                        return only es_result_t records: indices, the two
                        returns, lengths and observation sums; the driver
                        ranks the returns, rebuilds the gradient from the
                        noise indices and takes an Adam step (es_update)
      evaluation        es_evaluate tasks play the unperturbed policy on
                        numbered episodes; the driver sums them in order

    The tasks of an iteration on the driver's machine share their rollouts
    through a board in shared memory (es_lux_board.c): one done with its
    own computes those another has not started, so they end together, and
    each still returns the results of its own rollouts, the same bytes.

    Every task is pure (its bytes depend on its arguments only), so a task
    retried after its worker died, or rebuilt from the log, gives the same
    bytes; es_update orders results by rollout number. The final weights are
    therefore bit-identical for any number of workers, any task size, with
    or without workers killed, and equal to es_local's for the same settings.

    With --ps the ES state lives in a parameter-server actor instead of the
    driver, and rollout tasks pull the weights from it and push their
    results to it (below, "the parameter-server variant"); the weights are
    the same.

    Files: es_lux.h (this: the formats tasks exchange), es_lux_tasks.c (the
    remote functions, the formats' code), es_lux_board.c (the board),
    es_lux_ps.c (--ps: the actor class EsServer and its rollout task),
    es_lux_main.c (LUX_CONFIGURE and LUX_MAIN: the driver), es_lux_kill.c
    (--kill-workers), es_lux_report.c (the closing report, SQL over the
    run's log).
*/
#ifndef ES_LUX_H_INCLUDED
#define ES_LUX_H_INCLUDED

#include "env.h"
#include "es.h"
#include "es_policy.h"
#include "es_rollout.h"
#include "lux.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --- the policy object (lux_put once per iteration) ----------------------------------
   An es_lux_policy_t header, then n_params floats of weights, then, when
   obs_dim > 0, obs_dim floats of observation mean and obs_dim of std.
   Native byte order: every process of a node shares the machine. */

#define ES_LUX_MAGIC 0x3153454cu /* "LES1" */

typedef struct {
    uint32_t magic;                       /* ES_LUX_MAGIC */
    uint32_t n_params;                    /* floats of weights that follow */
    char env[16];                         /* the environment's short name, NUL-padded */
    int32_t n_hidden;                     /* the policy's shape: hidden layers */
    int32_t hidden[ES_POLICY_MAX_HIDDEN]; /* and their widths */
    int32_t episodes;                     /* episodes per perturbation */
    float sigma;                          /* perturbation scale */
    uint32_t obs_dim;                     /* 0: no observation statistics follow */
    uint32_t reserved[2];                 /* zero */
    uint64_t iter;                        /* the iteration these weights start */
    uint64_t noise_len;                   /* floats in the noise table */
    char board[40];                       /* the driver's board (below), or "" */
    uint8_t board_id[16];                 /* ...and its ID */
} es_lux_policy_t;

/* Bytes of a policy object. */
size_t es_lux_policy_size(uint32_t n_params, uint32_t obs_dim);

/* Write a policy object into buf (es_lux_policy_size bytes). obs_mean and
   obs_std NULL: none. */
void es_lux_policy_write(void *buf, const char *env, const es_policy_t *pol, int episodes,
                         float sigma, uint64_t iter, size_t noise_len, const float *theta,
                         int obs_dim, const float *obs_mean, const float *obs_std);

/* A policy object read back: the context a rollout needs. */
typedef struct {
    es_lux_policy_t h;   /* the header, copied */
    es_policy_t policy;  /* the shape */
    es_ctx_t ctx;        /* pointers into the object, or into own (below) */
    float *own;          /* an aligned copy when the bytes were not aligned */
} es_lux_view_t;

/* Check a policy object of n bytes at p and set v up to read it (noise
   and noise_len go into v->ctx). 0, or LUX_EINVAL with why (len bytes)
   set, or LUX_ENOMEM. es_lux_view_free() after. */
int es_lux_view(es_lux_view_t *v, const void *p, size_t n, const float *noise, size_t noise_len,
                char *why, size_t len);
void es_lux_view_free(es_lux_view_t *v);

/* --- the remote functions ----------------------------------------------------------
   es_rollouts(noise, policy, tasks) -> results
       noise   ref of the noise table (floats)
       policy  ref of the policy object
       tasks   a value: es_task_t[count]
       results es_result_t records of es_result_size(obs_dim) bytes, in the
               order of tasks
   es_evaluate(policy, spec) -> returns
       spec    a value: es_lux_eval_t
       returns count doubles (episode returns), then count uint64 (lengths) */

typedef struct {
    uint64_t seed;  /* the run seed (episode k starts from es_eval_seed(seed, iter, k)) */
    uint64_t iter;  /* the evaluation after this many iterations */
    uint32_t first; /* episodes first .. first + count - 1 */
    uint32_t count;
} es_lux_eval_t;

/* --- the tasks of an iteration share their rollouts (es_lux_board.c) --------------
   The driver makes a board (a small shared-memory file) and names it in each
   policy object; es_rollouts tasks on the driver's machine post their
   rollouts there, take each other's once their own are done, and so end
   together, as threads taking rollouts from a counter do. A task returns
   the same bytes with or without the board (es_lux_board.c says how). */
typedef struct es_board es_board_t;

/* A board for iterations of pop rollouts with results of rs bytes. NULL
   with why set (len bytes) on failure. */
es_board_t *es_board_new(size_t pop, size_t rs, char *why, size_t len);
/* Name the board in a policy object (written by es_lux_policy_write). */
void es_board_stamp(const es_board_t *b, void *policy);
/* How many rollouts of iteration iter a task other than their own
   computed (read after the iteration's tasks are done). */
uint64_t es_board_helped(const es_board_t *b, uint64_t iter);
void es_board_destroy(es_board_t **b_p);

/* A task: the count rollouts t into out (rs bytes each, in order), with
   the board that policy p names when there is one. 0, or es_rollout's
   error for rollout *failed. */
int es_board_rollouts(const es_lux_policy_t *p, const es_ctx_t *ctx, const es_task_t *t,
                      size_t count, uint8_t *out, size_t rs, size_t *failed);

/* --- the parameter-server variant (--ps; es_lux_ps.c) -------------------------------
   The ES state (weights, Adam, observation statistics) lives in an actor of
   class EsServer instead of the driver. Each iteration the driver submits
   es_ps_rollouts tasks holding the server's handle; each pulls the
   iteration's policy object from the server, evaluates its pairs and
   pushes the es_result_t records back; once every task is done the driver
   asks the server to update, and the server ranks the returns and takes the
   Adam step with es_update (results placed by rollout number, so the
   arrival order of pushes changes nothing: the weights are those of the
   task variant and es_local).

   EsServer(init)                 init: an es_lux_ps_init_t value
     .pull(iter) -> policy        iter: u64; the policy object (as above) of
                                  iteration iter; empty when the server is
                                  past it already (its results are in)
     .push(results) -> held       results: es_result_t records of the current
                                  iteration; held: u64, how many of its
                                  rollouts the server has now. A result the
                                  server has already (a retried task) must be
                                  the same bytes, and is counted, not used
                                  again; one of a past iteration is ignored.
     .update(iter) -> stats, policy
                                  with all population results of iteration
                                  iter in: es_update; stats an
                                  es_lux_ps_stats_t, policy the policy object
                                  of iteration iter + 1
     .pid() -> pid                i64: the server's process (--kill-server)
   es_ps_rollouts(server, noise, tasks) -> count
       server  a value: the lux_actor_t handle
       noise   ref of the noise table
       tasks   a value: es_task_t[count], all of one iteration
       count   u64: the rollouts now on the server (the same bytes however
               the task ran: a retry, or a rebuild after the iteration) */

#define ES_LUX_PS_MAGIC 0x3153504cu /* "LPS1" */

typedef struct {
    uint32_t magic;                       /* ES_LUX_PS_MAGIC */
    uint32_t reserved;                    /* zero */
    es_config_t es;                       /* the ES settings (seed, population, Adam...) */
    char env[16];                         /* the environment's short name, NUL-padded */
    int32_t n_hidden;                     /* the policy's shape */
    int32_t hidden[ES_POLICY_MAX_HIDDEN];
    uint64_t noise_len;                   /* floats in the noise table */
    lux_ref_t noise;                      /* the noise table (the server lux_gets it) */
} es_lux_ps_init_t;

typedef struct {
    es_stats_t st;       /* what es_update saw */
    uint64_t pushes;     /* push calls the server has applied, in all */
    uint64_t duplicates; /* results pushed again (by retried tasks), in all */
} es_lux_ps_stats_t;

/* Fill init for the run (zeroed first: the bytes go into the log). */
void es_lux_ps_init(es_lux_ps_init_t *init, const es_config_t *cfg, const char *env,
                    const es_policy_t *pol, size_t noise_len, const lux_ref_t *noise);

/* --- the driver's helpers ------------------------------------------------------------ */

/* --kill-workers: a thread that kills this process's worker children
   (kill -9, by PID) at random intervals. */
typedef struct es_lux_killer es_lux_killer_t;
/* Start killing every min_ms..max_ms, choosing with seed. NULL on failure. */
es_lux_killer_t *es_lux_killer_start(uint64_t seed, int min_ms, int max_ms);
/* Tell the killer the run went on (an iteration ended): after its first
   kill it kills again only once told, so that however slowly the machine
   runs, every kill is followed by progress and no task is killed on each
   of its attempts. */
void es_lux_killer_progress(es_lux_killer_t *k);
/* Stop; returns how many workers it killed. */
int es_lux_killer_stop(es_lux_killer_t **self_p);
/* This process's worker children now (PIDs into pids, at most max). */
int es_lux_workers(int *pids, int max);

/* The closing report: waits (up to timeout_ms) until the log holds the
   outcome of `tasks` tasks of job, then prints tasks per function, time
   spent, the workers and the retries, each with its SQL, on f, and queries
   to try (task: a task ID, 32 hex digits, for an example; or NULL; actor:
   the parameter server's ID, whose calls and restarts are shown too; or
   NULL). 0, or -1 when the log could not be read (said on f). */
int es_lux_report(FILE *f, const char *dir, const char *job, long tasks, const char *task,
                  const char *actor, int timeout_ms);

#endif

/*  es_opts - the settings of one ES run and their command line, shared by
    the two trainers: es_local (one process, threads) and es.so (the Lux
    module, tasks on workers).

    One home for the per-environment defaults (the README explains them)
    and for the options that change the algorithm, so that the same command
    line gives both trainers the same run: the same seed and settings end
    with the same weights in either (t/7101-es-dist.sh checks it). Options
    that only say how a run is carried out (threads, workers, tasks per
    iteration, killing workers) never change its result.
*/
#ifndef ES_OPTS_H_INCLUDED
#define ES_OPTS_H_INCLUDED

#include "env.h"
#include "es.h"
#include "es_policy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Which program parses: the options each accepts beyond the common ones. */
enum {
    ES_OPTS_LOCAL = 1, /* es_local: --threads */
    ES_OPTS_LUX = 2,   /* es.so: --workers, --kill-workers, --tasks, --eval-tasks, --no-report,
                          --ps, --kill-server, --checkpoint-every */
};

typedef struct {
    const es_env_t *env;              /* what to train on */
    es_config_t es;                   /* the ES settings */
    int n_hidden;                     /* hidden layers */
    int hidden[ES_POLICY_MAX_HIDDEN]; /* their widths */
    size_t noise_len;                 /* noise table floats */
    uint64_t noise_seed;              /* noise table seed */
    long max_iters;                   /* stop after this many iterations (0: no limit) */
    double max_seconds;               /* stop after this long (0: no limit) */
    int eval_every;                   /* evaluate the unperturbed policy this often */
    int eval_episodes;                /* episodes per evaluation */
    double target;                    /* the evaluation mean that counts as solved */
    bool json;                        /* end with a JSON summary on stdout */
    int progress;                     /* -1: when a terminal, 0 never, 1 always */
    /* es_local */
    int threads;                      /* evaluating threads */
    /* es.so */
    int workers;                      /* worker processes (0: the cluster's default) */
    bool kill_workers;                /* kill workers at random while training */
    int tasks;                        /* rollout tasks per iteration (0: automatic) */
    int eval_tasks;                   /* tasks per evaluation (0: automatic) */
    bool balance;                     /* size the rollout tasks by their slots' speed (es_split.h) */
    bool board;                       /* tasks share rollouts through a board (es_lux_board.c) */
    bool report;                      /* the closing report from the log */
    bool ps;                          /* the state in a parameter-server actor */
    bool kill_server;                 /* --ps: kill -9 the server's process now and then */
    int checkpoint_every;             /* --ps: the server's calls between checkpoints */
} es_opts_t;

/* Parse argv (argv[0] is the program or module) into o for program
   `prog`, which accepts the options of `which` (ES_OPTS_*). Returns 0;
   or 2 after printing why on stderr; --help prints the usage on stdout
   and returns -1. */
int es_opts_parse(es_opts_t *o, int argc, char **argv, const char *prog, int which);

/* The usage of program prog (its options per which) on f. */
void es_opts_usage(FILE *f, const char *prog, int which);

/* Seconds on the monotonic clock: what every trainer times its run with. */
double es_opts_now(void);

#endif

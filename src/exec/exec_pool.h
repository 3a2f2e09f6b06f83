/*  exec_pool - the worker pool and its resources (see exec_pool.c). */
#ifndef EXEC_POOL_H_INCLUDED
#define EXEC_POOL_H_INCLUDED

#include "exec_node_int.h"

/* Parse "CPU=2,GPU=1" into nm->res; CPU first. 0 or LUX_EINVAL. */
int nm_parse_resources(nm_t *nm, const char *spec);
/* What t needs (per nm->res) into needs: false, with why, when this node
   can never give it. */
bool nm_res_needs(nm_t *nm, const nm_task_t *t, int64_t *needs, char *why, size_t n);
/* Whether needs fit in what is free now. */
bool nm_res_fits(nm_t *nm, const int64_t *needs);
/* Take (sign 1) or give back (-1) needs. */
void nm_res_take(nm_t *nm, const int64_t *needs, int sign);

/* A worker of kind NM_SPAWN_*, first in nm->workers. 0 or a code. */
int nm_spawn_worker(nm_t *nm, int kind);
/* An actor's worker, hosting a. 0 or a code. */
int nm_spawn_actor_worker(nm_t *nm, nm_actor_t *a);
/* Workers whose process ended are handed to nm_worker_gone (a pool one
   replaced); one that never said hello within 30 s is killed. */
void nm_reap_workers(nm_t *nm);
/* The end of a worker gone: its client goes too, then the worker. */
void nm_pool_worker_free(nm_t *nm, nm_worker_t *w);
/* An idle pool worker that said hello, or NULL. */
nm_worker_t *nm_pool_idle(nm_t *nm);
/* Extra workers idle long enough, with none blocked, are told to go. */
void nm_pool_retire_extras(nm_t *nm);

#endif

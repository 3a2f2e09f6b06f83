/*  exec_node_cpu - where and how the node manager's workers run: task
    workers SCHED_BATCH, pool workers each bound to a CPU of its own (see
    exec_node_cpu.c).
*/
#ifndef EXEC_NODE_CPU_H_INCLUDED
#define EXEC_NODE_CPU_H_INCLUDED

#include "exec_node_int.h"

/* Decide which CPUs the pool's workers are bound to (LUX_PIN_WORKERS). */
void nm_cpu_setup(nm_t *nm);

/* Set a worker just started (kind NM_SPAWN_*) on its way: a task worker
   SCHED_BATCH, a pool worker bound to a CPU no other one has. */
void nm_cpu_place(nm_t *nm, nm_worker_t *w, int kind);

#endif

/*  exec_node_gpu - which of the node's GPUs each task and actor holds
    (see exec_node_gpu.c). */
#ifndef EXEC_NODE_GPU_H_INCLUDED
#define EXEC_NODE_GPU_H_INCLUDED

#include "exec_node_int.h"

/* After nm_parse_resources: the ids behind the GPU resource (those found
   here, else 0..n-1). 0. */
int nm_gpu_setup(nm_t *nm);
/* Take the GPUs needs asks for (after nm_res_fits and nm_res_take): a
   mask of slots, 0 when it asks for none. */
uint64_t nm_gpu_take(nm_t *nm, const int64_t *needs);
/* Give back the GPUs of mask. */
void nm_gpu_give(nm_t *nm, uint64_t mask);
/* Fill run's ngpus and gpus from mask (EXEC_GPUS_NONE on a node without
   GPUs). */
void nm_gpu_run(nm_t *nm, uint64_t mask, exec_run_t *run);
/* A pool worker whose task held GPUs and has ended gives them back; it
   is told to go (a process that initialised CUDA keeps the devices it
   saw first), and the pool starts another. */
void nm_gpu_done(nm_t *nm, nm_worker_t *w);

#endif

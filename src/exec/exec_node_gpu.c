/*  exec_node_gpu - which of the node's GPUs each task and actor holds.

    The GPU resource is counted like any other (exec_pool.c, in
    thousandths), and besides that each GPU has an id (its index as
    CUDA_VISIBLE_DEVICES names it: those exec_gpu_detect found, or 0..n-1
    when --resources said GPU=n on a machine where fewer were found). A
    task's GPUs are taken at dispatch, with its resources, into its
    worker's mask (nm_worker_t.gpus); an actor's when it starts, for its
    life (nm_actor_t.gpus). Every run handed to a worker carries the ids
    its holder has; the worker sets CUDA_VISIBLE_DEVICES to them before
    the function runs ("" for a run holding none, so a task that asked for
    no GPU cannot take one that another holds) and lux_gpu_ids() answers
    them. GPUs are whole: GPU=0.5 holds one GPU, as GPU=1 does
    (nm_res_needs rounds up), so two holders never share a device. A blocked task (lux_get inside it)
    lends its CPUs but keeps its GPUs: its memory on the device stays.

    A pool worker that ran a task holding GPUs leaves after it
    (nm_gpu_done) and the pool starts a fresh one: CUDA reads
    CUDA_VISIBLE_DEVICES once, when a process first uses it, so a worker
    reused for a task on another GPU would still see the first one (Ray
    retires such workers the same way). An actor's process keeps its GPUs
    for its whole life, so it needs nothing of the kind.
*/
#include "exec_node_gpu.h"
#include "exec_gpu.h"
#include "../util/util_log.h"

#include <signal.h>
#include <string.h>

/* The index of the GPU resource in nm->res, or -1. */
static int
s_res(nm_t *nm)
{
    for (int i = 1; i < nm->nres; i++)
        if (strcmp(nm->res[i].name, "GPU") == 0)
            return i;
    return -1;
}

int
nm_gpu_setup(nm_t *nm)
{
    int k = s_res(nm);
    nm->gpu_res = k;
    nm->ngpu = 0;
    nm->gpu_busy = 0;
    if (k < 0)
        return 0;
    int64_t n = nm->res[k].total / 1000;
    if (n > EXEC_RUN_GPUS)
        n = EXEC_RUN_GPUS;
    /* whole GPUs only: GPU=1.5 is one GPU */
    nm->res[k].total = nm->res[k].free = n * 1000;
    int found[EXEC_GPU_MAX];
    int nf = exec_gpu_detect(found, EXEC_GPU_MAX);
    for (int i = 0; i < n; i++)
        nm->gpu_ids[i] = (uint16_t) (i < nf ? found[i] : i);
    nm->ngpu = (int) n;
    return 0;
}

uint64_t
nm_gpu_take(nm_t *nm, const int64_t *needs)
{
    int k = nm->gpu_res;
    if (k < 0 || needs[k] <= 0)
        return 0;
    int64_t want = needs[k] / 1000;
    uint64_t mask = 0;
    for (int i = 0; i < nm->ngpu && want > 0; i++)
        if (!(nm->gpu_busy & (1ULL << i))) {
            mask |= 1ULL << i;
            want--;
        }
    if (want > 0) /* the count said they were free: a bug, said loudly */
        log_error("GPU ids: %lld asked for, too few free (busy mask %#llx)",
                  (long long) (needs[k] / 1000), (unsigned long long) nm->gpu_busy);
    nm->gpu_busy |= mask;
    return mask;
}

void
nm_gpu_give(nm_t *nm, uint64_t mask)
{
    nm->gpu_busy &= ~mask;
}

void
nm_gpu_run(nm_t *nm, uint64_t mask, exec_run_t *run)
{
    if (nm->gpu_res < 0) {
        run->ngpus = EXEC_GPUS_NONE;
        return;
    }
    run->ngpus = 0;
    for (int i = 0; i < nm->ngpu; i++)
        if (mask & (1ULL << i))
            run->gpus[run->ngpus++] = nm->gpu_ids[i];
}

void
nm_gpu_done(nm_t *nm, nm_worker_t *w)
{
    if (!w->gpus)
        return;
    nm_gpu_give(nm, w->gpus);
    w->gpus = 0;
    if (w->actor || w->reaped || w->state == W_LEAVING)
        return;
    log_info("worker %d ran a task on GPUs: it leaves, a fresh one takes its place",
             (int) w->pid);
    kill(w->pid, SIGTERM);
    w->state = W_LEAVING; /* given nothing more; reaped when it exits */
}

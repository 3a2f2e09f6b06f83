/*  exec_node_cpu - where and how the node manager's workers run.

    Two settings, made on each worker as it is started (the node manager
    is its parent, so it may):

    SCHED_BATCH FOR TASK WORKERS. A task worker runs the CPU-bound part of
    the job; the node manager, the drivers and the log's threads only pass
    messages, and a message late by a few milliseconds delays every worker
    waiting on it. Linux lets a woken thread preempt the running one at
    once, unless it is SCHED_BATCH (its preemption waits for the tick).
    Dispatching an iteration's tasks, the node manager wakes its workers
    one after the other; the first one woken, placed on the node
    manager's CPU, took that CPU from it, and the second worker's task
    waited for the node manager to get a CPU back: up to 3 ms, with the
    other CPU idle, in 2-4% of ES iterations on the VM Lux is measured on.
    Actors' workers stay SCHED_OTHER: a call waits on them, not the other
    way round.

    ONE CPU PER POOL WORKER. The kernel of that VM packs woken threads onto
    CPUs already busy (its command line sets sched_vcpu_pack), so two
    workers woken together could share a CPU for a whole task while the
    other CPU idled, until the load balancer moved one. Binding each
    worker of the pool to a CPU of its own stops that. Only when the node
    manager has the machine to itself, as far as it can tell: the pool is
    no larger than the CPUs it may use, and its CPU resource is exactly
    those CPUs (a node given CPU=2 on a larger machine may share it with
    others, and binding its workers to the same two CPUs as theirs would
    crowd them). Extra workers (started for blocked ones) and actors'
    workers are never bound: the kernel balances them.

    LUX_PIN_WORKERS=0 binds no worker; 1 binds the pool whenever it fits
    the CPUs, whatever the CPU resource says. A failure to set either
    setting is logged once and the worker runs as it is.
*/
#include "exec_node_cpu.h"
#include "exec_node_int.h"
#include "../util/util_log.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "0,1,4-7": the CPUs of set, for the log. */
static void
s_cpu_list(char *buf, size_t len, const cpu_set_t *set)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && at < len; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
            last++;
        int k = last > c ? snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", c, last)
                         : snprintf(buf + at, len - at, "%s%d", at ? "," : "", c);
        at += k > 0 ? (size_t) k : 0;
        c = last;
    }
}

void
nm_cpu_setup(nm_t *nm)
{
    const char *v = getenv("LUX_PIN_WORKERS");
    int mode = -1; /* auto */
    if (v && *v) {
        if (strcmp(v, "0") == 0)
            mode = 0;
        else if (strcmp(v, "1") == 0)
            mode = 1;
        else
            log_warn("LUX_PIN_WORKERS=%s: not 0 or 1; deciding as when it is not set", v);
    }
    nm->pin = false;
    if (mode == 0)
        return;
    if (sched_getaffinity(0, sizeof nm->pin_cpus, &nm->pin_cpus) != 0) {
        log_warn("workers not bound to CPUs: sched_getaffinity: %s", strerror(errno));
        return;
    }
    int n = CPU_COUNT(&nm->pin_cpus);
    if (nm->target_workers > n) {
        if (mode == 1)
            log_warn("LUX_PIN_WORKERS=1: %d workers for %d CPUs; not binding them",
                     nm->target_workers, n);
        return;
    }
    if (mode == -1 && nm->res[0].total != 1000 * (int64_t) n) {
        log_info("workers not bound to CPUs: the node's CPU resource (%.3g) is not the %d CPUs "
                 "it may use (LUX_PIN_WORKERS=1 binds them anyway)",
                 nm->res[0].total / 1000.0, n);
        return;
    }
    nm->pin = true;
    char list[256];
    s_cpu_list(list, sizeof list, &nm->pin_cpus);
    log_info("the pool's workers are bound one to a CPU of %s (LUX_PIN_WORKERS=0: not bound)",
             list);
}

/* The first CPU of nm->pin_cpus no other pool worker is bound to, or -1. */
static int
s_free_cpu(nm_t *nm, const nm_worker_t *self)
{
    if (!nm->pin)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &nm->pin_cpus))
            continue;
        bool taken = false;
        for (nm_worker_t *w = nm->workers; w && !taken; w = w->next)
            taken = w != self && w->cpu == c;
        if (!taken)
            return c;
    }
    return -1;
}

void
nm_cpu_place(nm_t *nm, nm_worker_t *w, int kind)
{
    w->cpu = -1;
    if (kind == NM_SPAWN_ACTOR)
        return;
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    if (sched_setscheduler(w->pid, SCHED_BATCH, &sp) != 0 && !nm->batch_warned) {
        nm->batch_warned = true;
        log_warn("worker %d: cannot make it SCHED_BATCH: %s", (int) w->pid, strerror(errno));
    }
    int cpu = kind == NM_SPAWN_POOL ? s_free_cpu(nm, w) : -1;
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(w->pid, sizeof set, &set) != 0) {
        log_warn("worker %d: cannot bind it to CPU %d: %s; workers are no longer bound",
                 (int) w->pid, cpu, strerror(errno));
        nm->pin = false;
        return;
    }
    w->cpu = cpu;
}

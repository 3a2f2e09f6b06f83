/*  exec_client_task - the calls a remote function makes about its own
    task, on the connection of exec_client.c: its results (lux_set,
    lux_set_alloc), its failure (lux_raise), and what it may ask of its
    task (its ref, attempt, GPUs, the run's directory, the job). */
#include "exec_client.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- inside a task ------------------------------------------------------------------------ */

static int
s_check_out(lux_t *lx, int i)
{
    if (!lx || !lx->task)
        return util_err(LUX_ESTATE, "lux_set: not inside a task");
    if (i < 0 || i >= lx->task->nret)
        return util_err(LUX_EINVAL, "lux_set: return %d of a function with %d", i,
                        lx->task->nret);
    return 0;
}

void *
lux_set_alloc(lux_t *lx, int i, size_t size)
{
    exec_task_ctx_t *t;
    if (s_check_out(lx, i))
        return NULL;
    t = lx->task;
    free(t->outs_own[i]);
    t->outs_own[i] = NULL;
    memset(&t->outs[i], 0, sizeof t->outs[i]);
    exec_ref_make(&t->outs[i].id, &t->task, (uint32_t) i);
    t->outs[i].size = size;
    if (size <= EXEC_INLINE_MAX) {
        if (!(t->outs_own[i] = malloc(size ? size : 1))) {
            util_err(LUX_ENOMEM, "lux_set: out of memory");
            return NULL;
        }
        t->outs[i].where = EXEC_W_INLINE;
        t->outs[i].bytes = t->outs_own[i];
        t->outs_set[i] = 1;
        return t->outs_own[i];
    }
    uint64_t off;
    if (exec_client_alloc_room(lx, size, &off)) {
        snprintf(t->err, sizeof t->err, "return %d of %zu bytes: %s", i, size, lux_errmsg());
        t->status = LUX_EFULL;
        return NULL;
    }
    t->outs[i].where = EXEC_W_ARENA;
    t->outs[i].off = off;
    t->outs_set[i] = 1;
    return exec_arena_base(lx->arena) + off;
}

int
lux_set(lux_t *lx, int i, const void *data, size_t size)
{
    int rc = s_check_out(lx, i);
    if (rc)
        return rc;
    void *p = lux_set_alloc(lx, i, size);
    if (!p)
        return lx->task->status ? lx->task->status : LUX_ENOMEM;
    memcpy(p, data, size);
    return 0;
}

int
lux_raise(lux_t *lx, const char *fmt, ...)
{
    va_list ap;
    if (!lx || !lx->task)
        return util_err(LUX_ESTATE, "lux_raise: not inside a task");
    va_start(ap, fmt);
    vsnprintf(lx->task->err, sizeof lx->task->err, fmt, ap);
    va_end(ap);
    lx->task->status = LUX_ETASK;
    return LUX_ETASK;
}

const lux_ref_t *
lux_task_ref(lux_t *lx)
{
    static _Thread_local lux_ref_t ref;
    if (!lx || !lx->task)
        return NULL;
    exec_ref_make(&ref, &lx->task->task, 0);
    return &ref;
}

int
lux_attempt(lux_t *lx)
{
    return lx && lx->task ? lx->task->attempt : 0;
}

int
lux_gpu_ids(lux_t *lx, int *ids, int max)
{
    if (!lx || !lx->task)
        return 0;
    for (int i = 0; i < lx->ngpus && i < max; i++)
        ids[i] = lx->gpus[i];
    return lx->ngpus;
}

const char *
lux_dir(lux_t *lx)
{
    return lx ? lx->dir : NULL;
}

char *
lux_job_id(lux_t *lx, char *out)
{
    util_id_hex(&lx->job, out);
    return out;
}

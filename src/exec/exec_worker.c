/*  exec_worker - the worker loop (see exec_worker.h).

    Results go back in batches: after each task when the batch is done (so
    a lone task's result is not held back), after a task that asked for room
    in the store (the room is held until the node hears of it), else every
    S_RESULTS tasks; and when a task blocks in lux_get, right after the node
    is told (BLOCKED): what it waits for may need the tasks run before it
    (a ref passed inside a value), and nothing else would report them until
    it ends (an actor's calls too, though they are never given back). The
    node takes back room granted and not sealed when results come, except
    from a blocked worker (exec_node_sched.c): the blocked task's or call's
    room stays its own.

    A task cancelled without force (exec_node_cancel.c) comes as
    EXEC_CANCEL_SIGNAL with its token: the handler (SA_RESTART) marks the
    running task cancelled when the token is its own, which ends a pause,
    sleep or poll of the task with EINTR (not a read or write, which the
    kernel restarts); lux_cancelled() then says 1 and lux_get and lux_wait
    return LUX_ECANCELLED. Tokens are also kept, so a task of the batch not
    started yet is skipped and reported cancelled. The node fails a task
    it cancelled whatever the worker reports.

    A worker lives no longer than its node manager: the kernel kills it
    (SIGKILL, PR_SET_PDEATHSIG) when the thread that started it ends,
    however that happens, since no result of its can reach anyone then. A
    worker whose node went before it could ask for that finds no node to
    connect to, and ends. An idle worker would see its connection close
    anyway; one busy in a task would not, and lived on (t/3131).
*/
#include "exec_worker.h"
#include "exec_client.h"
#include "../net/net_wire.h"
#include "../util/util_prof.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define S_RESULTS 64

typedef struct {
    lux_t *lx;
    exec_run_t *runs;      /* the batch being run */
    bool *skip;            /* given back to the node: do not run */
    uint32_t nruns, caprun;
    uint32_t at;           /* the one running */
    util_buf_t results;
    uint32_t nresults;
    util_buf_t outs;       /* scratch for one result's outputs */
    /* the actor this worker hosts (after a CREATE or LOAD run) */
    const exec_fn_t *cls;
    exec_module_t *cls_module;
    void *self;
    util_id_t actor;
    uint64_t allocs_task;  /* lx->alloc_req when the running task started */
    uint8_t *abuf;         /* arguments copied to aligned addresses */
    size_t acap;
} s_worker_t;

/* --- cancelling (EXEC_CANCEL_SIGNAL) ---------------------------------------------------- */

#define S_TOKENS 64 /* tokens remembered, for tasks of the batch not started */

static volatile uint32_t s_running_token; /* the running task's (0: none) */
static volatile sig_atomic_t s_cancel_hit; /* it was cancelled */
static volatile uint32_t s_tokens[S_TOKENS];
static volatile sig_atomic_t s_ntokens;

static void
s_on_cancel_signal(int sig, siginfo_t *si, void *uc)
{
    (void) sig, (void) uc;
    uint32_t tok = (uint32_t) si->si_value.sival_int;
    if (tok && tok == s_running_token)
        s_cancel_hit = 1;
    s_tokens[s_ntokens % S_TOKENS] = tok;
    s_ntokens = s_ntokens + 1;
}

static bool
s_cancelled(lux_t *lx)
{
    (void) lx;
    return s_cancel_hit != 0;
}

/* Whether the task of token tok was cancelled before it started. */
static bool
s_token_seen(uint32_t tok)
{
    int n = s_ntokens < S_TOKENS ? (int) s_ntokens : S_TOKENS;
    for (int i = 0; i < n; i++)
        if (s_tokens[i] == tok)
            return true;
    return false;
}

/* Tasks of the batch not started yet: their IDs into b (given back). */
static uint32_t
s_giveback(lux_t *lx, util_buf_t *b)
{
    s_worker_t *w = lx->worker;
    uint32_t n = 0;
    if (w->self || (w->at < w->nruns && w->runs[w->at].kind != EXEC_RUN_TASK))
        return 0; /* an actor's calls stay, in their order */
    for (uint32_t i = w->at + 1; i < w->nruns; i++) {
        if (w->skip[i])
            continue;
        util_buf_put(b, w->runs[i].task.b, 16);
        w->skip[i] = true;
        n++;
    }
    return n;
}

static void
s_flush(s_worker_t *w)
{
    if (!w->nresults)
        return;
    util_le32(w->results.data, w->nresults);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_RESULTS, NET_NO_SHARD, 0)});
    zmsg_addmem(m, w->results.data, w->results.len);
    exec_client_send(w->lx, &m);
    w->nresults = 0;
    w->results.len = 0;
}

/* A task or an actor's call blocked, and the node knows (exec_client.c
   s_block): report the tasks or calls finished before it, as what it
   waits for may need them. The node keeps the room granted to the one
   that waits (exec_node_sched.c nm_blocked). */
static void
s_on_blocked(lux_t *lx)
{
    s_flush(lx->worker);
}

static void
s_report(s_worker_t *w, exec_result_t *r, const exec_obj_t *outs, const uint8_t (*fps)[16])
{
    if (w->nresults == 0) {
        w->results.len = 0;
        util_buf_put_u32(&w->results, 0);
    }
    exec_result_encode(&w->results, r, outs, fps);
    w->nresults++;
}

static exec_module_t *
s_module(lux_t *lx, const uint8_t hash[16], char *why, size_t n)
{
    exec_module_t *m = exec_module_find(hash);
    if (m)
        return m;
    if (memcmp(exec_module_hash(exec_module_builtin()), hash, 16) == 0)
        return exec_module_builtin();
    char hex[33], path[PATH_MAX + 64];
    util_hex(hex, hash, 16);
    snprintf(path, sizeof path, "%s/modules/%s.so", lx->dir, hex);
    if (!(m = exec_module_load(path, hash)))
        snprintf(why, n, "%s", lux_errmsg());
    return m;
}

/* The GPUs run holds: CUDA_VISIBLE_DEVICES before its code runs ("" for
   none, on a node with GPUs), and what lux_gpu_ids answers. */
static void
s_gpus(lux_t *lx, const exec_run_t *run)
{
    lx->ngpus = 0;
    if (run->ngpus == EXEC_GPUS_NONE)
        return; /* the node has no GPU: the environment stays as it was */
    char list[EXEC_RUN_GPUS * 6 + 1];
    size_t k = 0;
    list[0] = '\0';
    for (int i = 0; i < run->ngpus; i++) {
        lx->gpus[lx->ngpus++] = run->gpus[i];
        k += (size_t) snprintf(list + k, sizeof list - k, "%s%u", i ? "," : "",
                               (unsigned) run->gpus[i]);
    }
    if (setenv("CUDA_VISIBLE_DEVICES", list, 1) != 0)
        log_warn("worker: cannot set CUDA_VISIBLE_DEVICES: %s", strerror(errno));
}

/* Run one task and report it. */
static void
s_run(s_worker_t *w, const exec_run_t *run)
{
    lux_t *lx = w->lx;
    exec_result_t r = {.task = run->task, .attempt = run->attempt, .nret = run->nret};
    exec_task_ctx_t ctx;
    exec_obj_t outs[EXEC_MAX_RETURNS];
    uint8_t fps[EXEC_MAX_RETURNS][16];
    uint8_t set[EXEC_MAX_RETURNS] = {0};
    uint8_t *own[EXEC_MAX_RETURNS] = {0};
    lux_val_t argv[EXEC_MAX_ARGS > 256 ? 256 : EXEC_MAX_ARGS], *args = argv;
    char why[UTIL_ERRMSG_MAX] = ""; /* a "no room" census fits (t/3170) */
    char fn[EXEC_NAME_MAX + 1];

    snprintf(fn, sizeof fn, "%.*s", (int) run->fn_len, run->fn);
    s_gpus(lx, run);
    r.t_start = util_now_ns();
    if (run->argc > 256 && !(args = calloc(run->argc, sizeof *args))) {
        r.status = LUX_ENOMEM;
        snprintf(why, sizeof why, "out of memory for %u arguments", run->argc);
        goto report;
    }
    exec_module_t *m = NULL;
    const exec_fn_t *f = NULL;
    int nargs = 0, nret = 0; /* what the entry takes and gives */
    if (run->kind == EXEC_RUN_CALL || run->kind == EXEC_RUN_SAVE) {
        if (!w->self || memcmp(w->actor.b, run->actor.b, 16) != 0) {
            r.status = LUX_ESTATE;
            snprintf(why, sizeof why, "this worker does not host that actor");
            goto report;
        }
        m = w->cls_module;
        if (run->kind == EXEC_RUN_SAVE) {
            f = w->cls;
            nargs = 0, nret = 1;
            if (!f->save) {
                r.status = LUX_ENOSYS;
                snprintf(why, sizeof why, "class %s has no save function", f->name);
                goto report;
            }
        } else {
            char full[160];
            snprintf(full, sizeof full, "%s.%s", w->cls->name, fn);
            f = exec_module_fn(m, full, strlen(full));
            if (!f || f->kind != EXEC_FN_METHOD) {
                r.status = LUX_ENOTFOUND;
                snprintf(why, sizeof why, "class %s has no method '%s'", w->cls->name, fn);
                goto report;
            }
            nargs = f->nargs, nret = f->nret;
        }
    } else {
        if (!(m = s_module(lx, run->module, why, sizeof why))) {
            r.status = LUX_ENOTFOUND;
            goto report;
        }
        int want = run->kind == EXEC_RUN_TASK ? EXEC_FN_TASK : EXEC_FN_CLASS;
        f = exec_module_fn(m, run->fn, run->fn_len);
        if (!f || f->kind != want) {
            r.status = LUX_ENOTFOUND;
            snprintf(why, sizeof why, "the module has no %s '%s'",
                     want == EXEC_FN_TASK ? "function" : "actor class", fn);
            goto report;
        }
        nargs = run->kind == EXEC_RUN_LOAD ? 1 : f->nargs;
        nret = run->kind == EXEC_RUN_TASK ? f->nret : 0;
        if (run->kind == EXEC_RUN_LOAD && !f->load) {
            r.status = LUX_ENOSYS;
            snprintf(why, sizeof why, "class %s has no load function", f->name);
            goto report;
        }
    }
    if (nargs >= 0 && nargs != run->argc) {
        r.status = LUX_EINVAL;
        snprintf(why, sizeof why, "%s takes %d arguments, it was given %u", fn, nargs,
                 run->argc);
        goto report;
    }
    if (nret != run->nret) {
        r.status = LUX_EINVAL;
        snprintf(why, sizeof why, "%s returns %d values, %u were asked for", fn, nret,
                 run->nret);
        goto report;
    }
    /* the arguments, in place */
    util_rd_t rd;
    util_rd_init(&rd, run->objs, run->objs_len);
    for (uint16_t i = 0; i < run->argc; i++) {
        exec_obj_t o;
        if (exec_obj_decode(&rd, &o) || (o.where != EXEC_W_INLINE && o.where != EXEC_W_ARENA) ||
            (o.where == EXEC_W_ARENA && o.off + o.size > exec_arena_size(lx->arena))) {
            r.status = LUX_EPROTO;
            snprintf(why, sizeof why, "argument %u came malformed", i);
            goto report;
        }
        args[i].data = o.where == EXEC_W_ARENA ? exec_arena_base(lx->arena) + o.off : o.bytes;
        args[i].size = (size_t) o.size;
    }
    /* a value inside a message may sit at any address: those that are not
       16-byte aligned are copied, so a function may read them as any type
       (the store's are aligned already) */
    size_t need = 0;
    for (uint16_t i = 0; i < run->argc; i++)
        if ((uintptr_t) args[i].data & 15)
            need += (args[i].size + 15) & ~(size_t) 15;
    if (need > w->acap) {
        free(w->abuf);
        w->acap = 0;
        if (!(w->abuf = malloc(need))) {
            r.status = LUX_ENOMEM;
            snprintf(why, sizeof why, "out of memory aligning the arguments");
            goto report;
        }
        w->acap = need;
    }
    need = 0;
    for (uint16_t i = 0; i < run->argc; i++)
        if ((uintptr_t) args[i].data & 15) {
            memcpy(w->abuf + need, args[i].data, args[i].size);
            args[i].data = w->abuf + need;
            need += (args[i].size + 15) & ~(size_t) 15;
        }
    memset(&ctx, 0, sizeof ctx);
    ctx.task = run->task;
    ctx.attempt = run->attempt;
    ctx.argc = run->argc;
    ctx.argv = args;
    ctx.nret = run->nret;
    ctx.outs = outs;
    ctx.outs_set = set;
    ctx.outs_own = own;
    memset(outs, 0, sizeof outs);
    lx->task = &ctx;
    lx->nself = 0; /* calls to its own actor: those of this run only */
    lx->module = m; /* nested calls find the task's own module's functions */
    lx->job = run->job;
    lx->root = run->task;
    lx->counter = 0;
    int rc = 0;
    void *self = NULL;
    switch (run->kind) {
    case EXEC_RUN_TASK:
        rc = f->fn(lx, run->argc, args);
        break;
    case EXEC_RUN_CALL:
        rc = f->method(lx, w->self, run->argc, args);
        break;
    case EXEC_RUN_SAVE:
        rc = f->save(lx, w->self);
        break;
    case EXEC_RUN_CREATE:
    case EXEC_RUN_LOAD:
        self = run->kind == EXEC_RUN_CREATE ? f->create(lx, run->argc, args)
                                            : f->load(lx, &args[0]);
        if (!self && !ctx.status) {
            ctx.status = LUX_ETASK;
            snprintf(ctx.err, sizeof ctx.err, "%s of class %s gave no state",
                     run->kind == EXEC_RUN_CREATE ? "create" : "load", f->name);
        }
        if (self) {
            /* the state it replaces (a restart in this process) goes */
            if (w->self && w->cls && w->cls->destroy)
                w->cls->destroy(w->self);
            w->self = self;
            w->cls = f;
            w->cls_module = m;
            w->actor = run->actor;
            lx->self_actor = run->actor;
        }
        break;
    }
    exec_client_flush(lx); /* what the task put and called goes before its result */
    lx->task = NULL;
    if (rc || ctx.status) {
        r.status = ctx.status ? ctx.status : rc;
        snprintf(why, sizeof why, "%s", ctx.err[0] ? ctx.err : lux_strerror(r.status));
        for (int i = 0; i < run->nret; i++)
            free(own[i]);
        goto report;
    }
    for (int i = 0; i < run->nret; i++) {
        if (!set[i]) { /* a return never set is an empty value */
            exec_ref_make(&outs[i].id, &run->task, (uint32_t) i);
            outs[i].where = EXEC_W_INLINE;
            outs[i].bytes = (const uint8_t *) "";
            outs[i].size = 0;
        }
        const void *p = outs[i].where == EXEC_W_ARENA ? exec_arena_base(lx->arena) + outs[i].off
                                                      : (const void *) outs[i].bytes;
        exec_fingerprint(fps[i], p, (size_t) outs[i].size);
    }
    r.t_end = util_now_ns();
    s_report(w, &r, outs, (const uint8_t (*)[16]) fps);
    for (int i = 0; i < run->nret; i++)
        free(own[i]);
    if (args != argv)
        free(args);
    return;
report:
    r.t_end = util_now_ns();
    r.nret = 0;
    r.msg = why;
    r.msg_len = (uint16_t) strlen(why);
    s_report(w, &r, NULL, NULL);
    if (args != argv)
        free(args);
}

/* Run every task of one TASKS message. */
static void
s_batch(s_worker_t *w, zmsg_t *msg)
{
    zframe_t *hf = zmsg_first(msg), *body = zmsg_next(msg);
    net_hdr_t h;
    util_rd_t rd;
    if (net_hdr_decode(&h, hf) || h.type != NET_TASKS || !body)
        return;
    util_rd_init(&rd, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&rd);
    if (count > w->caprun) {
        w->runs = realloc(w->runs, count * sizeof *w->runs);
        w->skip = realloc(w->skip, count * sizeof *w->skip);
        w->caprun = count;
    }
    w->nruns = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (exec_run_decode(&rd, &w->runs[i])) {
            log_error("worker: %s", lux_errmsg());
            break;
        }
        w->skip[i] = false;
        w->nruns++;
    }
    for (w->at = 0; w->at < w->nruns; w->at++) {
        if (w->skip[w->at])
            continue;
        w->allocs_task = w->lx->alloc_req;
        const exec_run_t *run = &w->runs[w->at];
        uint32_t tok = run->kind == EXEC_RUN_TASK ? exec_cancel_token(&run->task) : 0;
        s_cancel_hit = 0;
        s_running_token = tok; /* before the look: a signal from now on marks it */
        if (tok && s_token_seen(tok)) {
            exec_result_t r = {.task = run->task, .attempt = run->attempt,
                               .status = LUX_ECANCELLED, .msg = "cancelled before it started",
                               .msg_len = (uint16_t) strlen("cancelled before it started")};
            r.t_start = r.t_end = util_now_ns();
            s_report(w, &r, NULL, NULL);
        } else {
            util_prof_stamp("w_start", run->task.b);
            s_run(w, run);
            util_prof_stamp("w_end", run->task.b);
        }
        s_running_token = 0;
        bool last = true;
        for (uint32_t k = w->at + 1; k < w->nruns; k++)
            last = last && w->skip[k];
        /* store room stays granted until the node hears the result: a task
           that asked for room is reported at once */
        if (last || w->nresults >= S_RESULTS || w->lx->alloc_req != w->allocs_task ||
            w->runs[w->at].kind == EXEC_RUN_SAVE) /* a checkpoint counts once it is told */
            s_flush(w);
    }
    s_flush(w);
    w->nruns = 0;
}

int
exec_worker_main(const char *dir, const char *endpoint)
{
    s_worker_t w;
    memset(&w, 0, sizeof w);
    /* before the hello: the node signals only workers that said it */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = s_on_cancel_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(EXEC_CANCEL_SIGNAL, &sa, NULL) != 0)
        log_warn("worker: cannot take the cancel signal: %s", strerror(errno));
    util_buf_init(&w.results);
    util_buf_init(&w.outs);
    /* before the connection: a node gone before this finds none */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        log_warn("worker: cannot ask to die with the node manager: %s", strerror(errno));
    w.lx = exec_client_connect(endpoint, EXEC_HELLO_WORKER, NULL, NULL);
    if (!w.lx) {
        log_error("worker: %s", lux_errmsg());
        return 1;
    }
    w.lx->later = zlist_new();
    w.lx->giveback = s_giveback;
    w.lx->on_blocked = s_on_blocked;
    w.lx->cancelled = s_cancelled;
    w.lx->worker = &w;
    while (!zsys_interrupted) {
        zmsg_t *m = zlist_pop(w.lx->later);
        if (!m)
            m = net_link_recv(w.lx->link, -1);
        if (!m)
            break; /* interrupted */
        zframe_t *hf = zmsg_first(m);
        net_hdr_t h;
        if (net_hdr_decode(&h, hf) == 0 && h.type == NET_TASKS)
            s_batch(&w, m);
        else
            exec_client_handle(w.lx, m);
        zmsg_destroy(&m);
    }
    if (w.self && w.cls && w.cls->destroy)
        w.cls->destroy(w.self);
    exec_client_close(&w.lx, 0);
    free(w.runs);
    free(w.skip);
    free(w.abuf);
    util_buf_free(&w.results);
    util_buf_free(&w.outs);
    return 0;
}

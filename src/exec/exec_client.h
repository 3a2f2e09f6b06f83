/*  exec_client - the public API's connection (lux_t): what drivers and
    running tasks use to call, put, get, wait and free.

    A client talks to its node manager over one net_link (a unix socket). It batches what it sends (submissions, puts, frees: a
    message carries many), keeps a table of the objects it knows (values of
    small ones, places in the store of large ones), and is told by the node
    manager when the objects it owns are ready. It reads objects in the
    node's shared-memory store in place.

    IDs are deterministic: a client's tasks and puts are the children of its
    root (the driver's job root, or the running task) in the order it makes
    them.
*/
#ifndef EXEC_CLIENT_H_INCLUDED
#define EXEC_CLIENT_H_INCLUDED

#include "exec_arena.h"
#include "../net/net_link.h"
#include "exec_module.h"
#include "exec_proto.h"
#include "../util/util_buf.h"
#include "../util/util_err.h"
#include "../util/util_idmap.h"
#include "../util/util_spin.h"

#include <czmq.h>
#include <limits.h>

struct exec_head;

/* What a running task sees (set by the worker for each task). */
typedef struct {
    util_id_t task;
    uint8_t attempt;
    int argc;
    lux_val_t *argv;
    uint8_t nret;
    exec_obj_t *outs;      /* what lux_set set */
    uint8_t *outs_set;     /* 1 when set */
    uint8_t **outs_own;    /* inline copies we own */
    char err[UTIL_ERRMSG_MAX]; /* lux_raise's message (a "no room" census fits) */
    int status;
} exec_task_ctx_t;

struct lux_t {
    int kind;                  /* EXEC_HELLO_DRIVER or _WORKER */
    net_link_t *link;         /* to the node manager */
    util_spin_t spin;          /* a driver: how long it polls for the node's answer before it
                                  sleeps (LUX_SPIN_US; a worker's never opens) */
    util_id_t id;              /* this client */
    util_id_t job, node;
    util_id_t root;            /* parent of what we make: the driver's root or the task */
    uint64_t counter;          /* children of root made so far */
    exec_arena_t *arena;       /* the node's object store, mapped */
    char arena_name[64];
    char dir[PATH_MAX];        /* the cluster's directory */
    exec_module_t *module;     /* the driver's module */
    bool module_sent, builtin_sent;
    util_idmap_t *objs;        /* ref (20) -> exec_cobj_t */
    util_buf_t submit;         /* SUBMIT being filled */
    uint32_t nsubmit;
    util_buf_t put;            /* PUT being filled */
    uint32_t nput;
    util_buf_t freeb;          /* FREE being filled */
    uint32_t nfree;
    util_buf_t scratch;
    int64_t pending_ns;        /* when the oldest unsent item was queued */
    uint64_t alloc_req;
    uint64_t actor_req;        /* ACTOR requests made */
    struct exec_head *head;    /* the embedded default's cluster, when we started it */
    exec_task_ctx_t *task;     /* in a worker: the task running now */
    zlist_t *later;            /* in a worker: TASKS that came while inside a task */
    bool blocked;              /* in a worker: told the node we wait */
    uint32_t (*giveback)(lux_t *lx, util_buf_t *ids); /* worker: tasks not started */
    void (*on_blocked)(lux_t *lx); /* worker: the node was just told we wait */
    bool (*cancelled)(lux_t *lx); /* worker: the running task was cancelled (lux_cancel) */
    void *worker;              /* the worker's state */
    uint16_t gpus[EXEC_RUN_GPUS]; /* a worker: the GPU ids its run holds (lux_gpu_ids) */
    int ngpus;
    util_id_t self_actor;      /* in a worker: the actor it hosts (zero: none) */
    lux_ref_t *self_refs;      /* refs of calls the running call made to its own actor */
    uint32_t nself, capself;
};

/* An object the client knows. */
enum { COBJ_PENDING = 0, COBJ_READY, COBJ_ERROR,
       COBJ_MISSING /* the node has no such object: bytes hold why */ };
typedef struct {
    uint8_t state;
    uint8_t where;             /* EXEC_W_INLINE or EXEC_W_ARENA */
    bool pinned;               /* the node pinned it for us (we may read in place) */
    bool asked;                /* a GET is out */
    bool mine;                 /* made by this client (lux_call, lux_put): the node tells
                                  it when ready; others' refs must be asked for */
    uint64_t size, off;
    uint8_t *bytes;            /* inline copy, or the error message */
    bool cancelled;            /* ERROR: its task was cancelled (LUX_ECANCELLED) */
    bool unavail;              /* the node could not serve the last get of it now
                                  (code, bytes: why); the next get or wait asks again */
    int8_t code;
} exec_cobj_t;

/* Connect to the node manager at endpoint (a driver or a worker); NULL
   with the message set. name and info describe a driver's job. A driver's
   kind may carry EXEC_CONNECT_DETACHED: its job's tasks run on after it
   leaves (lux_config_t.detached). */
#define EXEC_CONNECT_DETACHED 0x100
lux_t *exec_client_connect(const char *endpoint, int kind, const char *name, const char *info);
void exec_client_close(lux_t **lx_p, int status);

/* Send a message (header frame first) to the node manager. */
void exec_client_send(lux_t *lx, zmsg_t **m);
/* Send what is batched. */
void exec_client_flush(lux_t *lx);
/* Handle one message (already received) from the node manager: OBJECTS,
   ALLOC_REP... TASKS are queued in later. */
void exec_client_handle(lux_t *lx, zmsg_t *msg);
/* Wait up to timeout_ms for a message and handle it; false on timeout. */
bool exec_client_poll(lux_t *lx, int timeout_ms);

/* Send a module's bytes to the node, which keeps and logs them. */
int exec_client_send_module(lux_t *lx, exec_module_t *m, const char *path);

/* Room in the store for size bytes (a round trip); 0 or LUX_EFULL... */
int exec_client_alloc(lux_t *lx, uint64_t size, uint64_t *off);

/* --- for exec_client_task.c and exec_client_actor.c only: the
   connection's plumbing the task and actor calls share with lux_call */
/* Send type with body (and body2, if n2) as one message. */
void exec_client_send_body(lux_t *lx, int type, const void *body, size_t n, const void *body2,
                           size_t n2);
/* Start a batch item in b (its count header first when count is 0);
   flush what is batched when count reaches the batch or it waited long. */
void exec_client_batch_start(lux_t *lx, util_buf_t *b, uint32_t count);
void exec_client_maybe_flush(lux_t *lx, uint32_t count);
/* The client's record of ref's object (made when create); NULL if none. */
exec_cobj_t *exec_client_obj(lux_t *lx, const lux_ref_t *ref, bool create);
/* Wait for the answer of type to request req, its body into out (n
   bytes); 0, or a code naming what when the node is gone or it errs. */
int exec_client_await(lux_t *lx, int type, uint64_t req, uint8_t *out, size_t n,
                      const char *what);
/* The same, waiting at most timeout_ms (-1: no bound): LUX_ETIMEDOUT
   naming what when no answer came by then (a late one is dropped). */
int exec_client_await_ms(lux_t *lx, int type, uint64_t req, uint8_t *out, size_t n,
                         const char *what, int64_t timeout_ms);
/* LUX_EDEAD naming what: the node manager's connection is gone. */
int exec_client_gone(lux_t *lx, const char *what);
/* Room for size bytes (exec_client_alloc) with its pages allocated now:
   LUX_EFULL or the prefault's code gives the room back. */
int exec_client_alloc_room(lux_t *lx, uint64_t size, uint64_t *off);
/* 0, or LUX_EINVAL naming the first value argument over LUX_VAL_MAX. */
int exec_client_check_values(const char *what, int argc, const lux_arg_t *argv);
/* Flush the queued frees when argv names a ref among them, so that a ref
   freed before a call that takes it is freed for that call. */
void exec_client_frees_first(lux_t *lx, int argc, const lux_arg_t *argv);
/* The next ID of this client's sequence. */
void exec_client_next_id(lux_t *lx, util_id_t *id);
/* The function fn of the loaded modules (its module in *m); NULL if none. */
const exec_fn_t *exec_client_find_fn(lux_t *lx, const char *fn, exec_module_t **m);

#endif

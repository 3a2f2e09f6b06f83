/*  lux.h - the one public header of Lux.

    Lux is a distributed execution framework after the Ray paper whose control
    store is an event-sourced lineage log (see README and doc/). This header
    is all a program needs; everything it declares is documented here and in
    lux(3).

    Conventions: every function that can fail returns an int that is 0 on
    success or a negative LUX_E* code; lux_errmsg() then gives a message that
    names what failed and why, for the calling thread.
*/
#ifndef LUX_H_INCLUDED
#define LUX_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LUX_VERSION_MAJOR 0
#define LUX_VERSION_MINOR 1
#define LUX_VERSION_PATCH 0

/* Error codes, one table: X(name, value, text). */
#define LUX_ERRORS(X)                                                         \
    X(LUX_OK, 0, "success")                                                   \
    X(LUX_ENOMEM, -1, "out of memory")                                        \
    X(LUX_EINVAL, -2, "invalid argument")                                     \
    X(LUX_EIO, -3, "input/output error")                                      \
    X(LUX_ECORRUPT, -4, "corrupt data")                                       \
    X(LUX_EPROTO, -5, "protocol error")                                       \
    X(LUX_EEPOCH, -6, "stale epoch")                                          \
    X(LUX_ETIMEDOUT, -7, "timed out")                                         \
    X(LUX_ENOTFOUND, -8, "not found")                                         \
    X(LUX_EGAP, -9, "sequence gap")                                           \
    X(LUX_ESTATE, -10, "wrong state")                                         \
    X(LUX_EFULL, -11, "full")                                                 \
    X(LUX_ESQL, -12, "SQL error")                                             \
    X(LUX_EREADONLY, -13, "read-only")                                        \
    X(LUX_EAUTH, -14, "authentication failed")                                \
    X(LUX_EDEAD, -15, "peer is dead")                                         \
    X(LUX_ETASK, -16, "task failed")                                          \
    X(LUX_ENOSYS, -17, "not supported")                                       \
    X(LUX_EEXIST, -18, "already exists")                                      \
    X(LUX_EINTR, -19, "interrupted")                                          \
    X(LUX_ESHARD, -20, "wrong shard")                                         \
    X(LUX_EDEADLK, -21, "would deadlock")                                     \
    X(LUX_ECANCELLED, -22, "cancelled")

enum lux_error {
#define LUX_X_ENUM(name, value, text) name = value,
    LUX_ERRORS(LUX_X_ENUM)
#undef LUX_X_ENUM
};

/* The text of an error code ("sequence gap"); never NULL. */
const char *lux_strerror(int code);

/* The message of the last error of the calling thread, with its context
   ("shard 2: seq gap 1041 -> 1043 from replica 3"); "" when none. */
const char *lux_errmsg(void);


/* ======================================================================
   The runtime: tasks, objects, futures (refs)
   ======================================================================

   A program (the driver) calls lux_init, then calls remote functions with
   lux_call, which returns refs at once: futures naming objects that will
   hold the function's return values. Arguments are values (copied into
   the task) or refs (dependencies, possibly not yet computed). lux_get
   waits for an object and gives its bytes; on the same node the bytes are
   read in place in the shared-memory object store, not copied. Every task
   and object is an event in the cluster's log (see `lux sql`).

   Remote functions live in a module: a shared object built from code that
   includes this header and names each function with LUX_FUNCTION. The
   module's bytes are stored in the log, content-addressed, and workers load
   them from there, so the exact code of every task is on record. */

/* An object ID: the ID of the task that makes it (16 bytes) and the return
   index (4 bytes, big-endian). */
#define LUX_REF_LEN 20
typedef struct {
    uint8_t b[LUX_REF_LEN];
} lux_ref_t;

/* A connection to a cluster: the driver's, or a running task's. */
typedef struct lux_t lux_t;

typedef struct {
    const char *address;  /* NULL: $LUX_ADDRESS, else start the embedded default;
                             or a cluster directory started by `lux start --head` */
    const char *module;   /* path of the module (.so) holding the remote functions */
    const char *dir;      /* embedded default: where the run's directory goes (its log
                             stays there); NULL: $LUX_HOME/runs, or ~/.lux/runs */
    int workers;          /* embedded default: worker processes (0: one per core) */
    int shards;           /* embedded default: log shards (0: 1 below 4 cores, else 2) */
    uint64_t store_bytes; /* embedded default: object store size (0: a quarter of RAM,
                             at most 8 GiB) */
    const char *resources; /* embedded default: what the node has, "CPU=2,GPU=1,disk=3"
                              (NULL: CPU = cores) */
    int detached;         /* 1: the job's tasks run on after its driver leaves or dies
                             (0: they are cancelled then, see lux_cancel) */
    int64_t record_puts;  /* embedded default: the largest put whose bytes are kept
                             beside the log for lux replay (0: 256 MiB; negative:
                             none; INT64_MAX: every one) */
} lux_config_t;

/* Connect (or start the embedded default). NULL on failure. */
lux_t *lux_init(const lux_config_t *cfg);
/* Disconnect; the embedded default stops its cluster (its log stays in
   lux_dir()). Frees every ref the caller still holds. */
int lux_shutdown(lux_t **lx_p);
/* The cluster's directory: `lux sql --dir` it. */
const char *lux_dir(lux_t *lx);
/* The current job's ID (32 hex digits into out, 33 bytes). */
char *lux_job_id(lux_t *lx, char *out);

/* A value handed to a function, or read with lux_get: data is aligned to
   16 bytes, so it may be read in place as any type. */
typedef struct {
    const void *data;
    size_t size;
} lux_val_t;

/* An argument of a call: a value (data, size), or a ref (ref non-NULL).
   A value is at most LUX_VAL_MAX bytes: it travels in messages and is kept
   in the task's record in the log. lux_call, lux_actor_call and
   lux_actor_create refuse a larger one with LUX_EINVAL; pass it with
   lux_put and a ref instead. */
#define LUX_VAL_MAX (64 * 1024)
typedef struct {
    const void *data;
    size_t size;
    const lux_ref_t *ref;
} lux_arg_t;
#define LUX_VAL(p, n) ((lux_arg_t) {.data = (p), .size = (n)})
#define LUX_REF(r) ((lux_arg_t) {.ref = &(r)})

/* What a call asks for. Zero fields take the defaults. */
typedef struct {
    double cpus;           /* CPUs the task holds while it runs (default 1) */
    const char *resources; /* custom resources it holds, "GPU=1,disk=2" */
    int max_attempts;      /* runs allowed when its worker dies (default 3) */
    int timeout_ms;        /* cancel it with force when it has run this long
                              (0: no limit); see lux_cancel */
} lux_opts_t;

/* Call remote function fn with argc arguments; its nret return values get
   refs into refs[0..nret-1] (nret must match the function's). Returns at
   once. LUX_ENOTFOUND for an unknown function, LUX_EINVAL for a wrong
   number of arguments or returns. An argument ref that was never made
   (refs may come from other clients, so only the node can tell) makes the
   task fail: lux_get of its refs returns LUX_ETASK naming that ref. */
int lux_call(lux_t *lx, const char *fn, int argc, const lux_arg_t *argv, int nret,
             lux_ref_t *refs);
int lux_call_opts(lux_t *lx, const lux_opts_t *opts, const char *fn, int argc,
                  const lux_arg_t *argv, int nret, lux_ref_t *refs);

/* Store a value; its ref in *ref. The bytes are copied. */
int lux_put(lux_t *lx, const void *data, size_t size, lux_ref_t *ref);

/* Wait up to timeout_ms (-1: forever) for an object and give its bytes in
   *out, valid until the ref is freed. LUX_ETASK when the task that makes it
   failed, or it was lost and could not be rebuilt (lux_errmsg() names the
   task, or the chain of objects down to the cause, and says why),
   LUX_ETIMEDOUT, LUX_ENOTFOUND for a ref that was never made (or freed
   and without lineage), LUX_EDEAD as soon as the node manager is gone (any
   timeout, -1 included). A copy that could not be brought here now (no
   room in the store for a spilled one: LUX_EFULL; a pull from another
   node that failed: its code) fails this call only: the next asks again. */
int lux_get(lux_t *lx, const lux_ref_t *ref, lux_val_t *out, int timeout_ms);
/* The same for n refs; 0 when all are there, else the first error. */
int lux_get_many(lux_t *lx, int n, const lux_ref_t *refs, lux_val_t *out, int timeout_ms);

/* Wait until k of the n objects are ready (or failed), up to timeout_ms;
   ready[i] set to 1 for each that is. Returns how many are ready, or
   LUX_EDEADLK in an actor's method when k can only be reached by calls it
   made to its own actor (see lux_actor_call), or LUX_EDEAD when the node
   manager is gone. */
int lux_wait(lux_t *lx, int n, const lux_ref_t *refs, int k, int timeout_ms, int *ready);

/* Forget refs: their objects may be dropped, and pointers from lux_get
   into them become invalid. Calls made before the free still get them,
   calls made after do not (a freed put is gone for them; a task's result
   is rebuilt from its lineage, an actor call's cannot be). */
void lux_free(lux_t *lx, int n, const lux_ref_t *refs);

/* Cancel the task that makes ref (Ray's ray.cancel). A task still
   waiting or queued is dropped. A running one is interrupted: its worker
   gets a signal (SIGRTMIN+1, installed with SA_RESTART), which ends a
   pause, sleep, nanosleep or poll of the task with EINTR, and from then on
   lux_cancelled() is 1 in the task and its lux_get and lux_wait return
   LUX_ECANCELLED; a task that does not look goes on running (cooperative).
   With force, its worker is killed instead (and replaced). Either way,
   lux_get of its refs, and of every task that needs one of them, returns
   LUX_ECANCELLED, a task_cancelled event is logged (status 'cancelled' in
   the tasks view) and the task is never retried. 0 once the node has taken
   the request, and also when the task had finished already (its result
   stays); LUX_ENOTFOUND for a ref no task of this node makes (a put, or
   an ID never made), LUX_ENOSYS for an actor's call (kill the actor with
   lux_actor_kill). A job's unfinished tasks are cancelled with force when
   its driver leaves or dies, unless it is detached (lux_config_t). */
int lux_cancel(lux_t *lx, const lux_ref_t *ref, int force);
/* In a running task: 1 when it was asked to stop (lux_cancel without
   force), else 0. A long task may look now and then and return early. */
int lux_cancelled(lux_t *lx);

/* Refs as text: 40 hex digits (out: 41 bytes); and back (0 or LUX_EINVAL). */
char *lux_ref_hex(const lux_ref_t *ref, char *out);
int lux_ref_parse(lux_ref_t *ref, const char *hex);

/* ======================================================================
   Actors: state in a worker process, methods called in order
   ======================================================================

   An actor is an object of a class in a module, living in a worker process
   of its own. lux_actor_create returns a handle at once; lux_actor_call
   returns refs at once, like lux_call. The calls one client makes (a
   driver, or the tasks of one worker) run in the order it made them, one
   at a time; calls from several clients interleave, and a call waiting
   for a ref argument holds back the calls after it. The order the actor applied
   its calls is the order of their actor_call events in the log, and no
   result of a call is handed out before its event is committed.

   When the actor's process dies and it has restarts left (max_restarts,
   default 0 as in Ray), it is recreated: it loads its latest checkpoint
   (or runs its constructor again when it has none) and re-applies every
   call logged after that checkpoint, in log order, before it takes new
   calls; callers waiting for results get them, and results handed out
   before stay what they were. Checkpoints are made every checkpoint_every
   calls, or on demand (lux_actor_checkpoint), by the class's save function;
   they are objects named by actor_checkpoint events. A method must depend
   only on the actor's state and its arguments, as a task on its arguments.

   A handle is a value: pass it to tasks and other actors with
   LUX_VAL(&handle, sizeof handle), and call through it there. A method may
   call its own actor, but the call runs after the method returns: waiting
   for its result there (lux_get, lux_wait) fails at once with LUX_EDEADLK
   rather than wait for ever. */

typedef struct {
    uint8_t b[16];
} lux_actor_t;

/* A class: create makes the state from the constructor's arguments (NULL
   and lux_raise to fail); destroy frees it when its process ends cleanly
   (an actor killed, or whose process dies, ends without it: keep nothing
   in it that must run); save sets return 0 to the state's bytes
   (lux_set); load makes a state from such bytes (NULL and lux_raise when
   they are not good). save and load are both given or both NULL: without
   them an actor cannot checkpoint, and restarts by running create again. */
typedef void *(*lux_actor_new_t)(lux_t *lx, int argc, const lux_val_t *argv);
typedef void (*lux_actor_free_t)(void *self);
typedef int (*lux_actor_save_t)(lux_t *lx, void *self);
typedef void *(*lux_actor_load_t)(lux_t *lx, const lux_val_t *state);
/* A method: like a remote function, with the actor's state. */
typedef int (*lux_method_t)(lux_t *lx, void *self, int argc, const lux_val_t *argv);

typedef struct {
    const char *name;      /* a name to find it by (lux_actor_lookup), or NULL */
    double cpus;           /* CPUs it holds while it lives (default 0: an actor
                              mostly waits for calls) */
    const char *resources; /* custom resources it holds, "GPU=1" */
    int max_restarts;      /* times it is recreated after its process dies (default 0) */
    int checkpoint_every;  /* calls between checkpoints (0: none but on demand) */
} lux_actor_opts_t;

/* Create an actor of class cls (in the driver's module); opts may be NULL.
   LUX_ENOTFOUND for an unknown class; LUX_EEXIST, with no actor made,
   when opts->name is the name of another live actor (checked with the
   node before it returns: one round trip for a named actor). Creation goes
   on in the background: a constructor that fails makes every call fail
   with its message. The actor lives until it is killed or its
   creator (this driver, or the worker whose task created it) goes away. */
int lux_actor_create(lux_t *lx, const char *cls, int argc, const lux_arg_t *argv,
                     const lux_actor_opts_t *opts, lux_actor_t *actor);
/* Call method on the actor; nret refs into refs. Returns at once: like
   lux_call, the call is queued and sent with the client's next message to
   its node (lux_get, lux_wait, or a full batch); an unknown method or a
   wrong count of arguments or returns shows in lux_get of its refs. */
int lux_actor_call(lux_t *lx, const lux_actor_t *actor, const char *method, int argc,
                   const lux_arg_t *argv, int nret, lux_ref_t *refs);
/* Find a named actor (waiting up to timeout_ms for it to be created). */
int lux_actor_lookup(lux_t *lx, const char *name, lux_actor_t *actor, int timeout_ms);
/* Kill it now (no restart): its pending and later calls fail. */
int lux_actor_kill(lux_t *lx, const lux_actor_t *actor);
/* Checkpoint it after the calls made so far; returns once the checkpoint
   is made (LUX_ENOSYS from a class without save; LUX_EDEAD when the actor
   is dead, or its process died before the checkpoint was made, even if it
   restarts). */
int lux_actor_checkpoint(lux_t *lx, const lux_actor_t *actor);
/* A handle passed as a value argument (0, or LUX_EINVAL for the wrong size). */
int lux_actor_from(const lux_val_t *v, lux_actor_t *actor);
/* The actor's ID as text (32 hex digits into out, 33 bytes). */
char *lux_actor_hex(const lux_actor_t *actor, char *out);

/* ---- inside a remote function ------------------------------------------------- */

/* A remote function: argv[i] are its arguments (refs already resolved to
   their bytes), and it sets its return values with lux_set. Returns 0, or
   lux_raise(...) to fail with a message. lx is the task's connection: the
   function may call, put and get like a driver (nested tasks). */
typedef int (*lux_fn_t)(lux_t *lx, int argc, const lux_val_t *argv);

/* Set return value i (copied). */
int lux_set(lux_t *lx, int i, const void *data, size_t size);
/* Or get a buffer for it in the object store and write there (no copy);
   NULL (and the call fails) when the store cannot hold it. */
void *lux_set_alloc(lux_t *lx, int i, size_t size);
/* Fail the task: `return lux_raise(lx, "n must be positive, got %d", n);` */
int lux_raise(lux_t *lx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The ID of the running task, and its attempt (1 for the first). */
const lux_ref_t *lux_task_ref(lux_t *lx);
int lux_attempt(lux_t *lx);
/* The GPUs the running task (or actor) holds: their ids (as in
   CUDA_VISIBLE_DEVICES, which is set to them) into ids[max]; returns how
   many it holds, 0 without GPUs or outside a task. */
int lux_gpu_ids(lux_t *lx, int *ids, int max);

/* Register an actor class and its methods (LUX_ACTOR, LUX_METHOD). */
void lux_register_class(const char *name, int nargs, lux_actor_new_t create,
                        lux_actor_free_t destroy, lux_actor_save_t save, lux_actor_load_t load);
void lux_register_method(const char *cls, const char *name, lux_method_t fn, int nargs,
                         int nret);
/* Register a function (called by LUX_FUNCTION when the module loads). */
void lux_register_function(const char *name, lux_fn_t fn, int nargs, int nret);
/* Register the module's entry point for `lux run` (LUX_MAIN). */
typedef int (*lux_main_t)(lux_t *lx, int argc, char **argv);
void lux_register_main(lux_main_t fn);

/* In a module: LUX_FUNCTION(name, nargs, nret) after `int name(lux_t *,
   int, const lux_val_t *)`; nargs -1 takes any number of arguments. */
#define LUX_FUNCTION(fn, nargs, nret)                                         \
    static void __attribute__((constructor)) lux__register_##fn(void)        \
    {                                                                         \
        lux_register_function(#fn, fn, nargs, nret);                          \
    }
/* In a module: LUX_ACTOR(Cls, nargs, create, destroy, save, load) names
   a class (save and load may be NULL); LUX_METHOD(Cls, name, nargs, nret)
   after `int Cls_name(lux_t *, void *self, int, const lux_val_t *)`. */
#define LUX_ACTOR(cls, nargs, create, destroy, save, load)                    \
    static void __attribute__((constructor)) lux__register_class_##cls(void) \
    {                                                                         \
        lux_register_class(#cls, nargs, create, destroy, save, load);        \
    }
#define LUX_METHOD(cls, name, nargs, nret)                                    \
    static void __attribute__((constructor)) lux__register_##cls##_##name(void) \
    {                                                                         \
        lux_register_method(#cls, #name, cls##_##name, nargs, nret);         \
    }
/* In a module run by `lux run MODULE.so ARGS`: LUX_MAIN(fn) after
   `int fn(lux_t *, int argc, char **argv)`. */
#define LUX_MAIN(fn)                                                          \
    static void __attribute__((constructor)) lux__register_main(void)        \
    {                                                                         \
        lux_register_main(fn);                                                \
    }

/* A module run by `lux run` may also read its own arguments before the
   cluster starts and set what lux_init gets (e.g. workers for the
   embedded default, from its own --workers option): LUX_CONFIGURE(fn)
   after `int fn(lux_config_t *cfg, int argc, char **argv)`. cfg holds what
   `lux run`'s options set; argc and argv are those LUX_MAIN will get. The
   function returns 0 to go on, or an exit status above 0 to stop there,
   before anything has started (bad arguments; it may also exit(0) after
   printing its --help). */
typedef int (*lux_configure_t)(lux_config_t *cfg, int argc, char **argv);
void lux_register_configure(lux_configure_t fn);
#define LUX_CONFIGURE(fn)                                                     \
    static void __attribute__((constructor)) lux__register_configure(void)   \
    {                                                                         \
        lux_register_configure(fn);                                           \
    }

#ifdef __cplusplus
}
#endif
#endif

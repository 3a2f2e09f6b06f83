/*  exec_proto - the bodies of the runtime's messages between clients,
    workers and their node manager (types in src/net/net_wire.h; bytes
    documented at the top of exec_proto.c and in doc/protocol.md).

    Every decoder bounds every length and count, so garbage decodes to
    LUX_EPROTO and never reads past the frame.
*/
#ifndef EXEC_PROTO_H_INCLUDED
#define EXEC_PROTO_H_INCLUDED

#include "../lux.h"
#include "../util/util_buf.h"
#include "../util/util_id.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define EXEC_INLINE_MAX (64 * 1024) /* objects this small travel in messages */
#define EXEC_MAX_RETURNS 64
#define EXEC_MAX_ARGS 4096
#define EXEC_NAME_MAX 255

/* How an object travels. */
enum exec_where {
    EXEC_W_INLINE = 1, /* its bytes follow */
    EXEC_W_ARENA = 2,  /* at an offset in the node's object store */
    EXEC_W_ERROR = 3,  /* the task that makes it failed: a message follows */
    EXEC_W_MISSING = 4, /* no such object (never created, or freed and without
                           lineage): a message follows */
    EXEC_W_CANCELLED = 5, /* the task that makes it was cancelled (lux_cancel),
                            or one it needed was: a message follows */
    EXEC_W_UNAVAILABLE = 6 /* sent to a client only: this GET could not be served
                              now (no room to bring back a spilled copy, a pull
                              from another node failed); the object has not
                              failed, and a later GET may succeed. The code
                              (LUX_E*, negated: one byte) and a message follow */
};

#define EXEC_W_PINNED 0x80 /* flag on `where` sent to a client: the node
                              manager pinned this arena object for it */

typedef struct {
    lux_ref_t id;
    uint8_t where;        /* enum exec_where */
    bool pinned;          /* ARENA and pinned for the receiving client */
    uint64_t size;        /* bytes of the value (of the message, for an error) */
    const uint8_t *bytes; /* INLINE: the value; ERROR: the message */
    uint64_t off;         /* ARENA: where */
    int code;             /* UNAVAILABLE: why, a LUX_E* code */
} exec_obj_t;

void exec_obj_encode(util_buf_t *b, const exec_obj_t *o);
int exec_obj_decode(util_rd_t *r, exec_obj_t *o);

/* GET's count (u32) with this bit: asked by lux_wait, whose pulls from
   other nodes come after those of lux_get (doc/protocol.md). */
#define EXEC_GET_WAIT 0x80000000u

/* An argument as submitted: a value or a ref. */
enum { EXEC_ARG_VALUE = 0, EXEC_ARG_REF = 1 };

/* What a SPEC submits. */
enum { EXEC_SPEC_TASK = 0, EXEC_SPEC_CREATE = 1, EXEC_SPEC_CALL = 2 };

/* A task (or an actor's creation, or a call of one of its methods) as a
   client submits it. */
typedef struct {
    util_id_t task;         /* its ID */
    util_id_t parent;       /* the task (or driver) that submitted it */
    util_id_t job;          /* the job it belongs to */
    uint8_t module[16];     /* hash of the module holding fn */
    const char *fn;         /* function name (not NUL-terminated) */
    uint16_t fn_len;
    uint8_t nret;           /* return values */
    uint8_t max_attempts;   /* runs allowed when a worker dies */
    uint32_t cpus_milli;    /* CPUs held while it runs, in thousandths */
    const char *res;        /* custom resources "GPU=1,disk=2" */
    uint16_t res_len;
    uint16_t argc;
    const uint8_t *args;    /* encoded arguments (exec_args_*) */
    uint32_t args_len;
    uint8_t kind;           /* EXEC_SPEC_*; for CREATE fn is the class, for CALL
                               the method (and module is filled by the node) */
    util_id_t actor;        /* CREATE, CALL */
    uint16_t max_restarts;  /* CREATE */
    uint32_t ckpt_every;    /* CREATE */
    const char *name;       /* CREATE: the name to find it by (may be empty) */
    uint16_t name_len;
    uint32_t timeout_ms;    /* TASK: cancelled with force after running this long
                               (0: no limit) */
} exec_spec_t;

void exec_spec_encode(util_buf_t *b, const exec_spec_t *s);
int exec_spec_decode(util_rd_t *r, exec_spec_t *s);

/* The body of a task_submitted event (what a rebuild or replay needs
   beyond the event's columns): max_attempts u8, cpus_milli u32, resources
   (u16 length + bytes), argc u16, then the encoded arguments. */
void exec_spec_body(util_buf_t *b, const exec_spec_t *s);
int exec_spec_from_body(exec_spec_t *s, const uint8_t *body, size_t n);

/* The body of an actor_call event: nret u8, then the task body above. */
void exec_call_body(util_buf_t *b, const exec_spec_t *s);
int exec_call_from_body(exec_spec_t *s, const uint8_t *body, size_t n);

/* The body of an actor_created event: max_restarts u16, ckpt_every u32,
   then the task body above (cpus, resources, constructor arguments). */
void exec_actor_body(util_buf_t *b, const exec_spec_t *s);
int exec_actor_from_body(exec_spec_t *s, const uint8_t *body, size_t n);

/* Arguments: kind u8, then a value (length u32, bytes) or a ref (20). */
void exec_arg_put_value(util_buf_t *b, const void *data, uint32_t size);
void exec_arg_put_ref(util_buf_t *b, const lux_ref_t *ref);
typedef struct {
    uint8_t kind;
    const uint8_t *data; /* value */
    uint32_t size;
    lux_ref_t ref;       /* ref */
} exec_arg_t;
/* Walk argc encoded arguments; false at the end or on garbage (r->bad). */
bool exec_arg_next(util_rd_t *r, exec_arg_t *a);

/* What a RUN asks of a worker. */
enum {
    EXEC_RUN_TASK = 0,   /* run function fn */
    EXEC_RUN_CREATE = 1, /* become actor `actor` of class fn, from the arguments */
    EXEC_RUN_CALL = 2,   /* call method fn of the actor it hosts */
    EXEC_RUN_SAVE = 3,   /* save the actor's state as return 0 (a checkpoint) */
    EXEC_RUN_LOAD = 4    /* become actor `actor` of class fn from saved state (argument 0) */
};

#define EXEC_RUN_GPUS 64   /* GPU ids a run can hold */
#define EXEC_GPUS_NONE 255 /* ngpus of a run on a node without GPUs */

/* A task handed to a worker: what it needs to run it. Arguments are
   resolved objects (INLINE or ARENA). */
typedef struct {
    util_id_t task;
    util_id_t job;
    uint8_t module[16];
    const char *fn;
    uint16_t fn_len;
    uint8_t nret;
    uint8_t attempt;
    uint16_t argc;
    const uint8_t *objs; /* argc encoded exec_obj_t */
    uint32_t objs_len;
    uint8_t kind;        /* EXEC_RUN_* */
    util_id_t actor;     /* actor kinds */
    uint64_t idx;        /* CALL: the call's number; SAVE: calls the checkpoint covers */
    uint8_t ngpus;       /* GPUs it holds (their ids in gpus), or EXEC_GPUS_NONE: the
                            node has no GPU resource, leave CUDA_VISIBLE_DEVICES alone */
    uint16_t gpus[EXEC_RUN_GPUS];
} exec_run_t;

void exec_run_encode(util_buf_t *b, const exec_run_t *t, const exec_obj_t *args);
int exec_run_decode(util_rd_t *r, exec_run_t *t);

/* A worker's report on one task. */
typedef struct {
    util_id_t task;
    uint8_t attempt;
    int32_t status;        /* 0, or a LUX_E* code */
    const char *msg;       /* error message when status != 0 */
    uint16_t msg_len;
    int64_t t_start, t_end;
    uint8_t nret;
    const uint8_t *outs;   /* nret encoded exec_obj_t, then nret fingerprints (16 each) */
    uint32_t outs_len;
} exec_result_t;

void exec_result_encode(util_buf_t *b, const exec_result_t *r, const exec_obj_t *outs,
                        const uint8_t (*fps)[16]);
int exec_result_decode(util_rd_t *r, exec_result_t *res);

/* Who says NODE_HELLO. */
enum { EXEC_HELLO_DRIVER = 1, EXEC_HELLO_WORKER = 2 };

/* The signal a node manager sends a worker to interrupt a task it
   cancels (lux_cancel without force), with a token naming the task
   (sigqueue's value): the worker ends the task's blocking system call
   with EINTR and lets it see that it was cancelled, or skips it when it
   has not started. Real-time, so that several are queued, not merged. */
#define EXEC_CANCEL_SIGNAL (SIGRTMIN + 1)
/* The token of a task for EXEC_CANCEL_SIGNAL: 32 bits of its ID. */
uint32_t exec_cancel_token(const util_id_t *task);

/* A 128-bit fingerprint of bytes: fast (not cryptographic), for the log's
   record of what a task produced, checked by replays. */
void exec_fingerprint(uint8_t out[16], const void *p, size_t n);

/* Object IDs: a task's return i, and the parts of an ID. */
void exec_ref_make(lux_ref_t *ref, const util_id_t *task, uint32_t idx);
uint32_t exec_ref_idx(const lux_ref_t *ref);
void exec_ref_task(const lux_ref_t *ref, util_id_t *task);

#endif

/*  lux_replay - what the parts of `lux replay` share (lux_replay.c runs a
    recorded job again and compares; lux_replay_load.c reads it from the
    log). Private to tools/.
*/
#ifndef LUX_REPLAY_H_INCLUDED
#define LUX_REPLAY_H_INCLUDED

#include "lux.h"
#include "lux_hist.h"
#include "exec/exec_proto.h"
#include "util/util_id.h"
#include "util/util_idmap.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define REPLAY_WAIT_MS 120000
#define REPLAY_MAX_RET 8

enum { V_NONE = 0, V_MATCH, V_MISMATCH, V_NONDET, V_NOT_RUN };

typedef struct {
    int kind;            /* DB_K_task_submitted, actor_created, actor_call */
    util_id_t task;      /* the task's, call's or creation's ID */
    util_id_t parent;
    util_id_t actor;     /* actor_created, actor_call */
    char *fn;            /* function, class or method */
    char *name;          /* actor_created: the name it was created with, or NULL */
    uint8_t *body;
    uint32_t body_len;
    uint8_t nret;
    int64_t idx;         /* a call's index in its actor's order */
    bool top;            /* submitted by the driver */
    bool drive;          /* submitted by the replay's driver: the driver's, and every
                            call of an actor the driver created, in the actor's order */
    bool want;           /* to replay (all, or --task's closure) */
    int scope;           /* 0 unknown, 1 in scope, -1 not (nested under an unwanted item) */
    int64_t attempt;     /* recorded: the last attempt */
    int64_t ts, done_ts; /* recorded: when it was submitted, when it ended: both t_end, on
                            the node's clock (the head's ts in an older log) */
    bool waited;         /* this round: its outputs were waited for */
    bool mirrored;       /* this round: a driver's call made on the tasks' twin too */
    lux_ref_t mirror[REPLAY_MAX_RET]; /* ...its refs there */
    bool task_calls;     /* actor_created: its tasks called it (it gets a twin) */
    int outcome;         /* recorded: task_finished, task_failed, 0 */
    uint8_t fp[16];      /* recorded fp of task_finished */
    /* a replay (two rounds at most) */
    char *why_not;       /* could not be replayed: why */
    bool sent;           /* the driver's: submitted in this round */
    bool mapped;         /* new_id is known */
    util_id_t new_id;
    lux_actor_t new_actor; /* actor_created: the re-created actor, for the calls */
    bool created;
    lux_actor_t task_actor; /* ...and its twin, for the tasks given its handle */
    bool task_created;
    lux_ref_t refs[REPLAY_MAX_RET];
    int new_outcome[2];
    uint8_t new_fp[2][16];
    int verdict;
    uint8_t *ref_args;   /* the object IDs of its ref arguments, 20 each */
    uint32_t nref_args;
} replay_item_t;

typedef struct {
    util_id_t actor;
    int64_t idx;
    uint8_t fp[16];
    bool found;
    uint8_t new_fp[16];
} replay_ckpt_t;

/* A recorded actor restart: its process died after call `after` had been
   numbered; it loaded the checkpoint of call ckpt (0: the constructor). */
typedef struct {
    util_id_t actor;
    int64_t ckpt, after;
    bool done;           /* this round: re-enacted */
    pid_t pid;           /* ...by killing this process */
    char *why_not;       /* could not be re-enacted: why */
} replay_restart_t;

typedef struct {
    lux_hist_t *h;
    util_id_t job;
    replay_item_t *t;
    size_t n;
    util_idmap_t *by_task;   /* task ID -> index + 1 */
    util_idmap_t *by_actor;  /* actor ID -> index + 1 of its actor_created */
    replay_ckpt_t *ck;
    size_t nck;
    replay_restart_t *rs;         /* recorded actor restarts, in log order */
    size_t nrs;
    char blobs[PATH_MAX];    /* the recorded puts (exec_blob.h) */
    size_t puts;             /* recorded puts read back from blobs, their hash checked */
    uint64_t put_bytes;
    size_t ev_puts;          /* and from their object_put events' bodies (a small put) */
    uint64_t ev_put_bytes;
    sqlite3_stmt *put_st;    /* a put's object_put event */
    util_idmap_t *bad_puts;  /* object ID -> char * why it could not be read (once each) */
    util_idmap_t *objs;      /* old object ID -> new ref, this round */
    util_idmap_t *put_ids;   /* the job's puts' IDs (16 bytes) -> 1 */
    char mod[PATH_MAX + 16], runs[PATH_MAX + 16];
    char newdir[2][PATH_MAX];
    int workers;
    size_t fg;               /* --foreground: the task's index + 1 */
    int fg_status;           /* its outcome: 0 same as recorded, 1 not, < 0 an error */
} replay_t;

/* Read the recorded job r->job from r->h: its tasks, actor creations and
   calls (r->t), checkpoints (r->ck) and restarts (r->rs). 0 or a code. */
int replay_load(replay_t *r);

/* The decoded submission of t (its spec), or nonzero when it does not decode. */
int replay_spec(const replay_item_t *t, exec_spec_t *s);

/* Mark item i, the driver's items its arguments come from, and for a call
   its actor and the driver's calls before it, as wanted. */
void replay_want(replay_t *r, size_t i);

/* Whether item i is part of this replay: wanted, or nested under one that is. */
bool replay_in_scope(replay_t *r, size_t i);

#endif

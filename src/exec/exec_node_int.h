/*  exec_node_int - the node manager's state: the types its parts share.
    Each part declares its functions in its own header, so that the
    #include lines say which part calls which (tools/check-includes.sh
    checks it, and lists the arrows that still point up):
        exec_node.c        the actor: its loop, connections, routing of messages  exec_node.h
        exec_node_stats.c  the node's state for its heartbeat and lux status     exec_node_stats.h
        exec_store.c       the object store's requests (ALLOC, PUT, GET, FREE)    exec_store.h
        exec_node_cancel.c cancelling tasks, timeouts                             exec_node_cancel.h
        exec_node_actor_res.c  what an actor's process answers: results, death   exec_node_actor_res.h
        exec_node_actor.c  actors: creation, calls, restarts, checkpoints         exec_node_actor.h
        exec_ractor.c      actors on other nodes                                  exec_ractor.h
        exec_rcalls.c      a restarted actor's calls from the head's log          exec_rcalls.h
        exec_remote.c      tasks spilled to other nodes, the global scheduler     exec_remote.h
        exec_node_sched.c  the local scheduler: submission, dispatch, results,
                           workers blocked or dead                                exec_node_sched.h
        exec_node_graph.c  the task graph: tasks, dependencies, arguments,
                           finishing, failure cascades, rebuilds                  exec_node_graph.h
        exec_pool.c        worker processes and resources                         exec_pool.h
        exec_node_cpu.c    CPU placement of workers                               exec_node_cpu.h
        exec_node_gpu.c    which GPUs a task or actor holds                       exec_node_gpu.h
        exec_node_far.c    a task's arguments pulled from other nodes             exec_node_far.h
        exec_xfer.c        objects pulled from other nodes                        exec_xfer.h
        exec_node_obj.c    the object store: objects, pins, eviction, spilling    exec_node_obj.h
        exec_node_log.c    events to the log, write-ahead lineage, lookups        exec_node_log.h
        exec_node_blob.c   puts kept for replay                                   exec_node_blob.h
        exec_peer.c        the node's tcp endpoint, to other nodes                exec_peer.h
    Nothing here is used outside the parts above.
*/
#ifndef EXEC_NODE_INT_H_INCLUDED
#define EXEC_NODE_INT_H_INCLUDED

#include "exec_arena.h"
#include "../net/net_link.h"
#include "../db/db_cluster.h"
#include "exec_proto.h"
#include "../db/db_client.h"
#include "../db/db_store.h"
#include "../net/net_ep.h"
#include "../net/net_wire.h"
#include "../util/util_buf.h"
#include "../util/util_complain.h"
#include "../util/util_idmap.h"
#include "../util/util_spin.h"

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct nm nm_t;
typedef struct nm_task nm_task_t;
typedef struct nm_obj nm_obj_t;
typedef struct nm_client nm_client_t;
typedef struct nm_worker nm_worker_t;
typedef struct nm_conn nm_conn_t;
struct nm_log;

/* Where the log says a lineage record is: an event appended by our log
   client to `shard` with event ID `cseq` (0: already committed). */
typedef struct {
    uint32_t shard;
    uint64_t cseq;
} nm_logpos_t;

/* --- objects ---------------------------------------------------------------------- */

enum nm_obj_state {
    OBJ_READY = 1,   /* the value is here: inline bytes or in the arena */
    OBJ_ERROR,       /* the task that makes it failed: bytes hold the message */
    OBJ_SPILLED,     /* a put, moved to disk to make room (or an output held on
                        disk for a task that waits: held_disk) */
    OBJ_LOST,        /* a task output, dropped to make room: rebuild from lineage */
    OBJ_MISSING      /* not in the table: what a GET of an ID nobody made is told */
};

struct nm_obj {
    lux_ref_t id;           /* 20 bytes */
    uint8_t state;          /* enum nm_obj_state */
    uint8_t where;          /* EXEC_W_INLINE or EXEC_W_ARENA while READY */
    bool is_put : 1;        /* made by lux_put (spill it) or by a task (drop it) */
    bool owned : 1;         /* its owner has not freed it */
    bool freed : 1;         /* a put its owner freed: gone for calls made after the free,
                               though the tasks queued for it still take it */
    bool copy : 1;          /* a copy pulled from another node (object_copied logged) */
    bool listed : 1;        /* object_locations lists this node for it: its object_put,
                               its task's task_finished or its object_copied was logged
                               here; on a tcp cluster (and for a pulled copy) its going
                               is logged too (object_lost, nm_obj_delete), so that the
                               view stops listing this node for it */
    bool cancelled : 1;     /* ERROR: its task was cancelled (or one it needed) */
    bool rebuilt : 1;       /* a copy made by a rebuild for no owner: when nothing needs
                               it any more it stays, evictable, for the next rebuild
                               that needs it (nm_obj_let_go), and goes when evicted */
    bool kept : 1;          /* a rebuilt inline copy kept so: on the nm->kept list */
    bool spilling : 1;      /* SPILLED: its bytes on the heap while the writer thread
                               writes them, or after that failed: its job is in
                               nm->spill_of (exec_node_obj.c) */
    bool holding : 1;       /* tasks waiting hold it rebuilt: nm->holds has its counts
                               (nm_obj_hold_t) */
    uint8_t unread : 5;     /* rebuilt since a task or a reader last had it: at
                               NM_REBUILD_UNREAD_MAX, nm_rebuild gives up on it */
    uint64_t size;
    uint8_t *bytes;         /* INLINE value, or ERROR message (malloc'd) */
    uint64_t off;           /* ARENA offset */
    nm_client_t *owner;     /* who gets told when it is ready (NULL: gone) */
    nm_logpos_t lineage;    /* the event that records how it was made */
    uint8_t fp[16];         /* fingerprint of the value */
    nm_obj_t *lru_prev, *lru_next; /* unpinned READY arena objects, oldest first */
    uint32_t pins;          /* readers holding pointers, and running tasks: no eviction */
    uint32_t uses;          /* queued tasks that will read it: no deletion */
    uint32_t resv;          /* of its pins, those of ready tasks reserving it */
};

/* A node keeps one nm_obj per object it knows: a million queued tasks are
   a million of them, each calloc'd (a glibc chunk of its size + 8, rounded
   up to 16). What few objects use lives beside them, in the node's side
   tables (nm->kept, nm->spill_of, nm->holds), flagged by a bit here. Its
   size is a decision: 120 bytes take a 128-byte chunk (base cf8de39's 128
   took 144; stop 43's 184, 192). */
_Static_assert(sizeof(struct nm_obj) == 120, "struct nm_obj grew: see doc/benchmarks.md");

/* What tasks waiting for a rebuilt object hold of it (DESIGN 7, rule 10),
   in nm->holds while either is not 0 (nm_obj_t.holding). */
typedef struct {
    uint32_t held;          /* of its pins, those of tasks waiting that hold it rebuilt
                               (NM_ARG_HELD): in nm->held_bytes */
    uint32_t held_disk;     /* tasks waiting that hold it rebuilt beyond rule 10's bound
                               (NM_ARG_DISK): not pinned, but spilled, not dropped,
                               when evicted */
    uint32_t replay;        /* an actor's calls after its checkpoint that took it (kept
                               for a replay, nm_actor_keep): spilled, not dropped, when
                               evicted (rule 15) */
} nm_obj_hold_t;

/* How many times in a row an object may be rebuilt without any task or
   reader having it in between (each rebuilt copy evicted again first):
   past it, what needs the object fails with a message naming it, rather
   than the node rebuilding it for ever (issue 24: 13,590 times in 21
   minutes, before rebuilt outputs were held for their tasks). */
#define NM_REBUILD_UNREAD_MAX 16
_Static_assert(NM_REBUILD_UNREAD_MAX < 31, "nm_obj_t.unread has 5 bits");

/* How many bytes of rebuilt inline copies (values under EXEC_INLINE_MAX,
   on the node's heap) are kept once nothing needs them, for the next
   rebuild that does (nm_obj_let_go); the oldest go first. */
#define NM_KEPT_INLINE_MAX (4u << 20)

/* A kept copy's neighbours on that list, oldest first (nm->kept). */
typedef struct {
    nm_obj_t *prev, *next;
} nm_kept_t;

/* --- tasks ---------------------------------------------------------------------------- */

enum { NM_ARG_COUNTED = 1, NM_ARG_HELD = 2, NM_ARG_DISK = 4 }; /* nm_task_t.counted[i] */

/* What an nm_task_t is: a task, or one of an actor's runs. */
enum nm_task_kind {
    T_TASK = 0,   /* a remote function */
    T_CREATE,     /* an actor's creation (its constructor's arguments) */
    T_CALL,       /* a method call */
    T_SAVE,       /* a checkpoint: the actor's state as output 0 */
    T_LOAD        /* a restart from a checkpoint (argument 0) */
};

enum nm_task_state {
    TASK_WAITING = 1, /* for its arguments */
    TASK_READY,       /* in the ready queue */
    TASK_RUNNING,     /* handed to a worker */
};

/* A task waiting for output idx of another. */
struct nm_dep {
    nm_task_t *task;
    uint32_t idx;
};

/* What only an actor's run (enum nm_task_kind but T_TASK) has beside its
   task: its number in the actor's order, and its results held until its
   event commits (exec_node_actor.c). Allocated with the run, freed by
   nm_task_free. */
typedef struct nm_run {
    uint64_t idx;             /* CALL: its number once sent (0 before); SAVE: calls covered */
    bool held;                /* done, waiting for its actor_call event to commit */
    bool replay;              /* re-applied from the log; its results were handed out before */
    int32_t fail_status;      /* held: the call failed with this ... */
    char *fail_msg;           /* ... and this message */
    uint64_t op_req;          /* SAVE asked for by lux_actor_checkpoint: its request
                                 (the asking client is the task's ->owner) */
    int64_t asked_ms;         /* ... when it was asked: its wait in the actor's queue
                                 is bounded (exec_node_actor_res.c nm_actor_ckpt_tick) */
    uint8_t *held_outs;       /* held: its outputs as reported (exec_obj_t, then fps) */
    uint32_t held_len;
    uint64_t sent_bytes;      /* sent: the store bytes of its arguments it holds pinned */
    struct nm_task *dup;      /* a replay sent to the worker: the same call sent again by
                                 its caller's node, answered with this run's results
                                 (exec_ractor.c s_merge); on no list meanwhile */
} nm_run_t;

struct nm_task {
    util_id_t id;
    util_id_t parent;
    util_id_t job;
    uint8_t module[16];
    char *fn;                 /* owned, NUL-terminated */
    uint8_t *args;            /* owned copy of the encoded arguments */
    uint32_t args_len;
    uint16_t argc;
    uint8_t *counted;         /* per argument (refs only): NM_ARG_COUNTED, counted in its
                                 object's uses; NM_ARG_HELD, a rebuilt object pinned for
                                 this task until it is handed to a worker; NM_ARG_DISK,
                                 one held beyond the bound: spilled if evicted */
    uint8_t nret;
    uint8_t state;            /* enum nm_task_state */
    uint8_t attempt;          /* 1 for the first run */
    uint8_t max_attempts;
    bool rebuild;             /* run again to rebuild lost outputs */
    bool keep_outputs;        /* rebuilt for another node's pull (exec_xfer.c s_make):
                                 its outputs stay, unowned, until evicted */
    uint32_t cpus_milli;
    char *res;                /* custom resources, owned, or NULL */
    uint32_t waiting;         /* arguments not ready yet */
    nm_client_t *owner;       /* who submitted it (gets its outputs) */
    uint64_t freed;           /* outputs its owner freed before they were made (bit i) */
    nm_worker_t *worker;      /* running it, or NULL */
    nm_task_t *next;          /* in the ready queue or a worker's queue */
    struct nm_dep *dependents; /* tasks waiting for one of its outputs */
    uint32_t ndeps, capdeps;
    bool pinned;              /* its arguments are pinned: it was handed to a worker, or
                                 it is reserved (below) */
    bool reserved;            /* in the ready queue with its arguments pinned (s_reserve) */
    int64_t room_since_ms;    /* an argument to restore has found no room since then (0) */
    bool room_noted;          /* ... and it was logged waiting past LUX_STORE_WAIT_MS */
    bool doomed;              /* failing with another task (a failure cascade) */
    bool suspect;             /* its worker died holding it and others: runs alone */
    bool nested;              /* submitted by a task: queued ahead of drivers' work */
    nm_client_t **waiters;    /* clients that asked for an output (GET) */
    uint16_t nwaiters, capwaiters;
    nm_logpos_t lineage;      /* its task_submitted event */
    /* what it is: a task, or an actor's run (the rest of a run is ->run) */
    uint8_t kind;             /* enum nm_task_kind */
    struct nm_actor *actor;   /* actor kinds (NULL: a call to no actor, failing) */
    struct nm_run *run;       /* actor kinds: what only actors use; NULL in a task */
    /* cancelling (exec_node_cancel.c) */
    uint32_t timeout_ms;      /* cancelled with force after running this long (0: never) */
    int64_t deadline_ms;      /* running with a timeout: when it ends (0: none) */
    bool cancel_req;          /* cancelled while on a worker: fails so when it reports */
    char *cancel_why;         /* ... with this message (owned) */
    /* spilled to another node (exec_remote.c) */
    bool remote;              /* sent away: its outputs come back, its events are the
                                 other node's */
    bool spilled;             /* it was offered to the global scheduler once */
    util_id_t rnode;          /* the node it runs on (zero while being placed) */
    uint8_t rgot;             /* outputs back so far */
    /* arguments held on other nodes (exec_node_far.c) */
    uint16_t nfar;            /* pulls of its arguments under way (counted in waiting) */
    bool far_later;           /* not pulled at submission: it is placed first */
};

/* A walk over a task's arguments in their order: nm_args_init, then
   while (nm_args_next(&it, &a, &i)) with i the index of a (into t->counted). */
typedef struct {
    util_rd_t r;
    int i;
} nm_args_t;

static inline void
nm_args_init(nm_args_t *it, const nm_task_t *t)
{
    util_rd_init(&it->r, t->args, t->args_len);
    it->i = -1;
}

static inline bool
nm_args_next(nm_args_t *it, exec_arg_t *a, int *i)
{
    if (!exec_arg_next(&it->r, a))
        return false;
    *i = ++it->i;
    return true;
}

/* nm_args_next for the arguments that are references only (the others are
   stepped over; i still counts them). */
static inline bool
nm_args_next_ref(nm_args_t *it, exec_arg_t *a, int *i)
{
    while (nm_args_next(it, a, i))
        if (a->kind == EXEC_ARG_REF)
            return true;
    return false;
}

/* What a NODE_TASK says of an actor's run besides its spec (exec_ractor.c):
   for a call, its number in the log (0: a new call, numbered there) and
   whether it is re-applied (its results were handed out before: dropped);
   for a creation placed again, the restarts so far and the checkpoint it
   starts from (the object goes with it). */
typedef struct {
    uint64_t idx;          /* CALL: its number; CREATE: the checkpoint's call */
    uint32_t restarts;     /* CREATE */
    uint8_t flags;         /* NM_EXT_* */
    lux_ref_t ckpt;        /* CREATE with NM_EXT_CKPT */
} nm_remote_ext_t;
enum { NM_EXT_REPLAY = 1, NM_EXT_CKPT = 2 };

/* --- actors ---------------------------------------------------------------------------- */

enum nm_actor_state {
    A_WAITING = 1, /* for its constructor's arguments, or resources */
    A_STARTING,    /* its worker starts, or it re-applies calls after a restart */
    A_ALIVE,
    A_DEAD
};

typedef struct nm_actor nm_actor_t;
struct nm_actor {
    util_id_t id;
    char *cls;                /* class */
    char *name;               /* lookup name, or NULL */
    uint8_t module[16];       /* the module holding the class */
    util_id_t job;
    nm_task_t *create;        /* its creation: class, module, arguments, resources
                                 (in nm->tasks under the actor's ID while it lives) */
    nm_client_t *owner;       /* its creator: when it goes, the actor goes */
    int state;                /* enum nm_actor_state */
    char *death;              /* why it died */
    int death_status;
    bool killed;              /* lux_actor_kill: no restart */
    bool owner_gone;          /* its creator went away: it ends with it */
    nm_worker_t *worker;      /* its process */
    int64_t needs[16];        /* resources it holds while it lives */
    bool holds;               /* holds them now */
    uint64_t gpus;            /* its GPUs while it holds them (bits of nm->gpu_ids) */
    uint32_t max_restarts, restarts;
    uint32_t ckpt_every;      /* calls between checkpoints (0: on demand only) */
    uint64_t next_idx;        /* calls numbered (sent) so far */
    util_id_t last_call;      /* the newest numbered call, whose event a restart waits for */
    uint64_t ckpt_idx;        /* the newest checkpoint covers calls 1..ckpt_idx */
    uint64_t saved_idx;       /* the newest checkpoint reported, made or failed */
    lux_ref_t ckpt;           /* its object (when has_ckpt) */
    bool has_ckpt;
    bool log_wait;            /* restarting: waits for its calls' events to commit
                                 (then, on a node not the head, for the head's answer) */
    uint64_t calls_req;       /* ... that request of its calls (exec_rcalls.c; 0: none) */
    int64_t calls_first_ms;   /* ... when it was first asked, when last */
    int64_t calls_asked_ms;
    nm_task_t *boot;          /* its CREATE or LOAD run, until it reports */
    nm_task_t *queue, *queue_last; /* runs not sent yet, in order */
    nm_task_t *sent, *sent_last;   /* sent and not reported, in order */
    uint32_t nsent;
    uint64_t sent_bytes;      /* the runs in `sent`: store bytes of arguments they pin */
    nm_task_t *limbo;         /* numbered calls its dead process had: re-sent by the replay */
    lux_ref_t *kept;          /* arguments of calls since the checkpoint, kept for a replay */
    uint64_t *kept_idx;
    size_t nkept, capkept;
    uint64_t replaying;       /* calls still to re-apply after the last restart */
    bool room_wait;           /* its next run waits for room to bring back a spilled
                                 argument (nm_actor_tick tries again) */
    char *doom;               /* it must die, for this (found where it cannot die at once) */
    int doom_status;
    bool dirty;               /* on nm->dirty_actors */
    nm_actor_t *next_dirty;
    /* living on another node (exec_ractor.c) */
    bool remote;              /* its process is another node's: calls go there */
    bool home;                /* created here: placed again here when its node dies */
    util_id_t rnode;          /* the node that holds it (zero: being placed or found) */
    char rep[DB_EP_MAX];      /* that node's endpoint ("" while placed or found) */
    int64_t lost_ms;          /* not home: since when nobody knows where it is (0) */
    int64_t asked_ms;         /* not home: when the head was last asked where it is */
    bool requeue_wait;        /* home, not on the head: its node died, and its calls
                                 are asked of the head before it is placed again
                                 (calls_req; exec_ractor.c nm_ractor_requeue_read) */
    char requeue_nh[UTIL_ID_HEX]; /* ... the dead node that held it */
};

/* Reading an actor's calls from the log, here or through the head
   (exec_node_actor_res.c, exec_ractor.c, exec_rcalls.c): read(arg, nm, a,
   cb, cbarg) calls cb with each of a's calls in the log's order, and
   returns 0, or a code with the message. */
typedef int nm_calls_cb(void *cbarg, const db_event_t *e);
typedef int nm_calls_read(void *arg, nm_t *nm, nm_actor_t *a, nm_calls_cb *cb, void *cbarg);

/* --- clients and workers ----------------------------------------------------------- */

/* A connection from a client on this machine (a driver or a worker). */
struct nm_conn {
    nm_t *nm;
    net_link_t *link;
    uint32_t ep_events;       /* what the epoll set watches on its socket */
    nm_client_t *client;      /* once it said hello; NULL after it left */
    nm_conn_t *next;
};

struct nm_client {
    nm_conn_t *conn;          /* its connection (NULL once it closed) */
    util_id_t id;
    int kind;                 /* EXEC_HELLO_DRIVER or _WORKER */
    pid_t pid;
    util_id_t job;
    nm_worker_t *worker;      /* when a worker */
    util_buf_t out;           /* OBJECTS to send after this round */
    uint32_t nout;
    util_idmap_t *pins;       /* object ID -> pin count it holds */
    util_idmap_t *allocs;     /* arena offsets granted and not yet sealed */
    nm_client_t *next_dirty;  /* clients with something to send */
    bool dirty;
    bool detached;            /* a driver whose job's tasks run on after it leaves */
    bool peer;                /* another node, for the tasks it spilled here
                                 (exec_remote.c): what it is told goes back to it */
    uint8_t peer_rid[64];     /* ... its routing ID at our endpoint */
    size_t peer_rid_len;
};

/* Why a worker is started: the pool's (one per CPU), an extra one (for
   one that is blocked), or an actor's. */
enum { NM_SPAWN_POOL, NM_SPAWN_EXTRA, NM_SPAWN_ACTOR };

enum nm_worker_state { W_STARTING = 1, W_IDLE, W_BUSY, W_BLOCKED,
                       W_LEAVING /* told to go (an extra one no longer needed) */ };

struct nm_worker {
    pid_t pid;
    int state;                /* enum nm_worker_state */
    nm_client_t *client;      /* once it said hello */
    nm_task_t *queue, *queue_last; /* handed to it, in order; the first is running */
    uint32_t queued;
    int64_t held[16];         /* resources its batch holds (per nm->res), in thousandths */
    int64_t lent[16];         /* what it gave back while blocked, to take again */
    uint64_t gpus;            /* the GPUs its task holds (bits of nm->gpu_ids) */
    int64_t started_ms;
    int64_t idle_ms;          /* when it last ran out of work (or started) */
    bool extra;               /* started for a blocked one; leaves when idle */
    int cpu;                  /* the CPU it is bound to (exec_node_cpu.c), or -1 */
    bool reaped;              /* its process is gone: its last messages are being read */
    nm_actor_t *actor;        /* the actor it hosts (not one of the pool) */
    bool call_blocked;        /* an actor's worker: its call waits in lux_get, so the
                                 room granted to it stays when results come */
    nm_worker_t *next;
};

/* An ALLOC the store has no room for yet: answered when room appears (an
   object unpinned or freed, a grant given back), or with an error at the
   deadline. */
typedef struct nm_alloc_wait {
    nm_client_t *c;
    uint64_t req, size;
    int64_t since_ms, deadline_ms;
    bool noted;               /* logged waiting past LUX_STORE_WAIT_MS (rule 13) */
    struct nm_alloc_wait *next;
} nm_alloc_wait_t;

/* --- the node manager ----------------------------------------------------------------- */

typedef struct {
    char name[32];
    int64_t total, free;      /* in thousandths */
} nm_res_t;

/* What a part asks of a part above it, which sets these when the node
   starts: called through here, not by name, so that the arrows of the
   #include lines point down only (doc/DESIGN.md 3). */
typedef struct {
    /* actors (exec_node_actor.c, nm_actor_open) */
    int (*actor_submit)(nm_t *nm, nm_client_t *c, const exec_spec_t *s); /* an actor kind */
    void (*actor_kick)(nm_t *nm, struct nm_actor *a);    /* a run's arguments are ready */
    /* an actor's run is failing: true when the actor dealt with it */
    bool (*actor_failing)(nm_t *nm, nm_task_t *t, int status, const char *text);
    void (*actor_result)(nm_t *nm, nm_worker_t *w, const exec_result_t *r);
    void (*actor_worker_gone)(nm_t *nm, nm_worker_t *w, const char *why);
    /* ... for exec_node_actor.c: a restarting actor's calls read (or asked) */
    void (*actor_replay)(nm_t *nm, nm_actor_t *a);
    /* cancelling (exec_node_cancel.c, nm_cancel_open) */
    void (*cancel_started)(nm_t *nm, nm_task_t *t);      /* handed to a worker */
    bool (*cancel_result)(nm_t *nm, nm_task_t *t);       /* reported: cancelled meanwhile? */
    void (*cancel_worker_gone)(nm_t *nm, nm_worker_t *w);
    /* arguments on other nodes (exec_node_far.c, nm_far_open), for the graph */
    bool (*far_here)(nm_t *nm, const lux_ref_t *id);
    int (*far_fetch)(nm_t *nm, nm_task_t *t, const lux_ref_t *id);
    /* the task graph and the scheduler (exec_node_graph.c, exec_node_sched.c,
       nm_sched_open), for the store and the worker pool */
    bool (*unreserve_all)(nm_t *nm);
    void (*worker_gone)(nm_t *nm, nm_worker_t *w, const char *why);
    /* what the workers' tasks hold in the store, for a "no room" error */
    void (*task_census)(nm_t *nm, char *out, size_t n);
    /* other nodes (exec_remote.c, nm_remote_new; NULL without them):
       for the graph, a task another node sent here ended (status 0: well)
       and its sender is told; for the store's nm_send, what goes to such
       a node's client (takes *m); for the scheduler, t offered to the
       global scheduler (self: this node is one of the places weighed),
       whether it took t, and the tasks offered in a pass sent */
    void (*remote_ended)(nm_t *nm, const nm_task_t *t, int status, const char *msg);
    void (*peer_send)(nm_t *nm, nm_client_t *c, zmsg_t **m);
    bool (*remote_place)(nm_t *nm, nm_task_t *t, bool self);
    void (*remote_flush)(nm_t *nm);
    /* actors on other nodes (exec_ractor.c, nm_ractor_new; set with other
       nodes), for exec_remote.c: the global scheduler's answer for an
       actor's creation (text: where, or why not), the node holding an
       actor (or one of its calls) found dead, an actor's run another node
       sent here (after nm_submit), and each tick */
    void (*ractor_placed)(nm_t *nm, nm_actor_t *a, char *text);
    void (*ractor_lost)(nm_t *nm, nm_actor_t *a, const util_id_t *node);
    void (*ractor_taken)(nm_t *nm, nm_client_t *c, const exec_spec_t *s, const nm_remote_ext_t *x);
    void (*ractor_tick)(nm_t *nm);
    /* ... and for the actors here (exec_node_actor.c; all NULL without
       other nodes, where an actor is always made here, no handle names
       one elsewhere and nobody else is asked for a name): a's creation t
       goes to another node (true) or is made here; a stub for a handle to
       an actor this node does not know (NULL: none); a stub's actor made
       here after all as a (stub freed); a's ready calls sent to the node
       holding it; a died here, its holder told; a lookup of name asks the
       head until deadline_ms */
    bool (*ractor_elsewhere)(nm_t *nm, nm_actor_t *a, nm_task_t *t);
    nm_actor_t *(*ractor_stub)(nm_t *nm, const util_id_t *id);
    void (*ractor_forget)(nm_t *nm, nm_actor_t *stub, nm_actor_t *a);
    void (*ractor_pump)(nm_t *nm, nm_actor_t *a);
    void (*ractor_died)(nm_t *nm, nm_actor_t *a);
    void (*ractor_lookup)(nm_t *nm, const char *name, int64_t deadline_ms);
    /* on a node that is not the head (exec_rcalls.c): a restarting, its
       calls' events committed, asks the head for its calls after its
       checkpoint (again while the head has not answered; it dies when the
       head stays silent too long); nm_actor_replay_read takes the answer */
    void (*ractor_calls)(nm_t *nm, nm_actor_t *a);
    /* the object store's pins (exec_node_obj.c, set by exec_node.c), for the
       blob writer below it: a put is pinned while its bytes are written */
    void (*obj_pin)(nm_t *nm, nm_obj_t *o);
    void (*obj_unpin)(nm_t *nm, nm_obj_t *o);
    /* the loop (exec_node.c), for the worker pool */
    void (*client_gone)(nm_t *nm, nm_client_t *c);
    void (*conn_drain)(nm_t *nm, nm_conn_t *conn);
} nm_ops_t;

/* Log a dropped bad message, at most once a second per node. */
#define nm_complain(nm, what) util_complain(&(nm)->complain, "node: dropped a bad message: %s", (what))

struct nm {
    db_cluster_t cluster;
    util_id_t node;
    zsock_t *pipe;
    int listen_fd;            /* clients connect here (net_link) */
    int epfd;                 /* an epoll set of the connections */
    util_spin_t spin;         /* how long the loop polls before it sleeps (LUX_SPIN_US) */
    util_complain_t complain; /* this node's rate limit on garbage logs (nm_complain) */
    int64_t work_ended_ns;    /* when a task or call last finished or failed (util_mono_ns) */
    cpu_set_t pin_cpus;       /* the CPUs the pool's workers are bound to, one each... */
    bool pin;                 /* ...when they are (exec_node_cpu.c) */
    bool batch_warned;        /* a worker could not be made SCHED_BATCH: said once */
    nm_conn_t *conns;
    size_t nconns;
    char endpoint[DB_EP_MAX]; /* the socket's path */
    char address[DB_EP_MAX];  /* the node's address for other machines ("" : none) */
    char lux_bin[PATH_MAX];   /* the `lux` executable, for workers */

    /* the object store */
    exec_arena_t *arena;
    char arena_name[64];
    uint64_t store_bytes;     /* the arena's size: the store's limit */
    uint64_t inline_bytes;    /* inline objects held on the heap */
    nm_obj_t *lru_head, *lru_tail;
    nm_obj_t *kept_head, *kept_tail; /* rebuilt inline copies nothing needs, oldest
                                        first, at most NM_KEPT_INLINE_MAX bytes... */
    util_idmap_t *kept;       /* ... their links: object ID -> nm_kept_t */
    uint64_t kept_bytes;
    char spill_dir[PATH_MAX];
    struct exec_spill_writer_t *spillw; /* writes spills off the loop (exec_node_obj.c) */
    bool spill_nothread;      /* none could be started: spills are written on the loop */
    struct nm_spill_job *spill_jobs; /* every heap copy of a spilled put, all held */
    util_idmap_t *spill_of;   /* object ID -> its struct nm_spill_job * (nm_obj_t.spilling) */
    uint64_t spill_held;      /* ... their bytes: at most the store's size */
    uint32_t spill_pending;   /* ... of which the writer has not handed back */
    uint64_t spill_credit;    /* bytes spill_held may pass the store's size by: those of
                                 the heap copy a restore is about to free */
    char spill_why[512];      /* why the last eviction could not spill a put, for the
                                 store-full message ("": none failed) */
    uint64_t store_gen;       /* bumped when room may have appeared */
    uint64_t waits_gen;       /* store_gen when the waiting ALLOCs were last tried */
    nm_alloc_wait_t *alloc_waits; /* in arrival order */
    int64_t store_wait_ms;    /* how long an ALLOC waits for room (LUX_STORE_WAIT_MS) */
    int64_t store_wait_max_ms; /* the most any request waits for room, rule 13's wait
                                 included (LUX_STORE_WAIT_MAX_MS; 10 x the above) */
    util_complain_t room_note; /* rate limit on "waits for room past LUX_STORE_WAIT_MS" */
    uint64_t resv_bytes;      /* objects pinned for ready tasks not yet dispatched */
    uint32_t nresv;           /* ... for this many tasks */
    uint64_t held_bytes;      /* rebuilt objects pinned for tasks that wait (rule 10), each
                                 counted once: at most half the store, or one object */
    util_idmap_t *holds;      /* object ID -> nm_obj_hold_t (nm_obj_t.holding) */
    struct nm_restore_wait *restore_waits; /* GETs of spilled objects waiting for room */
    bool room_waits;          /* a ready task waits for room to restore an argument */
    bool test_unheld;         /* LUX_TEST_REBUILD_UNHELD=1 (t/3132 only): rebuilt outputs
                                 are not held for the tasks waiting for them */

    /* tables */
    util_idmap_t *objects;    /* object ID (20) -> nm_obj_t * */
    util_idmap_t *tasks;      /* task ID (16) -> nm_task_t *, until finished */
    util_idmap_t *clients;    /* client ID (16) -> nm_client_t * */
    util_idmap_t *modules;    /* module hash (16) -> 1, registered in the log */

    /* scheduling */
    nm_task_t *ready, *ready_last;
    uint64_t nready;
    nm_worker_t *workers;
    int nworkers, target_workers;
    int spill_queue;          /* a queue of this many ready tasks per worker is long
                                 (LUX_SPILL_QUEUE): more go to the global scheduler */
    nm_res_t res[16];
    int nres;                 /* res[0] is CPU */
    int gpu_res;              /* the GPU resource's index in res, or -1 (exec_node_gpu.c) */
    int ngpu;                 /* its GPUs, ... */
    uint16_t gpu_ids[64];     /* ... their ids (CUDA_VISIBLE_DEVICES) ... */
    uint64_t gpu_busy;        /* ... and which are held (bit i: gpu_ids[i]) */
    nm_client_t *dirty;       /* clients with OBJECTS to send */
    util_idmap_t *actors;     /* actor ID -> nm_actor_t * (the dead too: calls to them fail) */
    int actors_waiting;       /* in A_WAITING */
    bool actor_room_waits;    /* an actor's run waits for room (nm_actor_t.room_wait) */
    nm_task_t *held_calls, *held_last; /* finished calls waiting for their events (by ->next) */
    struct nm_actor *dirty_actors; /* actors with runs to send */
    struct nm_lookup *lookups; /* lux_actor_lookup waiting for a name */
    int ckpt_asks;            /* checkpoints asked for and not sent yet (at most) */
    int64_t ckpt_scan_ms;     /* when their waits were last looked at */
    int64_t reaped_drivers_ms; /* when dead drivers were last looked for */
    int64_t reaped_all_ms;     /* when every worker was last waited for */

    nm_ops_t ops;             /* calls up to the parts above (set at start) */

    /* the log (exec_node_log.c) */
    db_client_t *log;
    struct nm_log *lg;        /* write-ahead lineage state, lookups */
    struct nm_blobw *blobw;   /* the blob writer thread (exec_node_blob.c), or NULL */
    bool log_urgent;          /* an actor call waits for its event: send now */
    bool log_quiet;           /* the loop saw nothing on the log's sockets this turn */

    /* other nodes (issue 28) */
    struct nm_peer *peer;     /* the node's tcp endpoint and its connections (exec_peer.c) */
    struct nm_xfer *xfer;     /* objects pulled from other nodes (exec_xfer.c) */
    struct nm_ractor *ractor; /* actors on other nodes (exec_ractor.c) */
    struct nm_rcalls *rcalls; /* restarted actors' calls from the head's log (exec_rcalls.c) */
    struct nm_remote *remote; /* tasks spilled to other nodes, the global scheduler on the
                                 head (exec_remote.c) */
    struct nm_rplace *rplace; /* asks of the global scheduler, its answers kept (exec_rplace.c) */
    struct nm_table *table;   /* the global scheduler's table of nodes (exec_table.c) */
    struct nm_rmodule *rmodule; /* modules fetched by hash (exec_rmodule.c) */

    /* counters, for tests and `lux status` */
    uint64_t n_submitted, n_finished, n_failed, n_retried, n_rebuilt, n_evicted, n_spilled;
    uint64_t n_table_waits; /* the head: placement decisions that waited for the monitor's
                               table of nodes (exec_table.c s_table) */
    uint64_t n_spare; /* objects placed in the arena's spare region (nm_store_try) */
    uint64_t n_over;  /* of which beyond the store's size, after a wait (store_over) */
    bool store_over;  /* nm_store_try may go beyond the store's size (a wait has ended) */
    int64_t room_may_ms; /* when a task that may free room was last seen running
                            (nm_store_room_may_come): see nm_store_room_stuck */
    util_buf_t scratch;
};

/* A GET of a spilled object the store had no room to bring back yet:
   answered when room appears, or with an error at the deadline. */
typedef struct nm_restore_wait {
    nm_client_t *c;
    lux_ref_t id;
    int64_t deadline_ms;
    struct nm_restore_wait *next;
} nm_restore_wait_t;

#endif

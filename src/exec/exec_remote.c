/*  exec_remote - tasks between nodes (issue 28, doc/DESIGN.md 7.2).

    Spilling (the submitting node, A). A task this node can never run (a
    resource it does not have) is not failed at once when the node is
    part of a cluster: it goes to the global scheduler (NODE_PLACE to the
    head's node endpoint, with the resources it needs and the bytes of its
    arguments here). The answer names the node (B) and its endpoint, or
    says why no node can run it, and then the task fails at once with that
    reason. A placed task is sent to B (NODE_TASK: its spec, the arguments
    this node holds turned into values) and waits here, in nm->tasks as a
    running task without a worker, for its outputs: B answers with
    NODE_TASK_DONE when they are made (their bytes in the message, copied
    out of B's store), and they become objects here like a worker's, so
    whoever waits for them (a lux_get, a dependent task) goes on. Its
    events (started, finished, failed) are B's, under B's node ID: the
    `tasks` view's node_id says where it ran; task_submitted is A's.

    Running spilled tasks (B). A NODE_TASK is submitted here as from a
    client that stands for the node that sent it (nm_client_t.peer): what
    that client would be told (its outputs, or their errors) goes back to
    the sender instead (nm_remote_send, from nm_send). A task that came
    from another node is never spilled again: placed once, it runs (or
    waits for its resources) where it was placed.

    The global scheduler (the head). NODE_PLACE is answered by the head's
    node manager (s_on_place): the table of nodes and the decision are
    exec_table.c's, the answers kept for a request sent again
    exec_rplace.c's.
*/
#include "exec_remote.h"
#include "exec_rmodule.h"
#include "exec_rplace.h"
#include "exec_gsched.h"
#include "exec_table.h"
#include "exec_members.h"
#include "exec_peer.h"
#include "../net/net_ep.h"
#include "exec_module.h"
#include "exec_node_actor.h"
#include "exec_node_far.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "exec_node_sched.h"
#include "../util/util_prof.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WATCH_MS 1000  /* how often a node with tasks elsewhere asks who is alive */
#define S_HEADLESS_MS 30000 /* work away this long while the monitor cannot be asked: failed */
#define S_PEND_MAX 16    /* nodes with a NODE_TASK being filled at once */
#define S_CNT_EXT (21 + LUX_REF_LEN) /* NODE_TASK's count frame with an actor's extension */

struct nm_remote {
    nm_t *nm;             /* the node it belongs to */
    char head_ep[DB_EP_MAX];
    util_buf_t scratch;
    uint64_t n_spilled, n_taken;
    nm_rmodule_t *mods;   /* modules fetched by hash (exec_rmodule.c) */
    int64_t watch_ms;     /* when who is alive was last asked */
    int ask_wait_ms;      /* how long an answer is waited for (LUX_WATCH_WAIT_MS, tests) */
    zsock_t *watch;       /* to the monitor: STATUS asked without waiting (s_watch_ask) */
    int64_t asked_ms;     /* when the ask in flight went (0: none) */
    /* while the membership monitor does not answer: since when each task
       or call away (by ID) was seen away (s_headless) */
    util_idmap_t *unseen;
    int64_t silent_ms;    /* when the monitor last failed to answer after answering (0: it answers) */
    int headless_ms;      /* away this long in that silence: failed (LUX_HEADLESS_MS, tests) */
    /* the submitting node: placed tasks, one NODE_TASK per node, sent at the
       end of the dispatch or handler that placed them (nm_remote_flush) */
    struct {
        char ep[DB_EP_MAX];
        zmsg_t *m;
    } pend[S_PEND_MAX];
    int npend;
};

bool
nm_remote_on(nm_t *nm)
{
    return nm->remote != NULL;
}

/* Objects travel as two frames: the ID (20) and how (an enum exec_where:
   INLINE for a value, or the kind of error), then the bytes (the value,
   or the error's message), however large. */
static void
s_obj_add(zmsg_t *m, const lux_ref_t *id, uint8_t where, const void *bytes, uint64_t size)
{
    uint8_t h[LUX_REF_LEN + 1];
    memcpy(h, id->b, LUX_REF_LEN);
    h[LUX_REF_LEN] = where;
    zmsg_addmem(m, h, sizeof h);
    zmsg_addmem(m, bytes, (size_t) size);
}

/* A ref's hex, in a buffer of the caller's. */
static const char *
s_ref_hex(const lux_ref_t *r, char *hex)
{
    util_hex(hex, r->b, LUX_REF_LEN);
    return hex;
}

/* o's bytes added to m as s_obj_add does, when o is here: in the store,
   inline, or spilled (read back from disk onto the heap, not into the
   store: it goes to another node, which stores it). 0 when added; 1 when
   o has no value here (lost, an error, not made yet); else the code of
   reading its spilled copy. */
static int
s_obj_add_held(nm_t *nm, zmsg_t *m, const nm_obj_t *o)
{
    if (o->state == OBJ_READY) {
        s_obj_add(m, &o->id, EXEC_W_INLINE,
                  o->where == EXEC_W_INLINE ? o->bytes : exec_arena_base(nm->arena) + o->off,
                  o->size);
        return 0;
    }
    if (o->state != OBJ_SPILLED)
        return 1;
    uint8_t *copy;
    int rc = nm_obj_copy_spilled(nm, o, &copy);
    if (rc)
        return rc;
    s_obj_add(m, &o->id, EXEC_W_INLINE, copy, o->size);
    free(copy);
    return 0;
}

/* The next object of m into id, where, f (its bytes' frame); false at the
   end or on garbage. */
static bool
s_obj_next(zmsg_t *m, lux_ref_t *id, uint8_t *where, zframe_t **f)
{
    zframe_t *h = zmsg_next(m);
    *f = h ? zmsg_next(m) : NULL;
    if (!h || !*f || zframe_size(h) != LUX_REF_LEN + 1)
        return false;
    memcpy(id->b, zframe_data(h), LUX_REF_LEN);
    *where = zframe_data(h)[LUX_REF_LEN];
    return true;
}

/* --- the head: the global scheduler's requests ------------------------------------------------ */

/* NODE_PLACE: frame 1 the task's ID (16), frame 2 "from HEX\nneeds
   RES\n" and "arg HEX BYTES" lines. Answer NODE_PLACE_REP: the task's ID,
   then the scheduler's answer (exec_table.c). */
static void
s_on_place(nm_t *nm, nm_peer_msg_t *m)
{
    zframe_t *idf = zmsg_pop(m->msg);
    char *text = zmsg_popstr(m->msg);
    char answer[700];
    if (!idf || zframe_size(idf) != 16 || !text)
        snprintf(answer, sizeof answer, "infeasible the request to place it was malformed\n");
    else
        nm_rplace_answer(nm, (const util_id_t *) zframe_data(idf), text, answer, sizeof answer,
                         nm_table_decide);
    if (idf && zframe_size(idf) == 16 && nm_rplace_drop(nm, (const util_id_t *) zframe_data(idf))) {
        zframe_destroy(&idf); /* test hook: the answer is lost */
        free(text);
        return;
    }
    zmsg_t *rep = zmsg_new();
    if (idf)
        zmsg_append(rep, &idf);
    else
        zmsg_addmem(rep, "", 0);
    zmsg_addstr(rep, answer);
    nm_peer_reply(nm, m, NET_NODE_PLACE_REP, &rep);
    zframe_destroy(&idf);
    free(text);
}

static void s_placed(nm_t *nm, nm_task_t *t, char *text);

static uint32_t
s_le32(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t
s_le64(const uint8_t *p)
{
    return (uint64_t) s_le32(p) | (uint64_t) s_le32(p + 4) << 32;
}

/* Add the frames of *m (taken) to what goes to ep this turn. 0 or a code. */
static int
s_pend(nm_t *nm, const char *ep, zmsg_t **m)
{
    struct nm_remote *r = nm->remote;
    int k = -1;
    for (int i = 0; i < r->npend; i++)
        if (strcmp(r->pend[i].ep, ep) == 0)
            k = i;
    if (k < 0) {
        if (r->npend == S_PEND_MAX)
            nm_remote_flush(nm);
        k = r->npend++;
        snprintf(r->pend[k].ep, sizeof r->pend[k].ep, "%s", ep);
        r->pend[k].m = zmsg_new();
    }
    zframe_t *f;
    while ((f = zmsg_pop(*m)))
        zmsg_append(r->pend[k].m, &f);
    zmsg_destroy(m);
    return 0;
}

void
nm_remote_flush(nm_t *nm)
{
    struct nm_remote *r = nm->remote;
    if (!r)
        return;
    while (r->npend > 0) {
        int k = --r->npend;
        zmsg_t *m = r->pend[k].m;
        r->pend[k].m = NULL;
        /* the tasks' IDs, to fail them if it cannot go */
        size_t cap = zmsg_size(m), n = 0;
        util_id_t *ids = calloc(cap ? cap : 1, sizeof *ids);
        for (zframe_t *f = zmsg_first(m); f && ids;) {
            util_rd_t rd;
            exec_spec_t s;
            util_rd_init(&rd, zframe_data(f), zframe_size(f));
            if (exec_spec_decode(&rd, &s))
                break;
            ids[n++] = s.task;
            util_prof_stamp("h_send", s.task.b);
            zframe_t *c = (zmsg_next(m), zmsg_next(m));
            uint32_t objs = c && zframe_size(c) >= 4 ? s_le32(zframe_data(c)) : 0;
            for (uint32_t i = 0; i < 2 * objs; i++)
                zmsg_next(m);
            f = zmsg_next(m);
        }
        if (nm_peer_send(nm, r->pend[k].ep, NET_NODE_TASK, &m)) {
            char why[600];
            snprintf(why, sizeof why, "%s", lux_errmsg());
            for (size_t i = 0; i < n; i++) {
                nm_task_t *t = nm_task_find(nm, &ids[i]);
                if (t && t->remote) {
                    t->remote = false;
                    nm_task_fail(nm, t, LUX_EIO, why);
                }
            }
        }
        free(ids);
    }
}

/* --- the submitting node: spilling, and the outputs coming back -------------------------------- */

static bool s_ask(nm_t *nm, nm_task_t *t, bool self);
static bool s_reask(nm_t *nm, nm_task_t *t, bool self);

bool
nm_remote_spill(nm_t *nm, nm_task_t *t)
{
    return nm_remote_place(nm, t, false);
}

bool
nm_remote_place(nm_t *nm, nm_task_t *t, bool self)
{
    struct nm_remote *r = nm->remote;
    if (!r || t->spilled || t->actor || (t->owner && t->owner->peer))
        return false;
    return s_ask(nm, t, self);
}

bool
nm_remote_ask(nm_t *nm, nm_task_t *t)
{
    return s_ask(nm, t, false);
}

/* Ask the global scheduler where t goes (self: this node is one of the
   places weighed); the answer goes to s_placed. An ask unanswered is sent
   again (exec_rplace.c). */
static bool
s_ask(nm_t *nm, nm_task_t *t, bool self)
{
    struct nm_remote *r = nm->remote;
    if (!r)
        return false;
    t->spilled = true;
    if (!s_reask(nm, t, self))
        return false;
    r->n_spilled++;
    return true;
}

/* Ask where t goes, the first time or again (a "wait" answer, when
   exec_rplace.c's tick finds it due). false when it cannot be asked. */
static bool
s_reask(nm_t *nm, nm_task_t *t, bool self)
{
    struct nm_remote *r = nm->remote;
    char hex[UTIL_ID_HEX];
    if (nm_peer_is_head(nm)) { /* the scheduler is here: no round trip */
        char answer[700], text[4096];
        nm_rplace_text(nm, t, self, text, sizeof text);
        t->remote = true;
        t->state = TASK_RUNNING;
        t->worker = NULL;
        nm_table_decide(nm, text, answer, sizeof answer);
        s_placed(nm, t, answer);
        util_prof_stamp("h_placed", t->id.b);
        return true;
    }
    if (nm_rplace_send(nm, t, self, false, r->head_ep)) {
        log_warn("cannot ask the global scheduler to place task %s: %s",
                 util_id_hex(&t->id, hex), lux_errmsg());
        return false;
    }
    nm_rplace_asked(nm, t, self);
    t->remote = true;
    t->state = TASK_RUNNING;
    t->worker = NULL;
    return true;
}

/* The spec of t into b, and the objects of its ref arguments held here
   added to m (the node placed takes them as they are, under their IDs). */
static int
s_encode(nm_t *nm, nm_task_t *t, util_buf_t *b, zmsg_t *m)
{
    util_rd_t rd;
    exec_arg_t a;
    util_rd_init(&rd, t->args, t->args_len);
    while (exec_arg_next(&rd, &a)) {
        if (a.kind != EXEC_ARG_REF)
            continue;
        nm_obj_t *o = nm_obj_get(nm, &a.ref);
        if (o && o->state == OBJ_READY)
            s_obj_add(m, &o->id, EXEC_W_INLINE,
                      o->where == EXEC_W_INLINE ? o->bytes : exec_arena_base(nm->arena) + o->off,
                      o->size);
        /* else the node placed may hold it, or pulls it from here (a
           spilled one is brought back for the pull: exec_xfer_src.c) */
    }
    exec_spec_t s = {.task = t->id, .parent = t->parent, .job = t->job, .fn = t->fn,
                     .fn_len = (uint16_t) strlen(t->fn), .nret = t->nret,
                     .max_attempts = t->max_attempts, .cpus_milli = t->cpus_milli,
                     .res = t->res, .res_len = (uint16_t) (t->res ? strlen(t->res) : 0),
                     .argc = t->argc, .args = t->args, .args_len = t->args_len,
                     .kind = EXEC_SPEC_TASK, .timeout_ms = t->timeout_ms};
    memcpy(s.module, t->module, 16);
    if (t->actor && (t->kind == T_CREATE || t->kind == T_CALL)) { /* exec_ractor.c */
        nm_actor_t *ac = t->actor;
        s.kind = t->kind == T_CREATE ? EXEC_SPEC_CREATE : EXEC_SPEC_CALL;
        s.actor = ac->id;
        s.max_restarts = (uint16_t) ac->max_restarts;
        s.ckpt_every = ac->ckpt_every;
        s.name = ac->name;
        s.name_len = (uint16_t) (ac->name ? strlen(ac->name) : 0);
    }
    exec_spec_encode(b, &s);
    return b->oom ? util_err(LUX_ENOMEM, "out of memory") : 0;
}

/* A failure that came back, or that happened placing: t fails here
   without an event of its own when it ran elsewhere. */
static void
s_fail(nm_t *nm, nm_task_t *t, int status, const char *msg)
{
    /* the other node's text begins "task ID (fn) failed: ": said once */
    const char *p = strstr(msg, ") failed: ");
    if (strncmp(msg, "task ", 5) == 0 && p)
        msg = p + 10;
    nm_task_fail(nm, t, status, msg);
}

/* The scheduler's answer for t: send it where it was placed, or fail it. */
static void
s_placed(nm_t *nm, nm_task_t *t, char *text)
{
    char v[512], ep[DB_EP_MAX];
    if (strncmp(text, "wait ", 5) == 0) {
        /* no alive node can run it, but nodes that could died lately
           and may come back: asked again in a while (exec_rplace.c) */
        char *reason = strchr(text + 5, ' '), *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        nm_rplace_wait(nm, t, atoi(text + 5), reason ? reason + 1 : "");
        return;
    }
    if (t->kind == T_CREATE && t->actor) {
        nm->ops.ractor_placed(nm, t->actor, text); /* an actor placed elsewhere */
        return;
    }
    if (strncmp(text, "infeasible ", 11) == 0) {
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        t->remote = false; /* its failure is this node's event */
        nm_task_fail(nm, t, LUX_EINVAL, text + 11);
    } else if (strncmp(text, "local", 5) == 0) {
        t->remote = false; /* it waits here, for resources that can come */
        if (t->far_later)
            nm_far_resume(nm, t); /* its arguments held elsewhere come here */
        else
            nm_task_wake(nm, t);
    } else if (exec_members_get(text, "node", v, sizeof v) && !util_id_parse(&t->rnode, v) &&
               exec_members_get(text, "endpoint", ep, sizeof ep)) {
        if (nm_remote_push(nm, t, ep)) {
            t->remote = false;
            nm_task_fail(nm, t, LUX_EIO, lux_errmsg());
        }
    } else {
        t->remote = false;
        nm_task_fail(nm, t, LUX_EPROTO, "the global scheduler's answer was malformed");
    }
}

int
nm_remote_push(nm_t *nm, nm_task_t *t, const char *ep)
{
    return nm_remote_push_x(nm, t, ep, NULL);
}

int
nm_remote_push_x(nm_t *nm, nm_task_t *t, const char *ep, const nm_remote_ext_t *x)
{
    /* frames: the spec, an empty frame (once the module's bytes: a
       node fetches them by hash now), how many objects (u32), then the
       arguments' objects; added to what goes to that node this turn */
    util_buf_t *b = &nm->remote->scratch;
    b->len = 0;
    zmsg_t *objs = zmsg_new();
    int rc = 0;
    if (x && (x->flags & NM_EXT_CKPT)) { /* the checkpoint it starts from, first */
        /* in the store or spilled (held on disk: DESIGN 7, rule 10); without
           it the actor would start from its constructor and re-apply the
           calls after the checkpoint to the wrong state (t/3169) */
        nm_obj_t *o = nm_obj_get(nm, &x->ckpt);
        char rh[LUX_REF_LEN * 2 + 1];
        rc = o ? s_obj_add_held(nm, objs, o) : 1;
        if (rc == 1)
            rc = util_err(LUX_ENOTFOUND, "its checkpoint of call %llu (object %s) is not held "
                          "here (%s)", (unsigned long long) x->idx, s_ref_hex(&x->ckpt, rh),
                          o ? "it has no value" : "no such object");
        else if (rc)
            rc = util_err_ctx(rc, "its checkpoint of call %llu", (unsigned long long) x->idx);
    }
    if (!rc)
        rc = s_encode(nm, t, b, objs);
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, b->data, b->len);
    zmsg_addmem(out, NULL, 0); /* the module: by hash (the spec), fetched (exec_rmodule.c) */
    uint8_t cnt[S_CNT_EXT];
    util_le32(cnt, (uint32_t) (zmsg_size(objs) / 2));
    util_le32(cnt + 4, t->kind == T_TASK ? t->attempt : 1);
    if (x) {
        util_le64(cnt + 8, x->idx);
        util_le32(cnt + 16, x->restarts);
        cnt[20] = x->flags;
        memcpy(cnt + 21, x->ckpt.b, LUX_REF_LEN);
    }
    zmsg_addmem(out, cnt, x ? S_CNT_EXT : 8);
    zframe_t *f;
    while ((f = zmsg_pop(objs)))
        zmsg_append(out, &f);
    zmsg_destroy(&objs);
    if (!rc)
        rc = s_pend(nm, ep, &out);
    zmsg_destroy(&out);
    return rc;
}

/* NODE_PLACE_REP: the task's ID, the scheduler's answer. */
static void
s_on_placed(nm_t *nm, nm_peer_msg_t *m)
{
    zframe_t *idf = zmsg_pop(m->msg);
    char *text = zmsg_popstr(m->msg);
    util_id_t id;
    nm_task_t *t = NULL;
    if (idf && zframe_size(idf) == 16) {
        memcpy(id.b, zframe_data(idf), 16);
        t = nm_task_find(nm, &id);
        nm_rplace_answered(nm, &id); /* answered: not asked again */
    }
    if (t && t->remote && text && util_id_is_zero(&t->rnode)) {
        s_placed(nm, t, text);
        nm_remote_flush(nm);
    }
    zframe_destroy(&idf);
    free(text);
}

/* A task (or actor call) of no return values that this node sent ended
   there (nm_remote_ended): as a spilled task's last output would. */
static void
s_ended(nm_t *nm, nm_task_t *t, uint8_t where, zframe_t *f)
{
    if (where != EXEC_W_INLINE) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%.*s", (int) zframe_size(f), (const char *) zframe_data(f));
        s_fail(nm, t, where == EXEC_W_CANCELLED ? LUX_ECANCELLED : LUX_ETASK, msg);
        return;
    }
    nm->n_finished++;
    if (t->actor)
        nm_actor_unlink(nm, t); /* a call of an actor elsewhere: answered */
    nm_task_outputs_ready(nm, t);
}

/* NODE_TASK_DONE: outputs of tasks this node spilled (an OBJECTS body);
   a task with no return values, the outcome under its output 0's ID. */
static void
s_on_done(nm_t *nm, nm_peer_msg_t *m)
{
    lux_ref_t id;
    uint8_t where;
    zframe_t *f;
    zmsg_t *msg = m->msg;
    for (zframe_t *h = zmsg_first(msg); h; h = zmsg_next(msg)) {
        if (zframe_size(h) != LUX_REF_LEN + 1)
            break;
        memcpy(id.b, zframe_data(h), LUX_REF_LEN);
        where = zframe_data(h)[LUX_REF_LEN];
        if (!(f = zmsg_next(msg)))
            break;
        util_id_t tid;
        exec_ref_task(&id, &tid);
        nm_task_t *t = nm_task_find(nm, &tid);
        uint32_t idx = exec_ref_idx(&id);
        util_prof_stamp("h_done", tid.b);
        if (t && t->remote && t->nret == 0 && idx == 0 && t->kind != T_CREATE) {
            s_ended(nm, t, where, f); /* one with no return values ended */
            continue;
        }
        if (!t || !t->remote || idx >= t->nret)
            continue;
        if (where != EXEC_W_INLINE) {
            char msg_[1024];
            snprintf(msg_, sizeof msg_, "%.*s", (int) zframe_size(f), (const char *) zframe_data(f));
            s_fail(nm, t, where == EXEC_W_CANCELLED ? LUX_ECANCELLED : LUX_ETASK, msg_);
            continue;
        }
        nm_obj_t *o = nm_task_output(nm, t, (uint8_t) idx);
        if (!o)
            continue;
        if (nm_obj_fill(nm, o, zframe_data(f), zframe_size(f))) {
            char why[600];
            snprintf(why, sizeof why, "its output %u came back from the node that ran it, and "
                     "this node has no room for it: %s", idx, lux_errmsg());
            s_fail(nm, t, LUX_EFULL, why);
            continue;
        }
        if (t->kind == T_TASK || t->kind == T_CALL) /* here now, not where it ran (t/6110, 6119) */
            nm_log_copied(nm, o, &t->rnode);
        if (++t->rgot == t->nret) {
            nm->n_finished++;
            if (t->actor)
                nm_actor_unlink(nm, t); /* a call of an actor elsewhere: answered */
            nm_task_outputs_ready(nm, t);
        }
    }
}

/* --- the node placed: running what others spilled ---------------------------------------------- */

/* The client standing for the node whose request came with rid. */
static nm_client_t *
s_peer_client(nm_t *nm, const nm_peer_msg_t *m)
{
    size_t n = zframe_size(m->rid);
    uint8_t key[16] = {0};
    memcpy(key, zframe_data(m->rid), n < 16 ? n : 16);
    key[0] ^= 0xA5; /* not a client ID a process would pick */
    nm_client_t **p = util_idmap_get(nm->clients, key);
    if (p)
        return *p;
    if (n > sizeof((nm_client_t *) 0)->peer_rid)
        return NULL;
    nm_client_t *c = calloc(1, sizeof *c);
    p = c ? util_idmap_put(nm->clients, key, NULL) : NULL;
    if (!c || !p || !(c->pins = util_idmap_new_keyed(LUX_REF_LEN, 4)) ||
        !(c->allocs = util_idmap_new_keyed(8, 8))) {
        if (c) {
            util_idmap_destroy(&c->pins);
            free(c);
        }
        return NULL;
    }
    *p = c;
    memcpy(c->id.b, key, 16);
    util_buf_init(&c->out);
    c->kind = EXEC_HELLO_DRIVER;
    c->detached = true; /* its tasks run whatever happens to the sender's drivers */
    c->peer = true;
    memcpy(c->peer_rid, zframe_data(m->rid), n);
    c->peer_rid_len = n;
    return c;
}

/* NODE_TASK: spilled tasks to run here, for the node that sent them: per
   task its spec, its module (or an empty frame), a count of objects and
   the objects (s_placed). */
static void
s_on_task(nm_t *nm, nm_peer_msg_t *m)
{
    if (!m->rid || nm_rmodule_hold(nm, nm->remote->mods, m))
        return; /* taken again when its modules came (exec_rmodule.c) */
    nm_client_t *c = s_peer_client(nm, m);
    if (!c) {
        log_error("out of memory for another node's tasks");
        return;
    }
    for (zframe_t *f = zmsg_first(m->msg); f; f = zmsg_next(m->msg)) {
        exec_spec_t s;
        util_rd_t rd;
        util_rd_init(&rd, zframe_data(f), zframe_size(f));
        zframe_t *mod = zmsg_next(m->msg), *cnt = mod ? zmsg_next(m->msg) : NULL;
        if (exec_spec_decode(&rd, &s) || s.kind > EXEC_SPEC_CALL || !cnt ||
            (zframe_size(cnt) != 4 && zframe_size(cnt) != 8 && zframe_size(cnt) != S_CNT_EXT)) {
            nm_complain(nm, "NODE_TASK: a malformed task");
            return;
        }
        util_prof_stamp("b_recv", s.task.b);
        if (zframe_size(mod)) { /* a module's bytes (an older sender): kept as a driver's MODULE is */
            uint8_t hash[16];
            char path[PATH_MAX + 64];
            util_blake(hash, 16, zframe_data(mod), zframe_size(mod));
            if (memcmp(hash, s.module, 16) != 0)
                nm_complain(nm, "NODE_TASK: the module's bytes do not match its hash");
            else if (exec_module_store(nm->cluster.dir, hash, zframe_data(mod),
                                       zframe_size(mod), path, sizeof path))
                log_error("cannot keep another node's module: %s", lux_errmsg());
        }
        /* the arguments' objects the sender held: here as they are, for
           as long as the task needs them */
        uint32_t nobj = s_le32(zframe_data(cnt));
        for (uint32_t i = 0; i < nobj; i++) {
            lux_ref_t id;
            uint8_t where;
            zframe_t *bytes;
            if (!s_obj_next(m->msg, &id, &where, &bytes)) {
                nm_complain(nm, "NODE_TASK: a malformed object");
                return;
            }
            nm_obj_t *o = nm_obj_get(nm, &id);
            if (o || where != EXEC_W_INLINE)
                continue; /* held here already */
            if (!(o = nm_obj_new(nm, &id)))
                break;
            if (nm_obj_fill(nm, o, zframe_data(bytes), zframe_size(bytes)))
                nm_obj_set_error(nm, o, lux_errmsg()); /* the task fails naming it */
            o->is_put = true; /* no lineage here: spilled, not dropped, if room is short */
        }
        /* the sender's attempt (a task placed again after the node it
           was sent to died): the events here carry it on */
        uint32_t attempt = zframe_size(cnt) == 8 ? s_le32(zframe_data(cnt) + 4) : 1;
        nm->remote->n_taken++;
        if (nm_submit(nm, c, &s))
            log_error("a task from another node: %s", lux_errmsg());
        nm_task_t *t = s.kind == EXEC_SPEC_TASK && attempt > 1 ? nm_task_find(nm, &s.task) : NULL;
        if (t && t->owner == c && t->attempt == 1 && !t->worker)
            t->attempt = attempt > 255 ? 255 : attempt;
        if (zframe_size(cnt) == S_CNT_EXT) { /* an actor's run: exec_ractor.c */
            const uint8_t *p = zframe_data(cnt);
            nm_remote_ext_t x = {.idx = s_le64(p + 8), .restarts = s_le32(p + 16),
                                 .flags = p[20]};
            memcpy(x.ckpt.b, p + 21, LUX_REF_LEN);
            nm->ops.ractor_taken(nm, c, &s, &x);
        } else if (s.kind == EXEC_SPEC_CALL && nm->ops.ractor_taken) {
            /* a new call: maybe one its actor re-applies (exec_ractor.c s_merge) */
            nm->ops.ractor_taken(nm, c, &s, &(nm_remote_ext_t) {0});
        }
    }
}

void
nm_remote_send(nm_t *nm, nm_client_t *c, zmsg_t **mp)
{
    zmsg_t *m = *mp;
    *mp = NULL;
    zframe_t *hf = zmsg_first(m), *body = zmsg_next(m);
    net_hdr_t h;
    if (!nm->remote || net_hdr_decode(&h, hf) || h.type != NET_OBJECTS || !body) {
        zmsg_destroy(&m);
        return;
    }
    /* the objects, with the bytes of those in the store copied in */
    util_rd_t rd;
    util_rd_init(&rd, zframe_data(body), zframe_size(body));
    uint32_t count = util_rd_u32(&rd);
    uint32_t n = 0;
    lux_ref_t *done = calloc(count ? count : 1, sizeof *done);
    zmsg_t *out = zmsg_new();
    for (uint32_t i = 0; i < count && done; i++) {
        exec_obj_t d;
        if (exec_obj_decode(&rd, &d))
            break;
        if (d.where == EXEC_W_ARENA)
            s_obj_add(out, &d.id, EXEC_W_INLINE, exec_arena_base(nm->arena) + d.off, d.size);
        else if (d.where == EXEC_W_UNAVAILABLE) /* a GET's answer, not a result: none here */
            s_obj_add(out, &d.id, EXEC_W_ERROR, d.bytes, d.size);
        else
            s_obj_add(out, &d.id, d.where, d.bytes, d.size);
        done[n++] = d.id;
    }
    zmsg_destroy(&m);
    /* an answer to the sender's NODE_TASK, however late: its routing ID */
    nm_peer_msg_t to = {.type = NET_NODE_TASK, .rid = zframe_new(c->peer_rid, c->peer_rid_len)};
    for (uint32_t i = 0; i < n && util_prof_on(); i++)
        util_prof_stamp("b_reply", done[i].b); /* a ref begins with its task's ID */
    nm_peer_reply(nm, &to, NET_NODE_TASK_DONE, &out);
    zframe_destroy(&to.rid);
    /* the sender has its copy (object_copied): this node's go when nothing
       else holds them */
    for (uint32_t i = 0; i < n; i++) {
        nm_obj_t *o = nm_obj_get(nm, &done[i]);
        if (o && o->owner == c) {
            o->owned = false;
            o->owner = NULL;
            if (!o->pins && !o->uses)
                nm_obj_delete_why(nm, o, "sent to the node whose task made it");
        }
    }
    free(done);
}

void
nm_remote_ended(nm_t *nm, const nm_task_t *t, int status, const char *msg)
{
    nm_client_t *c = t->owner;
    if (!nm->remote || t->nret || !c || !c->peer || (t->kind != T_TASK && t->kind != T_CALL))
        return;
    lux_ref_t id;
    exec_ref_make(&id, &t->id, 0);
    uint8_t where = status == 0                  ? EXEC_W_INLINE
                    : status == LUX_ECANCELLED ? EXEC_W_CANCELLED
                                               : EXEC_W_ERROR;
    const char *text = status == 0 ? "" : msg ? msg : "?";
    zmsg_t *out = zmsg_new();
    s_obj_add(out, &id, where, text, strlen(text));
    nm_peer_msg_t to = {.type = NET_NODE_TASK, .rid = zframe_new(c->peer_rid, c->peer_rid_len)};
    nm_peer_reply(nm, &to, NET_NODE_TASK_DONE, &out);
    zframe_destroy(&to.rid);
}

/* --- the nodes tasks were sent to dying ------------------------------------------------------ */

typedef struct {
    nm_task_t **v;
    size_t n, cap;
} s_list_t;

static int
s_collect_remote(void *arg, const void *key, void *value)
{
    (void) key;
    s_list_t *l = arg;
    nm_task_t *t = *(nm_task_t **) value;
    /* sent to a node, or a task or actor creation waiting for the global
       scheduler's answer (s_headless) */
    if (!t->remote || (util_id_is_zero(&t->rnode) && t->actor && t->kind != T_CREATE))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        nm_task_t **p = realloc(l->v, cap * sizeof *p);
        if (!p)
            return 0;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = t;
    return 0;
}

/* The monitor cannot be asked who is alive (the head is down, or cut
   off): nothing tells this node whether the nodes its tasks and calls
   went to live. Those away for S_HEADLESS_MS of that silence fail, saying
   so, rather than wait for ever; an actor's creation stays (the actor may
   well live: its calls that are answered go on). A task still waiting
   for the global scheduler's answer (NODE_PLACE to the head) fails the
   same way, naming the head. */
static void
s_headless(nm_t *nm, s_list_t *l, int64_t now)
{
    struct nm_remote *r = nm->remote;
    if (!r->unseen && !(r->unseen = util_idmap_new(sizeof(int64_t))))
        return;
    if (!r->silent_ms)
        r->silent_ms = now;
    for (size_t i = 0; i < l->n; i++) {
        nm_task_t *t = l->v[i];
        bool placing = util_id_is_zero(&t->rnode); /* asked the head where it goes */
        if (!t->remote || (t->kind == T_CREATE) != (placing && t->actor != NULL))
            continue; /* a placed actor's creation stays */
        int fresh = 0;
        int64_t *since = util_idmap_put(r->unseen, t->id.b, &fresh);
        if (!since)
            continue;
        if (fresh)
            *since = now;
        if (now - *since < r->headless_ms)
            continue;
        char nh[UTIL_ID_HEX], why[600];
        long long quiet = (long long) (now - r->silent_ms) / 1000;
        long long away = (long long) (now - *since) / 1000 + 1;
        util_idmap_del(r->unseen, t->id.b);
        if (placing)
            snprintf(why, sizeof why, "the global scheduler (the head's node manager at %s), "
                     "asked where it can run, has not answered in %lld s, and the head's "
                     "membership monitor has not answered for %lld s (is the head down?)",
                     r->head_ep, away, quiet);
        else
            snprintf(why, sizeof why, "the head's membership monitor has not answered for %lld s "
                     "(is the head down?), so whether node %s, where it was sent %lld s ago, "
                     "is alive cannot be known; no answer came from it", quiet,
                     util_id_hex(&t->rnode, nh), away);
        if (t->actor) { /* dies with the reason (exec_ractor.c) */
            char text[620];
            snprintf(text, sizeof text, "dead %s\n", why);
            nm->ops.ractor_placed(nm, t->actor, text);
            continue;
        }
        t->remote = false; /* its failure is this node's event */
        nm_task_fail(nm, t, LUX_EDEAD, why);
    }
}

/* The value of key in the block of the monitor's table that begins at
   blk (end: where it ends, NULL for the last) into v[n]; false when none. */
static bool
s_block_get(const char *blk, const char *end, const char *key, char *v, size_t n)
{
    char k[40];
    snprintf(k, sizeof k, "\n%s ", key);
    const char *at = strstr(blk, k);
    if (!at || (end && at > end) || n == 0)
        return false;
    at += strlen(k);
    size_t len = strcspn(at, "\n");
    snprintf(v, n, "%.*s", (int) (len < n ? len : n - 1), at);
    return true;
}

/* Dead node node's endpoint into ep[n], from its address in the monitor's
   table; false when the table does not list it, or lists a node alive
   at that address (one started again there: what is queued now may be
   its own). */
static bool
s_table_dead_ep(nm_t *nm, const char *table, const util_id_t *node, char *ep, size_t n)
{
    char hex[UTIL_ID_HEX], v[64], addr[64] = "", a[64], st[32];
    util_id_hex(node, hex);
    for (const char *blk = table; blk && *blk && !addr[0];) {
        const char *end = strstr(blk, "\n\n");
        if (exec_members_get(blk, "node", v, sizeof v) && strcmp(v, hex) == 0 &&
            !s_block_get(blk, end, "address", addr, sizeof addr))
            return false;
        blk = end ? end + 2 : NULL;
    }
    if (!addr[0])
        return false;
    for (const char *blk = table; blk && *blk;) {
        const char *end = strstr(blk, "\n\n");
        if (s_block_get(blk, end, "address", a, sizeof a) && strcmp(a, addr) == 0 &&
            (!s_block_get(blk, end, "state", st, sizeof st) || strcmp(st, "alive") == 0))
            return false;
        blk = end ? end + 2 : NULL;
    }
    return db_cluster_node_ep(&nm->cluster, addr, ep, n) != NULL;
}

/* The monitor's table came (STATUS): tasks and calls sent to nodes it
   does not call alive are placed again, or fail; what this node still
   queued for them is dropped (nm_peer_forget). */
static void
s_watch_table(nm_t *nm, const char *table)
{
    struct nm_remote *r = nm->remote;
    s_list_t l = {0};
    util_idmap_each(nm->tasks, s_collect_remote, &l);
    r->silent_ms = 0;
    if (r->unseen)
        util_idmap_clear(r->unseen);
    for (size_t i = 0; i < l.n; i++) {
        nm_task_t *t = l.v[i];
        if (!t->remote || util_id_is_zero(&t->rnode)) /* placing, or an actor's taken back */
            continue;
        if (gs_table_alive(table, &t->rnode))
            continue;
        nm_rplace_dead(nm, &t->rnode); /* never placed on again, whatever the table's age */
        char ep[DB_EP_MAX];
        if (s_table_dead_ep(nm, table, &t->rnode, ep, sizeof ep))
            nm_peer_forget(nm, ep); /* not delivered to a node started again at its address */
        if (t->actor) { /* an actor elsewhere, or one of its calls (exec_ractor.c) */
            nm->ops.ractor_lost(nm, t->actor, &t->rnode);
            continue;
        }
        char hex[UTIL_ID_HEX], nh[UTIL_ID_HEX], why[300];
        util_id_hex(&t->id, hex);
        util_id_hex(&t->rnode, nh);
        t->remote = false;
        memset(&t->rnode, 0, sizeof t->rnode);
        t->rgot = 0;
        if (t->attempt >= t->max_attempts) {
            snprintf(why, sizeof why, "node %s, where it was sent, died, and it has had its %u "
                     "attempts", nh, t->attempt);
            nm_task_fail(nm, t, LUX_EDEAD, why);
            continue;
        }
        log_warn("task %s: node %s, where it ran, is dead: placing it again (attempt %u of %u)",
                 hex, nh, t->attempt + 1, t->max_attempts);
        t->attempt++;
        snprintf(why, sizeof why, "node %s, where it was sent, died; attempt %u of %u", nh,
                 t->attempt, t->max_attempts);
        nm_log_retried(nm, t, why); /* the tasks and retries views count it */
        t->spilled = false; /* placed once per attempt */
        nm->n_retried++;
        nm_task_wake(nm, t);
    }
    free(l.v);
}

/* The monitor did not answer (or could not be asked): s_headless. */
static void
s_watch_silent(nm_t *nm, int64_t now)
{
    s_list_t l = {0};
    util_idmap_each(nm->tasks, s_collect_remote, &l);
    s_headless(nm, &l, now);
    free(l.v);
}

/* Ask the monitor who is alive, without waiting: the answer is read by
   s_watch_read on a later tick. false when it cannot be asked. */
static bool
s_watch_ask(nm_t *nm, int64_t now)
{
    if (nm_table_monitor_ask(nm, &nm->remote->watch))
        return false;
    nm->remote->asked_ms = now;
    return true;
}

/* The monitor's answer, if it came; past r->ask_wait_ms the ask counts as
   unanswered (its socket is closed, so a late answer is dropped). */
static void
s_watch_read(nm_t *nm, int64_t now)
{
    struct nm_remote *r = nm->remote;
    if (!r->asked_ms)
        return;
    zmsg_t *m = zmsg_recv_nowait(r->watch);
    if (!m) {
        if (now - r->asked_ms >= r->ask_wait_ms) {
            r->asked_ms = 0;
            zsock_destroy(&r->watch);
            s_watch_silent(nm, now);
        }
        return;
    }
    r->asked_ms = 0;
    char *head = zmsg_popstr(m), *body = zmsg_popstr(m);
    if (head && body && (strcmp(head, "OK") == 0 || strcmp(head, "NODES") == 0)) {
        s_watch_table(nm, body);
    } else {
        nm_complain(nm, "the head's membership monitor refused STATUS");
        s_watch_silent(nm, now);
    }
    free(head);
    free(body);
    zmsg_destroy(&m);
}

void
nm_remote_tick(nm_t *nm)
{
    struct nm_remote *r = nm->remote;
    int64_t now = util_mono_ms();
    if (!r)
        return;
    nm->ops.ractor_tick(nm); /* actors on other nodes (exec_ractor.c) */
    nm_rmodule_tick(nm, r->mods);
    nm_remote_flush(nm);
    nm_rplace_tick(nm, r->head_ep, r->silent_ms != 0, s_reask);
    nm_remote_flush(nm);
    s_watch_read(nm, now);
    if (r->asked_ms || now - r->watch_ms < S_WATCH_MS)
        return; /* one ask at a time */
    r->watch_ms = now;
    s_list_t l = {0};
    util_idmap_each(nm->tasks, s_collect_remote, &l);
    size_t away = l.n;
    free(l.v);
    if (away && !s_watch_ask(nm, now))
        s_watch_silent(nm, now); /* asked again next time */
}

/* --- setup ------------------------------------------------------------------------------------ */

nm_remote_t *
nm_remote_new(nm_t *nm)
{
    nm_remote_t *r = calloc(1, sizeof *r);
    if (!r) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    r->nm = nm;
    nm->ops.remote_ended = nm_remote_ended;
    nm->ops.peer_send = nm_remote_send;
    nm->ops.remote_place = nm_remote_place;
    nm->ops.remote_flush = nm_remote_flush;
    util_buf_init(&r->scratch);
    nm_peer_head_ep(nm, r->head_ep, sizeof r->head_ep);
    const char *wait = getenv("LUX_WATCH_WAIT_MS");
    r->ask_wait_ms = wait && atoi(wait) > 0 ? atoi(wait) : NM_TABLE_ASK_WAIT_MS;
    const char *headless = getenv("LUX_HEADLESS_MS");
    r->headless_ms = headless && atoi(headless) > 0 ? atoi(headless) : S_HEADLESS_MS;
    if (!(nm->rplace = nm_rplace_new(nm)) || !(nm->table = nm_table_new(nm))) {
        nm_remote_destroy(&r);
        return NULL;
    }
    int rc = 0;
    if (nm_peer_is_head(nm))
        rc = nm_peer_on(nm, NET_NODE_PLACE, s_on_place);
    if (!rc)
        rc = nm_peer_on(nm, NET_NODE_PLACE_REP, s_on_placed);
    if (!rc)
        rc = nm_peer_on(nm, NET_NODE_TASK, s_on_task);
    if (!rc)
        rc = nm_peer_on(nm, NET_NODE_TASK_DONE, s_on_done);
    if (!rc && !(r->mods = nm_rmodule_new(nm, s_on_task)))
        rc = LUX_ENOMEM;
    if (rc)
        nm_remote_destroy(&r);
    return r;
}

void
nm_remote_destroy(nm_remote_t **self_p)
{
    nm_remote_t *r = *self_p;
    if (!r)
        return;
    nm_t *nm = r->nm;
    nm_rmodule_destroy(&r->mods);
    nm->rmodule = NULL; /* its handlers reach it there */
    for (int i = 0; i < r->npend; i++)
        zmsg_destroy(&r->pend[i].m);
    zsock_destroy(&r->watch);
    util_idmap_destroy(&r->unseen);
    nm_rplace_destroy(&nm->rplace);
    nm_table_destroy(&nm->table);
    util_buf_free(&r->scratch);
    free(r);
    *self_p = NULL;
}

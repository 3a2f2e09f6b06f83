/*  exec_ractor - actors on other nodes (issue 28, doc/DESIGN.md 8.1).

    PLACING. An actor whose resources this node never has (its creation
    asks for disk=1 and only node B declares disk) is not failed here when
    the node is part of a cluster: its creation goes to the global
    scheduler like a spilled task (NODE_PLACE, exec_remote.c), and then to
    the node picked (NODE_TASK with an EXEC_SPEC_CREATE spec, the module
    the first time). That node makes the actor as if a local client had
    asked (its owner is the peer client, detached), and its events
    (actor_created, actor_call, ...) are that node's. This node, its home,
    keeps a record of it (a->remote, a->home): its creation, its node, and
    the calls sent and not answered yet.

    CALLS. A call on a remote actor waits in the actor's queue here until
    its arguments are ready, and is sent in order (NODE_TASK, an
    EXEC_SPEC_CALL spec) over the one connection to that node, so the
    order in which they were submitted here is the order it applies them;
    their outputs come back as a spilled task's do (NODE_TASK_DONE).

    HANDLES ANYWHERE. A node given a call of an actor it does not know
    makes a stub (a->remote, not home) and asks the head's node manager
    which node holds it (NODE_ACTOR_WHERE): the head answers from the log
    (the newest actor_created of that actor on a live node). A lookup by
    name that finds nothing here asks the same way, by name (an actor not
    dead, on a live node), and again every S_ASK_MS until its deadline.

    A NODE DIES. The node watch of exec_remote.c (nm_remote_tick) finds
    tasks sent to a dead node; an actor's creation or calls come here. The
    home places the actor again (a restart: counted against max_restarts)
    on a node that fits, sends its creation and then the calls it had in
    flight, in order; with no restarts left, or no node that fits, the
    actor dies with the reason. A stub asks the head again, and sends its
    calls where the actor lives now. While its home places it again the
    head answers "not found", and the home may wait for a lately dead node
    up to EXEC_MEMBERS_DEAD_WAIT x LUX_NODE_DEAD_MS after its last beat
    (exec_table.c): the stub waits that long plus S_LOST_MS before its
    calls fail, so that it never gives up while the home still waits (it
    gave up after S_LOST_MS alone, 30 s, and with a dead time above 7.5 s
    the home's wait was the longer: t/6152). When the home gives up, the
    log has the actor's death, and the head answers with it (EDEAD and
    the log's reason): the stub's calls fail at once with that reason,
    rather than waiting out its own bound to say only that nobody holds
    the actor.

    CHECKPOINTS ACROSS NODES. A checkpoint made where the actor lives goes
    to its home too (NODE_ACTOR_CKPT: the call it covers and its bytes),
    which keeps the newest in its own store. Placed again, the actor
    starts from it: the creation carries the checkpoint (the new node
    loads it instead of running the constructor), then the calls the log
    has after it go, in the log's order, with the numbers it gave them:
    those answered before are re-applied and their results dropped, those
    in flight are answered; calls the log never saw come after, as new
    ones. The log is read where its files are (the head's node); a home
    elsewhere asks the head's node for them (exec_rcalls.c) and places the
    actor once they come, or it dies naming why (nm_ractor_requeue_read). A
    handle on a third node sends its call in flight again: the new holder
    takes it as the re-applied run of the same call (s_merge), not as a
    new one.
*/
#include "exec_ractor.h"
#include "exec_members.h"
#include "exec_peer.h"
#include "exec_pool.h"
#include "exec_node_actor.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_node_graph.h"
#include "exec_remote.h"
#include "../db/db_query.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_ASK_MS 250      /* unresolved handles and lookups ask the head this often */
#define S_LOST_MS 30000   /* a handle nobody can place for this long past the home's wait
                             for a lately dead node: its calls fail */
#define S_NAMES_MAX 64    /* names being looked up at the head at once */

struct nm_ractor {
    db_query_t *q;        /* the head: the log, for NODE_ACTOR_WHERE */
    int64_t lost_ms;      /* a stub's bound (s_tick_one): S_LOST_MS (or the test hook
                             LUX_TEST_ACTOR_LOST_MS) + the home's longest wait */
    util_buf_t buf;
    uint64_t req;
    int64_t tick_ms;
    struct {
        char *name;
        int64_t deadline_ms;
    } names[S_NAMES_MAX];
    int nnames;
};

/* --- small things ------------------------------------------------------------------------- */

static void
s_push_back(nm_task_t **head, nm_task_t **last, nm_task_t *t)
{
    t->next = NULL;
    if (*last)
        (*last)->next = t;
    else
        *head = t;
    *last = t;
}

/* a dies at its next pump (never from inside a walk over tasks). */
static void
s_doom(nm_t *nm, nm_actor_t *a, int status, const char *why)
{
    if (a->doom || a->state == A_DEAD)
        return;
    a->doom = strdup(why);
    a->doom_status = status;
    nm_actor_kick(nm, a);
}

static nm_actor_t *
s_find(nm_t *nm, const util_id_t *id)
{
    nm_actor_t **p = util_idmap_get(nm->actors, id->b);
    return p ? *p : NULL;
}

/* --- the head: where actors live ---------------------------------------------------------- */

/* the kinds by their codes in the log's format (db_event.h) */
_Static_assert(DB_K_actor_created == 11 && DB_K_actor_died == 15, "actor events");
_Static_assert(DB_K_node_joined == 16 && DB_K_node_died == 17 && DB_K_node_left == 24,
               "node events");

/* The newest creation of the actor (by ID, or by name when ?1 is NULL)
   on a node alive, of an actor not dead since. */
static const char s_where_sql[] =
    "SELECT e.actor, e.node, n.name, n.idx, e.name, e.info "
    "FROM event e JOIN event n ON n.kind = 16 AND n.node = e.node "
    "WHERE e.kind = 11 AND n.idx > 0 "
    "  AND (e.actor = ?1 OR (?1 IS NULL AND (e.info = 'name=' || ?2 "
    "       OR substr(e.info, 1, length(?2) + 6) = 'name=' || ?2 || ' '))) "
    "  AND NOT EXISTS (SELECT 1 FROM event d WHERE d.kind IN (17, 24) AND d.node = e.node) "
    "  AND NOT EXISTS (SELECT 1 FROM event x WHERE x.kind = 15 AND x.actor = e.actor "
    "                  AND x.seq > e.seq) "
    "ORDER BY e.ts DESC LIMIT 1";

/* The log's latest actor_died of actor id, its reason into why[n]; false
   when there is none (or the log cannot be read). */
static bool
s_died(nm_t *nm, const util_id_t *id, char *why, size_t n)
{
    struct nm_ractor *r = nm->ractor;
    sqlite3_stmt *st = NULL;
    bool dead = false;
    if (!r->q || db_query_prepare(r->q, "SELECT info FROM event WHERE kind = 15 AND actor = ?1 "
                                  "ORDER BY seq DESC LIMIT 1", &st, NULL))
        return false;
    sqlite3_bind_blob(st, 1, id->b, 16, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *info = (const char *) sqlite3_column_text(st, 0);
        snprintf(why, n, "%s", info && *info ? info : "no reason recorded");
        dead = true;
    }
    sqlite3_finalize(st);
    return dead;
}

/* Answer a WHERE request (id, or name when id is zero) into b: rc, id,
   node, endpoint, class. An actor by ID with no live creation whose
   death the log has: LUX_EDEAD, the reason in the class's place (its
   stubs fail their calls with it, exec_ractor.c s_answer). */
static void
s_where(nm_t *nm, const util_id_t *id, const char *name, util_buf_t *b)
{
    struct nm_ractor *r = nm->ractor;
    util_id_t aid = {0}, node = {0};
    char ep[DB_EP_MAX] = "", cls[700] = ""; /* a class, or a death's reason */
    int rc = 0;
    sqlite3_stmt *st = NULL;
    if (!r->q && !(r->q = db_query_open(&nm->cluster)))
        rc = util_err_ctx(LUX_EIO, "reading the log for where actors live");
    if (!rc && (rc = db_query_prepare(r->q, s_where_sql, &st, NULL)))
        db_query_close(&r->q); /* open again next time */
    if (!rc) {
        if (util_id_is_zero(id))
            sqlite3_bind_null(st, 1);
        else
            sqlite3_bind_blob(st, 1, id->b, 16, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 16 &&
            sqlite3_column_bytes(st, 1) == 16 && sqlite3_column_text(st, 2)) {
            memcpy(aid.b, sqlite3_column_blob(st, 0), 16);
            memcpy(node.b, sqlite3_column_blob(st, 1), 16);
            snprintf(ep, sizeof ep, "tcp://%s:%d", sqlite3_column_text(st, 2),
                     sqlite3_column_int(st, 3));
            if (sqlite3_column_text(st, 4))
                snprintf(cls, sizeof cls, "%s", sqlite3_column_text(st, 4));
        } else if (step == SQLITE_ROW || step == SQLITE_DONE) {
            rc = LUX_ENOTFOUND;
        } else {
            rc = util_err(LUX_ESQL, "reading where actors live: %s",
                          sqlite3_errmsg(db_query_db(r->q)));
        }
        sqlite3_finalize(st);
        if (rc && rc != LUX_ENOTFOUND)
            db_query_close(&r->q);
        if (rc == LUX_ENOTFOUND && !util_id_is_zero(id) && s_died(nm, id, cls, sizeof cls)) {
            rc = LUX_EDEAD;
            aid = *id;
        }
    }
    util_buf_put_u32(b, (uint32_t) rc);
    util_buf_put(b, aid.b, 16);
    util_buf_put(b, node.b, 16);
    util_buf_put_str(b, ep, strlen(ep));
    util_buf_put_str(b, cls, strlen(cls));
}

static void s_answer(nm_t *nm, util_rd_t *rd);

/* NODE_ACTOR_WHERE: req u64, id[16] (zero: by name), name str. Answer
   NODE_ACTOR_WHERE_REP: req u64, name str, then s_where's fields. */
static void
s_on_where(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t rd;
    if (!nm_peer_body(nm, m, &rd))
        return;
    uint64_t req = util_rd_u64(&rd);
    const uint8_t *idp = util_rd_take(&rd, 16);
    size_t nlen = 0;
    const char *name = util_rd_str(&rd, &nlen);
    if (rd.bad || !idp || nlen > 255) {
        nm_complain(nm, "malformed NODE_ACTOR_WHERE");
        return;
    }
    char nm_[256];
    util_id_t id;
    memcpy(id.b, idp, 16);
    snprintf(nm_, sizeof nm_, "%.*s", (int) nlen, name ? name : "");
    util_buf_t *b = &nm->ractor->buf;
    b->len = 0;
    util_buf_put_u64(b, req);
    util_buf_put_str(b, nm_, strlen(nm_));
    if (nm_peer_is_head(nm))
        s_where(nm, &id, nm_, b);
    else
        util_buf_put_u32(b, (uint32_t) util_err(LUX_EINVAL, "only the head finds actors"));
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, b->data, b->len);
    nm_peer_reply(nm, m, NET_NODE_ACTOR_WHERE_REP, &out);
}

/* Ask the head where the actor id (or the one named name) lives. */
static void
s_ask(nm_t *nm, const util_id_t *id, const char *name)
{
    struct nm_ractor *r = nm->ractor;
    util_buf_t b;
    util_buf_init(&b);
    util_buf_put_u64(&b, ++r->req);
    util_buf_put(&b, id->b, 16);
    util_buf_put_str(&b, name, strlen(name));
    if (b.oom) {
        util_buf_free(&b);
        return;
    }
    if (nm_peer_is_head(nm)) { /* no round trip */
        util_buf_t a;
        util_buf_init(&a);
        util_buf_put_u64(&a, r->req);
        util_buf_put_str(&a, name, strlen(name));
        s_where(nm, id, name, &a);
        util_rd_t rd;
        util_rd_init(&rd, a.data, a.len);
        if (!a.oom)
            s_answer(nm, &rd);
        util_buf_free(&a);
    } else {
        char ep[DB_EP_MAX];
        zmsg_t *m = zmsg_new();
        zmsg_addmem(m, b.data, b.len);
        if (nm_peer_send(nm, nm_peer_head_ep(nm, ep, sizeof ep), NET_NODE_ACTOR_WHERE, &m))
            log_warn("cannot ask the head where an actor lives: %s", lux_errmsg());
    }
    util_buf_free(&b);
}

/* An answer: a stub learns its node; a lookup by name finds its actor. */
static void
s_answer(nm_t *nm, util_rd_t *rd)
{
    size_t nlen = 0, eplen = 0, clen = 0;
    (void) util_rd_u64(rd);
    const char *name = util_rd_str(rd, &nlen);
    int rc = (int) util_rd_u32(rd);
    if (!rd->bad && rc == LUX_ENOTFOUND && name && nlen && nlen < 256) {
        char nm_[256];
        snprintf(nm_, sizeof nm_, "%.*s", (int) nlen, name);
        nm_actor_missed(nm, nm_); /* a lookup that does not wait: none */
    }
    if (!rd->bad && rc == LUX_EDEAD) { /* its home gave up: the log has its death */
        const uint8_t *idp = util_rd_take(rd, 16);
        (void) util_rd_take(rd, 16);
        (void) util_rd_str(rd, &eplen);
        const char *why = util_rd_str(rd, &clen);
        util_id_t id;
        nm_actor_t *a = NULL;
        if (!rd->bad && idp) {
            memcpy(id.b, idp, 16);
            a = s_find(nm, &id);
        }
        if (a && a->remote && !a->home && !a->rep[0] && a->state != A_DEAD) {
            char msg[900], hex[UTIL_ID_HEX];
            snprintf(msg, sizeof msg, "actor %s died (the log says, asked where it lives): "
                     "%.*s", util_id_hex(&id, hex), (int) clen, why ? why : "");
            s_doom(nm, a, LUX_EDEAD, msg);
        }
        return;
    }
    if (rd->bad || rc)
        return; /* not (yet) known: asked again */
    const uint8_t *idp = util_rd_take(rd, 16), *nodep = util_rd_take(rd, 16);
    const char *ep = util_rd_str(rd, &eplen), *cls = util_rd_str(rd, &clen);
    if (rd->bad || !idp || !nodep || !ep || eplen >= DB_EP_MAX || memcmp(nodep, nm->node.b, 16) == 0)
        return;
    util_id_t id;
    memcpy(id.b, idp, 16);
    nm_actor_t *a = s_find(nm, &id);
    if (!a && nlen && (a = nm_ractor_stub(nm, &id)) && !(a->name = strndup(name, nlen))) {
        log_error("out of memory holding an actor's name");
        return;
    }
    if (!a || !a->remote || a->home || a->state == A_DEAD)
        return; /* made here, or known already */
    if (clen && a->cls && strcmp(a->cls, "?") == 0) {
        char *c = strndup(cls, clen);
        if (c) {
            free(a->cls);
            a->cls = c;
        }
    }
    if (!a->rep[0]) {
        memcpy(a->rnode.b, nodep, 16);
        snprintf(a->rep, sizeof a->rep, "%.*s", (int) eplen, ep);
        a->lost_ms = 0;
        char hex[UTIL_ID_HEX];
        log_info("actor %s lives on %s", util_id_hex(&a->id, hex), a->rep);
        nm_actor_kick(nm, a);
    }
    if (a->name) { /* the lookups waiting for it are answered */
        struct nm_ractor *r = nm->ractor;
        for (int i = 0; i < r->nnames; i++)
            if (strcmp(r->names[i].name, a->name) == 0)
                r->names[i].deadline_ms = 0; /* dropped at the next tick */
        nm_actor_found(nm, a);
    }
}

static void
s_on_where_rep(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t rd;
    if (nm_peer_body(nm, m, &rd))
        s_answer(nm, &rd);
}

/* The body of m into rd, and the actor ID it begins with into id; false
   when there is none (rd.bad, or no body: complained). */
static bool
s_body_actor(nm_t *nm, nm_peer_msg_t *m, util_rd_t *rd, util_id_t *id)
{
    if (!nm_peer_body(nm, m, rd))
        return false;
    const uint8_t *p = util_rd_take(rd, 16);
    if (p)
        memcpy(id->b, p, 16);
    return p != NULL;
}

/* NODE_ACTOR_KILL: id[16], why str: the actor here goes (its home or a
   handle killed it, or its owner left). */
static void
s_on_kill(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t rd;
    util_id_t id;
    bool has = s_body_actor(nm, m, &rd, &id);
    size_t n = 0;
    const char *why = has ? util_rd_str(&rd, &n) : NULL;
    if (!has || rd.bad) {
        nm_complain(nm, "malformed NODE_ACTOR_KILL");
        return;
    }
    nm_actor_t *a = s_find(nm, &id);
    if (!a || a->remote || a->state == A_DEAD)
        return;
    char msg[400];
    snprintf(msg, sizeof msg, "%.*s", (int) n, why ? why : "");
    a->killed = true;
    if (a->worker)
        kill(a->worker->pid, SIGKILL); /* the reaper finds it; no restart */
    else
        s_doom(nm, a, LUX_EDEAD, msg);
}

/* --- checkpoints: from where an actor lives to its home ------------------------------------- */

void
nm_ractor_saved(nm_t *nm, nm_actor_t *a, const nm_obj_t *o)
{
    nm_client_t *c = a->owner;
    if (!nm->ractor || !c || !c->peer || a->remote || o->state != OBJ_READY)
        return;
    util_buf_t b;
    util_buf_init(&b);
    util_buf_put(&b, a->id.b, 16);
    util_buf_put_u64(&b, a->ckpt_idx);
    util_buf_put(&b, o->id.b, LUX_REF_LEN);
    util_buf_put(&b, o->fp, 16);
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, b.data, b.len);
    zmsg_addmem(m, o->where == EXEC_W_INLINE ? o->bytes : exec_arena_base(nm->arena) + o->off,
                (size_t) o->size);
    util_buf_free(&b);
    nm_peer_msg_t to = {.type = NET_NODE_TASK, .rid = zframe_new(c->peer_rid, c->peer_rid_len)};
    nm_peer_reply(nm, &to, NET_NODE_ACTOR_CKPT, &m);
    zframe_destroy(&to.rid);
}

/* NODE_ACTOR_CKPT: actor ID [16], call u64, object ID [20], fingerprint
   [16]; then the checkpoint's bytes. The home keeps the newest. */
static void
s_on_ckpt(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t rd;
    util_id_t id;
    bool has = s_body_actor(nm, m, &rd, &id);
    uint64_t idx = has ? util_rd_u64(&rd) : 0;
    const uint8_t *op = has ? util_rd_take(&rd, LUX_REF_LEN) : NULL;
    const uint8_t *fp = op ? util_rd_take(&rd, 16) : NULL;
    zframe_t *bytes = (zmsg_first(m->msg), zmsg_next(m->msg));
    if (!has || rd.bad || !op || !fp || !bytes) {
        nm_complain(nm, "malformed NODE_ACTOR_CKPT");
        return;
    }
    nm_actor_t *a = s_find(nm, &id);
    char hex[UTIL_ID_HEX];
    if (!a || !a->home || a->state == A_DEAD || (a->has_ckpt && idx <= a->ckpt_idx))
        return;
    lux_ref_t oid;
    memcpy(oid.b, op, LUX_REF_LEN);
    nm_obj_t *o = nm_obj_get(nm, &oid);
    if (o || !(o = nm_obj_new(nm, &oid)))
        return;
    if (nm_obj_fill(nm, o, zframe_data(bytes), zframe_size(bytes))) {
        log_warn("actor %s (%s): no room here for its checkpoint of call %llu (%zu bytes): "
                 "a restart starts from the one before: %s", util_id_hex(&a->id, hex), a->cls,
                 (unsigned long long) idx, zframe_size(bytes), lux_errmsg());
        nm_obj_delete(nm, o);
        return;
    }
    memcpy(o->fp, fp, 16);
    o->is_put = true;  /* no lineage: spilled, never dropped */
    o->owned = true;   /* the actor's */
    o->owner = NULL;
    if (a->has_ckpt) {
        nm_obj_t *old = nm_obj_get(nm, &a->ckpt);
        if (old) {
            old->owned = false;
            if (!old->pins && !old->uses)
                nm_obj_delete(nm, old);
        }
    }
    a->ckpt = oid;
    a->ckpt_idx = idx;
    a->has_ckpt = true;
}

/* A new call c's node sent (s), not numbered: when the actor re-applies
   the same call (its home's replay after the node that held it died, which
   had logged it) and this is its caller's node sending it again (it was in
   flight there), it is the same call, applied once: it takes the replay's
   place in the queue, or, the replay sent to the actor's process already,
   waits for its results (r->run->dup). Before, it was applied again as a
   new call after the replay: a counter counted it twice (t/6159). A replay
   already done here is not found: that call is still applied twice
   (DESIGN 7.4's limits). */
static void
s_merge(nm_t *nm, nm_client_t *c, const exec_spec_t *s)
{
    nm_task_t *t = nm_task_find(nm, &s->task), *r = NULL, *prev = NULL;
    nm_actor_t *a = t && t->kind == T_CALL && t->owner == c && !t->run->idx ? t->actor : NULL;
    if (!a || a->remote || !a->replaying)
        return; /* no re-applied run here: nothing to look for (every call comes here) */
    for (r = a->queue; r && !(r != t && r->run && r->run->replay && util_id_eq(&r->id, &t->id));
         prev = r, r = r->next)
        ;
    if (r) { /* t goes in its place, numbered as it is: not logged again */
        if (!nm_actor_list_unlink(&a->queue, &a->queue_last, t))
            return;
        prev = NULL;
        for (nm_task_t *q = a->queue; q && q != r; q = q->next)
            prev = q;
        t->next = r->next;
        if (prev)
            prev->next = t;
        else
            a->queue = t;
        if (a->queue_last == r)
            a->queue_last = t;
        r->next = NULL;
        if (a->replaying)
            a->replaying--; /* r is not applied */
    } else {
        for (r = a->sent; r && !(r->run && r->run->replay && !r->run->dup &&
                                 util_id_eq(&r->id, &t->id));
             r = r->next)
            ;
        if (!r || !nm_actor_list_unlink(&a->queue, &a->queue_last, t))
            return;
        t->next = NULL;
        r->run->dup = t; /* answered with r's results (exec_node_actor_res.c s_called) */
    }
    t->run->idx = r->run->idx;
    char hex[UTIL_ID_HEX];
    log_info("actor %s (%s): call %llu, re-applied from the log, was sent again by its "
             "caller's node: applied once (%s), answered there", util_id_hex(&a->id, hex),
             a->cls, (unsigned long long) t->run->idx,
             r->run->dup ? "the re-applied run in its process" : "in the queue");
    if (!r->run->dup)
        nm_task_discard(nm, r);
}

void
nm_ractor_taken(nm_t *nm, nm_client_t *c, const exec_spec_t *s, const nm_remote_ext_t *x)
{
    char hex[UTIL_ID_HEX];
    if (s->kind == EXEC_SPEC_CREATE) {
        nm_actor_t *a = s_find(nm, &s->actor);
        if (!a || a->remote || a->owner != c || a->state != A_WAITING)
            return;
        a->restarts = x->restarts;
        if (!(x->flags & NM_EXT_CKPT))
            return;
        nm_obj_t *o = nm_obj_get(nm, &x->ckpt);
        /* (one spilled here is brought back for its load, as any argument) */
        if (!o || (o->state != OBJ_READY && o->state != OBJ_SPILLED)) {
            /* from its constructor, the calls re-applied after the
               checkpoint would meet the wrong state: it dies, saying why */
            char why[UTIL_ERRMSG_MAX + 200];
            snprintf(why, sizeof why, "its checkpoint of call %llu did not come with it from "
                     "its home (%s): it cannot start from the state its later calls need",
                     (unsigned long long) x->idx,
                     !o ? "not sent" : o->state == OBJ_ERROR && o->bytes ? (const char *) o->bytes
                                                                         : "no value");
            log_error("actor %s (%s): %s", util_id_hex(&a->id, hex), a->cls, why);
            s_doom(nm, a, LUX_ENOTFOUND, why);
            return;
        }
        o->owned = true; /* the actor's */
        o->owner = NULL;
        a->ckpt = x->ckpt;
        a->ckpt_idx = a->saved_idx = a->next_idx = x->idx;
        a->has_ckpt = true;
        log_info("actor %s (%s) starts from its checkpoint of call %llu (restart %u)",
                 util_id_hex(&a->id, hex), a->cls, (unsigned long long) x->idx, a->restarts);
        return;
    }
    if (!x->idx) {
        s_merge(nm, c, s);
        return;
    }
    nm_task_t *t = nm_task_find(nm, &s->task);
    if (!t || t->kind != T_CALL || !t->actor || t->run->idx || t->owner != c)
        return;
    t->run->idx = x->idx; /* numbered by the log already: not logged again */
    t->run->replay = (x->flags & NM_EXT_REPLAY) != 0;
    if (t->run->replay) {
        nm->n_submitted--; /* not a caller's call: never finished (its results go), it
                              kept the node from ever looking idle (t/6159) */
        t->actor->replaying++; /* s_merge looks for it while it is not done */
    }
    /* a replayed run is not in nm->tasks (it is freed by nm_task_discard
       when done or dropped, never taken off the map, and nm_actor_close
       frees it as not there): left there, it was freed while listed, and
       the next walk of the tasks read freed memory; the daemon of the
       node that held the actor again died (t/6153) */
    if (t->run->replay) {
        nm_task_t **p = util_idmap_get(nm->tasks, t->id.b);
        if (p && *p == t)
            util_idmap_del(nm->tasks, t->id.b);
    }
    if (t->actor->next_idx < x->idx)
        t->actor->next_idx = x->idx;
}

/* --- the home: placing, and placing again ------------------------------------------------- */

bool
nm_ractor_elsewhere(nm_t *nm, nm_actor_t *a, nm_task_t *t)
{
    char why[600], hex[UTIL_ID_HEX];
    int64_t needs[16];
    if (!nm->ractor || (t->owner && t->owner->peer) || nm_res_needs(nm, t, needs, why, sizeof why))
        return false; /* placed here by another node: made here, or dies here */
    a->remote = a->home = true;
    log_info("actor %s (%s) goes to another node: %s", util_id_hex(&a->id, hex), a->cls, why);
    int rc = nm_task_resolve(nm, t, why, sizeof why);
    if (rc) {
        s_doom(nm, a, rc, why);
        return true;
    }
    if (!nm_remote_ask(nm, t)) {
        snprintf(why, sizeof why, "this node has not its resources and cannot ask the global "
                 "scheduler for another: %s", lux_errmsg());
        s_doom(nm, a, LUX_EIO, why);
    }
    return true;
}

void
nm_ractor_placed(nm_t *nm, nm_actor_t *a, char *text)
{
    nm_task_t *t = a->create;
    char v[512], ep[DB_EP_MAX], why[700], hex[UTIL_ID_HEX];
    char *nl = strchr(text, '\n');
    /* "dead WHY": the scheduler cannot be asked (exec_remote.c s_headless) */
    int status = strncmp(text, "dead ", 5) == 0 ? LUX_EDEAD : LUX_EINVAL;
    if (status == LUX_EDEAD)
        text += 5;
    if (status == LUX_EDEAD || strncmp(text, "infeasible ", 11) == 0 ||
        strncmp(text, "local", 5) == 0) {
        if (nl)
            *nl = '\0';
        const char *msg = status == LUX_EDEAD ? text : text[0] == 'i' ? text + 11 : "";
        if (t)
            t->remote = false;
        if (a->restarts == 0) { /* never made anywhere: it is made and dies here, on record */
            a->remote = false;
            nm_log_actor_created(nm, a);
            snprintf(why, sizeof why, "%s", msg[0] ? msg :
                     "the global scheduler sent it back to this node, which cannot hold it");
        } else {
            snprintf(why, sizeof why, "node %s, which held it, died, and no other node can "
                     "hold it: %s", util_id_hex(&a->rnode, hex), msg[0] ? msg :
                     "only this node is left, and it cannot hold it");
        }
        s_doom(nm, a, status, why);
        return;
    }
    if (!t || !exec_members_get(text, "node", v, sizeof v) || util_id_parse(&a->rnode, v) ||
        !exec_members_get(text, "endpoint", ep, sizeof ep)) {
        s_doom(nm, a, LUX_EPROTO, "the global scheduler's answer was malformed");
        return;
    }
    t->rnode = a->rnode; /* watched: when that node dies, it is placed again */
    snprintf(a->rep, sizeof a->rep, "%s", ep);
    log_info("actor %s (%s) placed on node %s (%s)", util_id_hex(&a->id, hex), a->cls, v, ep);
    nm_remote_ext_t x = {.idx = a->has_ckpt ? a->ckpt_idx : 0, .restarts = a->restarts,
                         .flags = a->has_ckpt ? NM_EXT_CKPT : 0};
    if (a->has_ckpt)
        x.ckpt = a->ckpt;
    if (nm_remote_push_x(nm, t, ep, a->restarts ? &x : NULL)) {
        snprintf(why, sizeof why, "sending its creation to node %s: %s", v, lux_errmsg());
        s_doom(nm, a, LUX_EIO, why);
        return;
    }
    nm_actor_kick(nm, a); /* the calls that waited go after it */
}

/* Reading the log for a restart elsewhere (s_requeue). */
typedef struct {
    nm_t *nm;
    nm_actor_t *a;
    const char *nh;
    nm_task_t *head, *last;   /* the calls to send first, in log order */
    nm_task_t *lost, *lost_last; /* in flight, covered by the checkpoint */
    uint64_t n;
    int rc;
} s_requeue_t;

/* Take the call with ID id off a's queue (NULL: not there). */
static nm_task_t *
s_unqueue(nm_actor_t *a, const util_id_t *id)
{
    nm_task_t *prev = NULL;
    for (nm_task_t *t = a->queue; t; prev = t, t = t->next)
        if (util_id_eq(&t->id, id)) {
            if (prev)
                prev->next = t->next;
            else
                a->queue = t->next;
            if (a->queue_last == t)
                a->queue_last = prev;
            t->next = NULL;
            return t;
        }
    return NULL;
}

static int
s_requeue_cb(void *arg, const db_event_t *e)
{
    s_requeue_t *x = arg;
    nm_actor_t *a = x->a;
    uint64_t idx = (uint64_t) e->idx;
    nm_task_t *t = s_unqueue(a, &e->task); /* one in flight: answered */
    if (idx <= (a->has_ckpt ? a->ckpt_idx : 0)) {
        if (t)
            s_push_back(&x->lost, &x->lost_last, t);
        return 0;
    }
    if (!t) { /* answered before: re-applied, its results dropped */
        exec_spec_t s = {.task = e->task, .parent = e->parent, .job = e->job, .fn = e->name,
                         .fn_len = (uint16_t) e->name_len, .kind = EXEC_SPEC_CALL,
                         .actor = a->id};
        memcpy(s.module, a->module, 16);
        if (!(e->mask & DB_F_BODY) || exec_call_from_body(&s, e->body, e->body_len) ||
            !(t = nm_actor_run_new(x->nm, NULL, &s, false, T_CALL, a))) {
            x->rc = LUX_ECORRUPT;
            return 1;
        }
        t->run->replay = true;
    }
    t->run->idx = idx;
    s_push_back(&x->head, &x->last, t);
    x->n++;
    return 0;
}

/* The log read on this node: the head's (its files are here). */
static int
s_read_here(void *arg, nm_t *nm, nm_actor_t *a, nm_calls_cb *cb, void *cbarg)
{
    (void) arg;
    return nm_log_actor_calls(nm, &a->id, 0, cb, cbarg);
}

/* a, whose node died, is placed again: the calls the log has (read by
   read(arg...), all of them, from the first) after its checkpoint go
   first (those answered re-applied), in the log's order; calls in flight
   that its checkpoint covers fail (applied, their results died with the
   node). 0, or a code with the message when the calls cannot be read (a
   dies then: placed again without them, its state would silently lack
   calls it answered). */
static int
s_requeue(nm_t *nm, nm_actor_t *a, const char *nh, nm_calls_read *read, void *arg)
{
    char hex[UTIL_ID_HEX], why[500];
    s_requeue_t x = {.nm = nm, .a = a, .nh = nh};
    util_id_hex(&a->id, hex);
    int rc = read(arg, nm, a, s_requeue_cb, &x);
    if (!rc && x.rc)
        rc = util_err(x.rc, "a call's record is malformed");
    if (x.last) {
        x.last->next = a->queue;
        if (!a->queue)
            a->queue_last = x.last;
        a->queue = x.head;
    }
    while (x.lost) {
        nm_task_t *t = x.lost;
        x.lost = t->next;
        t->next = NULL;
        snprintf(why, sizeof why, "node %s, which held actor %s, died after applying this "
                 "call (its checkpoint covers it) and before its result came back", nh, hex);
        s_push_back(&a->queue, &a->queue_last, t); /* nm_task_fail takes it off */
        nm_task_fail(nm, t, LUX_EDEAD, why);
    }
    if (!rc)
        nm_log_actor_restarted(nm, a, x.n);
    return rc;
}

/* Place a (its calls requeued) again through the global scheduler. */
static void
s_place_again(nm_t *nm, nm_actor_t *a, const char *nh)
{
    char why[400];
    nm_task_t *t = a->create;
    t->remote = false;
    memset(&t->rnode, 0, sizeof t->rnode);
    if (!nm_remote_ask(nm, t)) {
        snprintf(why, sizeof why, "node %s, which held it, died, and the global scheduler "
                 "cannot be asked for another: %s", nh, lux_errmsg());
        s_doom(nm, a, LUX_EIO, why);
    }
}

/* Requeue a's calls (read) and place it again, or doom it naming why. */
static void
s_requeue_place(nm_t *nm, nm_actor_t *a, const char *nh, nm_calls_read *read, void *arg)
{
    char why[UTIL_ERRMSG_MAX + 200];
    if (s_requeue(nm, a, nh, read, arg)) {
        snprintf(why, sizeof why, "node %s, which held it, died, and its calls cannot be read "
                 "from the log to place it again (restart %u): %s", nh, a->restarts,
                 lux_errmsg());
        s_doom(nm, a, LUX_EIO, why);
        return;
    }
    s_place_again(nm, a, nh);
}

void
nm_ractor_requeue_read(nm_t *nm, nm_actor_t *a, nm_calls_read *read, void *arg)
{
    if (!a->requeue_wait)
        return;
    a->requeue_wait = false;
    a->calls_req = 0;
    if (a->state == A_DEAD || a->doom || !a->create)
        return;
    s_requeue_place(nm, a, a->requeue_nh, read, arg);
}

void
nm_ractor_lost(nm_t *nm, nm_actor_t *a, const util_id_t *node)
{
    char hex[UTIL_ID_HEX], nh[UTIL_ID_HEX], why[400];
    if (a->state == A_DEAD || a->doom || !a->rep[0] || !util_id_eq(&a->rnode, node))
        return; /* moved already, or being placed again */
    util_id_hex(node, nh);
    a->rep[0] = '\0'; /* a->rnode stays, the node it was on, until it has another */
    /* the calls in flight go again, first, in their order */
    for (nm_task_t *t = a->sent; t; t = t->next) {
        t->remote = false;
        t->state = TASK_WAITING;
        memset(&t->rnode, 0, sizeof t->rnode);
        t->rgot = 0;
    }
    if (a->sent_last) {
        a->sent_last->next = a->queue;
        a->queue = a->sent;
        if (!a->queue_last)
            a->queue_last = a->sent_last;
    }
    a->sent = a->sent_last = NULL;
    a->nsent = 0;
    a->sent_bytes = 0;
    if (!a->home) {
        a->lost_ms = util_mono_ms();
        a->asked_ms = 0;
        log_warn("actor %s: node %s, which held it, is dead: asking where it lives now",
                 util_id_hex(&a->id, hex), nh);
        nm_actor_kick(nm, a);
        return;
    }
    nm_task_t *t = a->create;
    if (a->restarts >= a->max_restarts || !t) {
        snprintf(why, sizeof why, "node %s, which held it, died, and it has no restarts left "
                 "(max_restarts %u)", nh, a->max_restarts);
        s_doom(nm, a, LUX_EDEAD, why);
        return;
    }
    a->restarts++;
    log_warn("actor %s (%s): node %s, which held it, is dead: placing it again (restart %u of "
             "%u)", util_id_hex(&a->id, hex), a->cls, nh, a->restarts, a->max_restarts);
    if (nm->ops.ractor_calls) {
        /* not the head: the log's files are there, its calls are asked
           of it (exec_rcalls.c), and it is placed once they come
           (nm_ractor_requeue_read); asked again while unanswered */
        a->requeue_wait = true;
        a->calls_req = 0;
        snprintf(a->requeue_nh, sizeof a->requeue_nh, "%s", nh);
        nm->ops.ractor_calls(nm, a);
        return;
    }
    s_requeue_place(nm, a, nh, s_read_here, NULL);
}

void
nm_ractor_died(nm_t *nm, nm_actor_t *a)
{
    if (!nm->ractor || !a->rep[0])
        return;
    util_buf_t b;
    util_buf_init(&b);
    util_buf_put(&b, a->id.b, 16);
    util_buf_put_str(&b, a->death ? a->death : "", a->death ? strlen(a->death) : 0);
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, b.data, b.len);
    util_buf_free(&b);
    if (nm_peer_send(nm, a->rep, NET_NODE_ACTOR_KILL, &m))
        log_warn("cannot tell %s to let an actor go: %s", a->rep, lux_errmsg());
    a->rep[0] = '\0';
}

/* --- handles: calls, stubs ---------------------------------------------------------------- */

nm_actor_t *
nm_ractor_stub(nm_t *nm, const util_id_t *id)
{
    if (!nm->ractor)
        return NULL;
    nm_actor_t *a = nm_actor_new(nm, id);
    if (!a || !(a->cls = strdup("?"))) {
        if (a)
            util_idmap_del(nm->actors, id->b);
        nm_actor_destroy(&a);
        return NULL;
    }
    a->remote = true;
    a->state = A_ALIVE;
    a->lost_ms = util_mono_ms();
    nm_actor_kick(nm, a); /* asks where it lives */
    return a;
}

void
nm_ractor_forget(nm_t *nm, nm_actor_t *stub, nm_actor_t *a)
{
    /* its calls, sent or not, wait in a's queue in their order */
    for (int k = 0; k < 2; k++)
        for (nm_task_t *t = k ? stub->queue : stub->sent, *next; t; t = next) {
            next = t->next;
            t->actor = a;
            t->remote = false;
            t->state = TASK_WAITING;
            memset(&t->rnode, 0, sizeof t->rnode);
            s_push_back(&a->queue, &a->queue_last, t);
        }
    if (stub->dirty) { /* off the dirty list */
        for (nm_actor_t **p = &nm->dirty_actors; *p; p = &(*p)->next_dirty)
            if (*p == stub) {
                *p = stub->next_dirty;
                break;
            }
    }
    nm_actor_destroy(&stub); /* its entry in nm->actors is a's now */
}

void
nm_ractor_pump(nm_t *nm, nm_actor_t *a)
{
    if (!a->rep[0]) {
        int64_t now = util_mono_ms();
        if (!a->home && now - a->asked_ms >= S_ASK_MS) {
            a->asked_ms = now;
            s_ask(nm, &a->id, "");
        }
        return; /* its calls wait until it has a node */
    }
    while (a->queue && !a->queue->waiting) {
        nm_task_t *t = a->queue;
        a->queue = t->next;
        if (!a->queue)
            a->queue_last = NULL;
        if (t->kind != T_CALL) { /* a checkpoint is asked where it lives (exec_node_actor.c) */
            t->next = NULL;
            nm_task_discard(nm, t);
            continue;
        }
        nm_remote_ext_t x = {.idx = t->run->idx, .flags = t->run->replay ? NM_EXT_REPLAY : 0};
        if (t->run->replay) { /* re-applied there, nothing comes back */
            if (nm_remote_push_x(nm, t, a->rep, &x)) {
                char why[600];
                snprintf(why, sizeof why, "cannot re-apply its call %llu on %s: %s",
                         (unsigned long long) t->run->idx, a->rep, lux_errmsg());
                s_doom(nm, a, LUX_EIO, why);
            }
            t->next = NULL;
            nm_task_discard(nm, t);
            continue;
        }
        t->remote = true;
        t->spilled = true;
        t->state = TASK_RUNNING;
        t->rnode = a->rnode;
        t->rgot = 0;
        s_push_back(&a->sent, &a->sent_last, t);
        a->nsent++;
        t->run->sent_bytes = 0; /* pinned on the node it goes to, not here */
        if (nm_remote_push_x(nm, t, a->rep, t->run->idx ? &x : NULL)) {
            char why[600];
            snprintf(why, sizeof why, "sending it to %s, where its actor lives: %s", a->rep,
                     lux_errmsg());
            t->remote = false;
            nm_task_fail(nm, t, LUX_EIO, why); /* off the actor's lists */
        }
    }
}

void
nm_ractor_lookup(nm_t *nm, const char *name, int64_t deadline_ms)
{
    struct nm_ractor *r = nm->ractor;
    if (!r || !*name)
        return;
    int k = -1;
    for (int i = 0; i < r->nnames; i++)
        if (strcmp(r->names[i].name, name) == 0)
            k = i;
    if (k < 0 && r->nnames < S_NAMES_MAX && (r->names[r->nnames].name = strdup(name)))
        k = r->nnames++;
    if (k >= 0 && r->names[k].deadline_ms < deadline_ms)
        r->names[k].deadline_ms = deadline_ms;
    util_id_t zero = {0};
    s_ask(nm, &zero, name);
}

/* --- the tick ------------------------------------------------------------------------------ */

typedef struct {
    nm_t *nm;
    int64_t now;
} s_tick_t;

static int
s_tick_one(void *arg, const void *key, void *value)
{
    (void) key;
    s_tick_t *k = arg;
    nm_actor_t *a = *(nm_actor_t **) value;
    if (a->home && a->requeue_wait && k->nm->ops.ractor_calls) {
        k->nm->ops.ractor_calls(k->nm, a); /* again, or failed after its bound */
        return 0;
    }
    if (!a->remote || a->home || a->rep[0] || a->state == A_DEAD)
        return 0;
    int64_t lost_ms = k->nm->ractor->lost_ms;
    if (a->lost_ms && k->now - a->lost_ms > lost_ms) {
        char why[300], hex[UTIL_ID_HEX];
        snprintf(why, sizeof why, "no live node of the cluster holds actor %s (the head was "
                 "asked for %lld ms: %d x LUX_NODE_DEAD_MS, its home's longest wait for a "
                 "node, and %d more)", util_id_hex(&a->id, hex), (long long) lost_ms,
                 EXEC_MEMBERS_DEAD_WAIT, (int) (lost_ms - (int64_t) EXEC_MEMBERS_DEAD_WAIT *
                                                              exec_members_dead_ms()));
        s_doom(k->nm, a, LUX_ENOTFOUND, why);
    } else {
        nm_actor_kick(k->nm, a); /* the pump asks again */
    }
    return 0;
}

void
nm_ractor_tick(nm_t *nm)
{
    struct nm_ractor *r = nm->ractor;
    int64_t now = util_mono_ms();
    if (!r || now - r->tick_ms < S_ASK_MS)
        return;
    r->tick_ms = now;
    util_id_t zero = {0};
    for (int i = 0; i < r->nnames;) {
        if (now >= r->names[i].deadline_ms) {
            free(r->names[i].name);
            r->names[i] = r->names[--r->nnames];
            continue;
        }
        s_ask(nm, &zero, r->names[i].name);
        i++;
    }
    s_tick_t k = {nm, now};
    util_idmap_each(nm->actors, s_tick_one, &k);
}

/* --- setup --------------------------------------------------------------------------------- */

nm_ractor_t *
nm_ractor_new(nm_t *nm)
{
    nm_ractor_t *r = calloc(1, sizeof *r);
    if (!r) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    util_buf_init(&r->buf);
    const char *lost = getenv("LUX_TEST_ACTOR_LOST_MS"); /* test hook: t/6152 */
    r->lost_ms = (lost && atoi(lost) > 0 ? atoi(lost) : S_LOST_MS) +
                 (int64_t) EXEC_MEMBERS_DEAD_WAIT * exec_members_dead_ms();
    nm->ops.ractor_placed = nm_ractor_placed;
    nm->ops.ractor_lost = nm_ractor_lost;
    nm->ops.ractor_taken = nm_ractor_taken;
    nm->ops.ractor_tick = nm_ractor_tick;
    nm->ops.ractor_elsewhere = nm_ractor_elsewhere;
    nm->ops.ractor_stub = nm_ractor_stub;
    nm->ops.ractor_forget = nm_ractor_forget;
    nm->ops.ractor_pump = nm_ractor_pump;
    nm->ops.ractor_died = nm_ractor_died;
    nm->ops.ractor_lookup = nm_ractor_lookup;
    int rc = nm_peer_on(nm, NET_NODE_ACTOR_WHERE, s_on_where);
    if (!rc)
        rc = nm_peer_on(nm, NET_NODE_ACTOR_WHERE_REP, s_on_where_rep);
    if (!rc)
        rc = nm_peer_on(nm, NET_NODE_ACTOR_KILL, s_on_kill);
    if (!rc)
        rc = nm_peer_on(nm, NET_NODE_ACTOR_CKPT, s_on_ckpt);
    if (rc)
        nm_ractor_destroy(&r);
    return r;
}

void
nm_ractor_destroy(nm_ractor_t **self_p)
{
    nm_ractor_t *r = *self_p;
    if (!r)
        return;
    db_query_close(&r->q);
    for (int i = 0; i < r->nnames; i++)
        free(r->names[i].name);
    util_buf_free(&r->buf);
    free(r);
    *self_p = NULL;
}

/*  exec_rplace - asking the global scheduler where a task goes, and its
    answers kept (issue 28, doc/DESIGN.md 7.2, doc/protocol.md 17.2).

    The submitting node. A task or actor creation that asked the head
    where it goes (NODE_PLACE, exec_remote.c s_ask) is remembered here by
    task ID until the answer comes (NODE_PLACE_REP). An answer can be lost
    while the head's membership monitor keeps answering (so the watch's
    silence, exec_remote.c s_headless, never ends the wait): an ask
    unanswered for S_PLACE_RESEND_MS (LUX_PLACE_RESEND_MS) is sent again,
    marked "again", and after S_PLACE_TRIES sends the task fails, or the
    actor dies, with LUX_EDEAD naming the head and the count. An answer
    "wait MS" (no alive node has its resources, but nodes that had them
    died lately and may come back: exec_table.c s_no_place) has the task
    asked anew MS later (nm_rplace_wait), until the head places it or
    fails it: the head bounds the wait, by the dead nodes' last beats.

    The head. Its last S_ANSWERS answers are kept by task ID for
    S_ANSWER_KEEP_MS: an ask marked "again" gets the answer given before,
    so a lost answer never places a task twice; an ask without the mark
    (a task placed anew after its node died) is decided anew. Test hook
    LUX_TEST_PLACE_DROP=N1,N2,... (read once): the head drops the first
    Nk answers to the k-th task that asks. Test hook
    LUX_TEST_TABLE_SLOW_MS=MS: the head takes the monitor's answer to its
    table's STATUS no sooner than MS after the ask (nm_rplace_slow).
*/
#include "exec_rplace.h"
#include "exec_node_far.h"
#include "exec_node_graph.h"
#include "exec_node_obj.h"
#include "../db/db_event.h"
#include "../db/db_query.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_PLACE_RESEND_MS 5000 /* a NODE_PLACE unanswered this long is sent again ... */
#define S_PLACE_TRIES 6  /* ... and after this many sends, unanswered, its task fails */
#define S_ANSWERS 128    /* the head: answers to NODE_PLACE kept, to answer a resend alike */
#define S_ANSWER_KEEP_MS 300000 /* ... for this long */
#define S_DEAD_MAX 64    /* nodes known dead, the latest (an older death is in the monitor's table) */
#define S_LOG_EVERY_MS 100 /* the head reads the log's node events at most this often */

struct nm_rplace {
    /* the submitting node: tasks and actor creations asking the global
       scheduler where they go (by task ID: s_asking_t) */
    util_idmap_t *asking;
    util_idmap_t *waits;  /* tasks told to wait for a dead node's return (s_wait_t) */
    int64_t waits_ms;     /* when they were last looked at */
    int place_resend_ms;  /* S_PLACE_RESEND_MS, or LUX_PLACE_RESEND_MS (tests) */
    int64_t resend_ms;    /* when the asks were last looked at */
    /* the head: its last answers by task ID */
    struct {
        util_id_t id;
        int64_t ms;
        char answer[700];
    } answers[S_ANSWERS];
    int answer_next;
    /* nodes this node knows are dead (nm_rplace_dead), oldest first,
       when each death was learned here (util_mono_ms: the head measures
       a dead node's silence from it, exec_table.c), and whether it left
       cleanly (node_left in the log) */
    util_id_t dead[S_DEAD_MAX];
    int64_t dead_at[S_DEAD_MAX];
    bool left[S_DEAD_MAX];
    int ndead;
    /* the head: the log read for node events (nm_rplace_from_log), the
       newest seq read of each shard, when last read */
    db_query_t *q;
    int64_t *log_seq;
    uint32_t nshards;
    int64_t log_ms, complained_ms;
    /* LUX_TEST_PLACE_DROP */
    struct {
        int n[8], count, next, left;
        util_id_t id;     /* the task whose answers are being dropped */
    } drop;
    int slow_ms;          /* test hook LUX_TEST_TABLE_SLOW_MS */
};

typedef struct {
    int64_t since_ms;     /* when the first "wait" came */
    int64_t ask_ms;       /* when to ask again (0: asked, its answer awaited) */
} s_wait_t;

typedef struct {
    int64_t sent_ms;      /* when NODE_PLACE last went */
    int tries;            /* how many times it went */
    bool self;            /* this node is one of the places weighed */
} s_asking_t;

/* The answer for the task id: when its NODE_PLACE is the same ask sent
   again (the line "again": its answer was lost, or late), the one given
   before; else decide's, kept (a task placed anew, its node dead, is
   decided anew). */
void
nm_rplace_answer(nm_t *nm, const util_id_t *id, const char *text, char *answer, size_t n,
                 nm_rplace_decide_fn *decide)
{
    struct nm_rplace *r = nm->rplace;
    if (!r) {
        decide(nm, text, answer, n);
        return;
    }
    int64_t now = util_mono_ms();
    int k = -1;
    for (int i = 0; i < S_ANSWERS && k < 0; i++)
        if (r->answers[i].ms && util_id_eq(&r->answers[i].id, id))
            k = i;
    util_id_t was;
    char hex[UTIL_ID_HEX];
    if (k >= 0 && now - r->answers[k].ms < S_ANSWER_KEEP_MS && strstr(text, "\nagain\n") &&
        (sscanf(r->answers[k].answer, "node %32s", hex) != 1 || util_id_parse(&was, hex) ||
         !nm_rplace_is_dead(nm, &was))) { /* not the same answer when its node died since */
        log_warn("task %s: asked where it goes again (an answer lost?): given the same answer",
                 util_id_hex(id, hex));
        snprintf(answer, n, "%s", r->answers[k].answer);
        return;
    }
    decide(nm, text, answer, n);
    if (k < 0)
        k = r->answer_next++ % S_ANSWERS;
    r->answers[k].id = *id;
    r->answers[k].ms = now;
    snprintf(r->answers[k].answer, sizeof r->answers[k].answer, "%s", answer);
}

/* The NODE_PLACE request for t into text[n] (self: this node is one of
   the places weighed): "from HEX\nneeds RES\n", "self\n", the bytes of
   its arguments held here and the refs of those that are not. */
void
nm_rplace_text(nm_t *nm, nm_task_t *t, bool self, char *text, size_t n)
{
    char hex[UTIL_ID_HEX];
    size_t k = (size_t) snprintf(text, n, "from %s\nneeds CPU=%g%s%s\n%s",
                                 util_id_hex(&nm->node, hex), t->cpus_milli / 1000.0,
                                 t->res ? "," : "", t->res ? t->res : "", self ? "self\n" : "");
    /* the arguments held here, and those that are not (the scheduler
       finds where from the log): locality */
    util_rd_t rd;
    exec_arg_t a;
    uint64_t here = 0;
    util_rd_init(&rd, t->args, t->args_len);
    while (exec_arg_next(&rd, &a))
        if (a.kind == EXEC_ARG_REF) {
            nm_obj_t *o = nm_obj_get(nm, &a.ref);
            char rh[2 * LUX_REF_LEN + 1];
            if (o && o->state == OBJ_READY)
                here += o->size;
            else if (!nm_far_here(nm, &a.ref) && k + 50 < n) {
                util_hex(rh, a.ref.b, LUX_REF_LEN);
                k += (size_t) snprintf(text + k, n - k, "ref %s\n", rh);
            }
        }
    if (here && k < n)
        k += (size_t) snprintf(text + k, n - k, "arg %s %llu\n", hex, (unsigned long long) here);
    /* the deaths it knows of, so that the head knows them too (its table may be older) */
    struct nm_rplace *r = nm->rplace;
    for (int i = 0; r && i < r->ndead && k + UTIL_ID_HEX + 8 < n; i++)
        k += (size_t) snprintf(text + k, n - k, "dead %s\n", util_id_hex(&r->dead[i], hex));
}

/* Node node is dead (left: it left cleanly), learned now: the instant
   is kept, not moved by a later word of the same death. */
static void
s_dead(nm_t *nm, const util_id_t *node, bool left)
{
    struct nm_rplace *r = nm->rplace;
    if (!r || nm_rplace_is_dead(nm, node))
        return;
    char hex[UTIL_ID_HEX];
    log_debug("node %s is dead: never a place for a task from now on", util_id_hex(node, hex));
    if (r->ndead == S_DEAD_MAX) { /* the oldest goes */
        --r->ndead;
        memmove(&r->dead[0], &r->dead[1], (size_t) r->ndead * sizeof r->dead[0]);
        memmove(&r->dead_at[0], &r->dead_at[1], (size_t) r->ndead * sizeof r->dead_at[0]);
        memmove(&r->left[0], &r->left[1], (size_t) r->ndead * sizeof r->left[0]);
    }
    r->dead_at[r->ndead] = util_mono_ms();
    r->left[r->ndead] = left;
    r->dead[r->ndead++] = *node;
}

void
nm_rplace_dead(nm_t *nm, const util_id_t *node)
{
    s_dead(nm, node, false);
}

bool
nm_rplace_is_dead(nm_t *nm, const util_id_t *node)
{
    return nm_rplace_dead_since(nm, node, NULL, NULL);
}

bool
nm_rplace_dead_since(nm_t *nm, const util_id_t *node, int64_t *since_ms, bool *left)
{
    struct nm_rplace *r = nm->rplace;
    for (int i = 0; r && i < r->ndead; i++)
        if (util_id_eq(&r->dead[i], node)) {
            if (since_ms)
                *since_ms = r->dead_at[i];
            if (left)
                *left = r->left[i];
            return true;
        }
    return false;
}

void
nm_rplace_alive(nm_t *nm, const util_id_t *node)
{
    struct nm_rplace *r = nm->rplace;
    for (int i = 0; r && i < r->ndead; i++)
        if (util_id_eq(&r->dead[i], node)) {
            char hex[UTIL_ID_HEX];
            log_info("node %s joined again: a place for tasks again", util_id_hex(node, hex));
            size_t after = (size_t) (r->ndead - i - 1);
            memmove(&r->dead[i], &r->dead[i + 1], after * sizeof r->dead[0]);
            memmove(&r->dead_at[i], &r->dead_at[i + 1], after * sizeof r->dead_at[0]);
            memmove(&r->left[i], &r->left[i + 1], after * sizeof r->left[0]);
            r->ndead--;
            return;
        }
}

/* The node events (joined, died, left) of the log not read yet, each
   node's in order (they are all on one shard): node_died and node_left
   make their node dead here, and a node_joined after one of them alive
   again (not a node_joined alone: a death the monitor's table told before
   its event reached the log stays). */
static int
s_from_log(nm_t *nm)
{
    struct nm_rplace *r = nm->rplace;
    if (!r->q && !(r->q = db_query_open(&nm->cluster)))
        return util_err_ctx(LUX_EIO, "reading the log for deaths of nodes");
    uint32_t ns = db_query_shards(r->q);
    if (ns != r->nshards) {
        int64_t *v = calloc(2 * (size_t) (ns ? ns : 1), sizeof *v);
        if (!v)
            return util_err(LUX_ENOMEM, "out of memory");
        free(r->log_seq);
        r->log_seq = v; /* [0, ns): read before this read; [ns, 2 ns): read by it */
        r->nshards = ns;
    }
    sqlite3_stmt *st;
    /* the kinds by their codes in the log's format (db_event.h) */
    _Static_assert(DB_K_task_submitted == 4 && DB_K_actor_checkpoint == 13, "the rare range");
    _Static_assert(DB_K_node_joined == 16 && DB_K_node_died == 17 && DB_K_node_left == 24,
                   "node events");
    int rc = db_query_prepare(r->q,
                              "SELECT shard, seq, node, kind FROM event "
                              "WHERE (kind < 4 OR kind > 13) AND kind IN (16, 17, 24) "
                              "ORDER BY shard, node, seq", &st, NULL);
    if (rc) {
        db_query_close(&r->q); /* the tails may have changed: open again next time */
        return rc;
    }
    int64_t *before = r->log_seq, *now = r->log_seq + ns;
    memcpy(now, before, ns * sizeof *now);
    util_id_t prev = {0};
    bool died = false; /* prev has a death in the log before this row */
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t shard = sqlite3_column_int64(st, 0), seq = sqlite3_column_int64(st, 1);
        const void *node = sqlite3_column_blob(st, 2);
        int kind = sqlite3_column_int(st, 3);
        if (shard < 0 || shard >= (int64_t) ns || !node || sqlite3_column_bytes(st, 2) != 16)
            continue;
        util_id_t id;
        memcpy(id.b, node, 16);
        if (!util_id_eq(&id, &prev))
            died = false;
        prev = id;
        if (seq > now[shard])
            now[shard] = seq;
        if (seq > before[shard]) {
            if (kind != DB_K_node_joined)
                s_dead(nm, &id, kind == DB_K_node_left);
            else if (died)
                nm_rplace_alive(nm, &id);
        }
        died = kind != DB_K_node_joined;
    }
    if (step != SQLITE_DONE)
        rc = util_err(LUX_ESQL, "reading the log for deaths of nodes: %s",
                      sqlite3_errmsg(db_query_db(r->q)));
    sqlite3_finalize(st);
    if (rc)
        db_query_close(&r->q);
    else
        memcpy(before, now, ns * sizeof *now);
    return rc;
}

void
nm_rplace_from_log(nm_t *nm)
{
    struct nm_rplace *r = nm->rplace;
    int64_t now = util_mono_ms();
    if (!r || now - r->log_ms < S_LOG_EVERY_MS)
        return;
    r->log_ms = now;
    if (s_from_log(nm) && now - r->complained_ms >= 10000) {
        r->complained_ms = now;
        log_warn("the global scheduler cannot read the log's node events (deaths are known "
                 "from the monitor's table and the asking nodes only): %s", lux_errmsg());
    }
}

/* Send t's NODE_PLACE to the head at head_ep (again: the same ask sent again, the
   line "again"). 0 or a code with the message. */
int
nm_rplace_send(nm_t *nm, nm_task_t *t, bool self, bool again, const char *head_ep)
{
    char text[4096];
    nm_rplace_text(nm, t, self, text, sizeof text - 8);
    if (again)
        strcat(text, "again\n");
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, t->id.b, 16);
    zmsg_addstr(m, text);
    return nm_peer_send(nm, head_ep, NET_NODE_PLACE, &m);
}

/* Whether t still waits for the global scheduler's answer. */
static bool
s_placing(const nm_task_t *t)
{
    return t && t->remote && util_id_is_zero(&t->rnode) &&
           (!t->actor || t->kind == T_CREATE);
}

typedef struct {
    util_id_t *v;
    size_t n, cap;
    int64_t now, wait_ms;
} s_due_t;

static int
s_collect_due(void *arg, const void *key, void *value)
{
    s_due_t *d = arg;
    const s_asking_t *q = value;
    if (d->now - q->sent_ms < d->wait_ms || d->n == d->cap)
        return 0;
    memcpy(d->v[d->n++].b, key, 16);
    return 0;
}

/* Asks of the global scheduler unanswered for r->place_resend_ms are sent
   again (the head answers a repeated ask as it did the first time, so a
   lost answer does not place a task twice); after S_PLACE_TRIES sends,
   unanswered while the head's monitor answers (a head dead or cut off is
   exec_remote.c's s_headless's), the task fails, or the actor dies, naming the head. */
void
nm_rplace_wait(nm_t *nm, nm_task_t *t, int ms, const char *reason)
{
    struct nm_rplace *r = nm->rplace;
    int fresh = 0;
    s_wait_t *w = r ? util_idmap_put(r->waits, t->id.b, &fresh) : NULL;
    char hex[UTIL_ID_HEX];
    if (!w) { /* out of memory: a failure now rather than a wait for ever */
        t->remote = false;
        nm_task_fail(nm, t, LUX_ENOMEM, reason);
        return;
    }
    int64_t now = util_mono_ms();
    if (fresh) {
        w->since_ms = now;
        log_warn("task %s waits to be placed: %s", util_id_hex(&t->id, hex), reason);
    }
    w->ask_ms = now + (ms < 100 ? 100 : ms > 5000 ? 5000 : ms);
}

typedef struct {
    util_id_t *v;
    size_t n, cap;
} s_ids_t;

static int
s_collect_wait(void *arg, const void *key, void *value)
{
    s_ids_t *d = arg;
    (void) value;
    if (d->n < d->cap)
        memcpy(d->v[d->n++].b, key, 16);
    return 0;
}

static bool s_placing(const nm_task_t *t);

/* Tasks told to wait, asked anew when due (ask); those placed or gone
   since are forgotten. */
static void
s_waits_tick(nm_t *nm, int64_t now, nm_rplace_ask_fn *ask)
{
    struct nm_rplace *r = nm->rplace;
    util_id_t ids[64];
    s_ids_t d = {.v = ids, .cap = 64};
    util_idmap_each(r->waits, s_collect_wait, &d);
    for (size_t i = 0; i < d.n; i++) {
        nm_task_t *t = nm_task_find(nm, &ids[i]);
        s_wait_t *w = util_idmap_get(r->waits, ids[i].b);
        if (!w || !s_placing(t)) {
            util_idmap_del(r->waits, ids[i].b);
            continue;
        }
        if (!w->ask_ms || now < w->ask_ms)
            continue;
        w->ask_ms = 0; /* asked: its answer sets the next (nm_rplace_wait) */
        /* not weighing this node: a task waits only when no alive node
           has its resources, this one included */
        if (!ask(nm, t, false)) {
            char hex[UTIL_ID_HEX];
            log_warn("task %s: cannot ask the global scheduler again (%s): trying again",
                     util_id_hex(&t->id, hex), lux_errmsg());
            if ((w = util_idmap_get(r->waits, ids[i].b)))
                w->ask_ms = now + 500;
        }
    }
}

void
nm_rplace_tick(nm_t *nm, const char *head_ep, bool silent, nm_rplace_ask_fn *ask)
{
    struct nm_rplace *r = nm->rplace;
    int64_t now = util_mono_ms();
    if (r && r->waits && util_idmap_size(r->waits) && now - r->waits_ms >= 100) {
        r->waits_ms = now;
        s_waits_tick(nm, now, ask);
    }
    if (!r || !r->asking || !util_idmap_size(r->asking) || now - r->resend_ms < 200)
        return;
    r->resend_ms = now;
    util_id_t due[64];
    s_due_t d = {.v = due, .cap = 64, .now = now, .wait_ms = r->place_resend_ms};
    util_idmap_each(r->asking, s_collect_due, &d);
    for (size_t i = 0; i < d.n; i++) {
        nm_task_t *t = nm_task_find(nm, &due[i]);
        s_asking_t *q = util_idmap_get(r->asking, due[i].b);
        char hex[UTIL_ID_HEX], why[700];
        if (!q || !s_placing(t)) { /* answered, or gone */
            util_idmap_del(r->asking, due[i].b);
            continue;
        }
        util_id_hex(&t->id, hex);
        if (q->tries >= S_PLACE_TRIES && silent) {
            q->sent_ms = now; /* the monitor is silent too: exec_remote.c's s_headless ends it */
            continue;
        }
        if (q->tries < S_PLACE_TRIES) {
            q->tries++;
            q->sent_ms = now;
            log_warn("task %s: the global scheduler (%s) has not answered where it goes in "
                     "%d ms: asking again (%d of %d)", hex, head_ep, r->place_resend_ms,
                     q->tries, S_PLACE_TRIES);
            if (nm_rplace_send(nm, t, q->self, true, head_ep))
                log_warn("task %s: cannot ask the global scheduler again: %s", hex,
                         lux_errmsg());
            continue;
        }
        snprintf(why, sizeof why, "the global scheduler (the head's node manager at %s) did "
                 "not answer where it can run: asked %d times over %lld s (its answers lost, "
                 "or the head's node manager stuck, while its membership monitor answers)",
                 head_ep, q->tries, (long long) q->tries * r->place_resend_ms / 1000);
        util_idmap_del(r->asking, due[i].b);
        if (t->actor) { /* dies with the reason (exec_ractor.c) */
            char text[720];
            snprintf(text, sizeof text, "dead %s\n", why);
            nm->ops.ractor_placed(nm, t->actor, text);
            continue;
        }
        t->remote = false; /* its failure is this node's event */
        nm_task_fail(nm, t, LUX_EDEAD, why);
    }
}

void
nm_rplace_asked(nm_t *nm, nm_task_t *t, bool self)
{
    struct nm_rplace *r = nm->rplace;
    int fresh = 0;
    s_asking_t *q = r ? util_idmap_put(r->asking, t->id.b, &fresh) : NULL;
    if (q)
        *q = (s_asking_t) {.sent_ms = util_mono_ms(), .tries = 1, .self = self};
}

void
nm_rplace_answered(nm_t *nm, const util_id_t *id)
{
    if (nm->rplace)
        util_idmap_del(nm->rplace->asking, id->b);
}

bool
nm_rplace_drop(nm_t *nm, const util_id_t *id)
{
    struct nm_rplace *r = nm->rplace;
    if (!r || !r->drop.count)
        return false;
    if (!util_id_eq(id, &r->drop.id) && r->drop.next < r->drop.count) {
        r->drop.id = *id;
        r->drop.left = r->drop.n[r->drop.next++];
    }
    if (!util_id_eq(id, &r->drop.id) || r->drop.left <= 0)
        return false;
    char hex[UTIL_ID_HEX];
    log_warn("test hook LUX_TEST_PLACE_DROP: the answer to NODE_PLACE of task %s dropped (%d "
             "more of it to drop)", util_id_hex(id, hex), --r->drop.left);
    return true;
}

bool
nm_rplace_slow(nm_t *nm, int64_t asked_ms, int64_t now, int wait_ms)
{
    int slow = nm->rplace->slow_ms;
    if (!slow || now - asked_ms >= slow)
        return false;
    if (wait_ms > 0)
        zclock_sleep((int) (asked_ms + slow - now < wait_ms ? asked_ms + slow - now : wait_ms));
    return util_mono_ms() - asked_ms < slow;
}

nm_rplace_t *
nm_rplace_new(nm_t *nm)
{
    nm_rplace_t *r = calloc(1, sizeof *r);
    if (!r || !(r->asking = util_idmap_new(sizeof(s_asking_t))) ||
        !(r->waits = util_idmap_new(sizeof(s_wait_t)))) {
        if (r)
            util_idmap_destroy(&r->asking);
        free(r);
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    const char *resend = getenv("LUX_PLACE_RESEND_MS");
    r->place_resend_ms = resend && atoi(resend) > 0 ? atoi(resend) : S_PLACE_RESEND_MS;
    const char *slow = getenv("LUX_TEST_TABLE_SLOW_MS");
    r->slow_ms = slow && atoi(slow) > 0 ? atoi(slow) : 0;
    const char *drop = getenv("LUX_TEST_PLACE_DROP");
    for (const char *p = drop; p && *p && nm_peer_is_head(nm) && r->drop.count < 8;) {
        r->drop.n[r->drop.count++] = atoi(p);
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return r;
}

void
nm_rplace_destroy(nm_rplace_t **self_p)
{
    nm_rplace_t *r = *self_p;
    if (!r)
        return;
    util_idmap_destroy(&r->asking);
    util_idmap_destroy(&r->waits);
    db_query_close(&r->q);
    free(r->log_seq);
    free(r);
    *self_p = NULL;
}

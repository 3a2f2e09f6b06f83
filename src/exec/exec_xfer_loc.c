/*  exec_xfer_loc - the head's locator (issue 28, doc/DESIGN.md 7.3):
    where an object lives, read from the log, for another node's
    NODE_LOCATE, for the head's own pulls (exec_xfer.c) and for the global
    scheduler's locality (nm_xfer_where); and the head making again an
    object that no live node holds (s_make). The messages are described
    in exec_xfer.c's header and doc/protocol.md 17.

    What the answer says when nobody holds the object:
      - the log records its making (task_finished, object_put or
        object_copied), or the asker's sources all said they do not hold
        it (XFER_LOCATE_STALE): the head makes it again from its lineage
        ("being made", XFER_MAKING) or says why it cannot (a put);
      - nothing is listed yet and the asker has waited its locate_ms
        (XFER_LOCATE_UNSEEN): the head makes it again if the log has any
        record of it, lists who holds it if its event has landed since, and
        says XFER_UNRECORDED when the log has no event of it at all: the
        event of a fresh put waits in its node's log queue until its bytes
        are written to blobs/ (exec_node_blob.c; 2 s for a first put of
        64 MiB at load 27), and a task's events may be on their way. Such
        an object is waited for (LUX_XFER_UNRECORDED_MS), not failed:
        before, the head took "not in the log after 2 s" for lost, tried
        to rebuild the put, and failed the task that needed it with "was
        never created" or, when the event landed between the asks, "made
        by lux_put and then freed" (locality_placement, 4 runs of 5 at
        load 23-31, stop 43; t/6130).
*/
#include "exec_xfer_loc.h"
#include "exec_xfer_who.h"
#include "exec_node_graph.h"
#include "exec_node_log.h"
#include "exec_node_obj.h"
#include "exec_spill.h"
#include "../db/db_event.h"
#include "../util/util_err.h"
#include "../util/util_log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* the kinds by their codes in the log's format (db_event.h) */
_Static_assert(DB_K_task_submitted == 4 && DB_K_task_finished == 5 && DB_K_object_put == 8 &&
                   DB_K_object_lost == 9 && DB_K_object_copied == 25,
               "object events");
_Static_assert(DB_K_node_joined == 16 && DB_K_node_died == 17 && DB_K_node_left == 24,
               "node events");
/* The node events by the event_rare index, its condition spelled out,
   node_joined's in a subquery of their own (LIMIT -1: not flattened
   into the join, which put the union back): without, SQLite scanned the
   whole log for node_joined as the outer loop (one shard), or made a
   copy of every event of the shards' union to join (more), for every
   object located (1.1 s of the head's loop on 2 million tasks,
   doc/benchmarks.md stop 46; t/6148) */
static const char s_locate_sql[] =
    "SELECT e.kind, e.node, e.fp, n.name, n.idx, "
    "       CASE WHEN e.kind = 5 AND e.idx IS NOT NULL THEN e.idx ELSE "
    "       (SELECT s.idx FROM event s WHERE s.shard = e.shard AND s.task = e.task AND s.kind = 4) END, "
    "       e.size "
    "FROM event e JOIN (SELECT node, name, idx FROM event WHERE kind = 16 "
    "                   AND (kind < 4 OR kind > 13) LIMIT -1) n ON n.node = e.node "
    "WHERE e.task = ?1 AND (e.kind = 5 OR (e.kind IN (8, 25) AND e.idx = ?2)) AND n.idx > 0 "
    "  AND NOT EXISTS (SELECT 1 FROM event d WHERE d.kind IN (17, 24) AND (d.kind < 4 OR d.kind > 13)"
    "                  AND d.node = e.node) "
    "  AND NOT EXISTS (SELECT 1 FROM event l WHERE l.shard = e.shard AND l.task = e.task "
    "                  AND l.kind = 9 AND l.idx = ?2 AND l.node = e.node AND l.seq > e.seq) "
    "ORDER BY e.kind = 25, e.seq";

/* Whether the log records the making of p's object (its task finished,
   or it was put or copied), whoever holds it now. */
static const char s_made_sql[] =
    "SELECT 1 FROM event WHERE task = ?1 AND (kind = 5 OR (kind IN (8, 25) AND idx = ?2)) LIMIT 1";

/* Whether the log has any event of the object's task (or put) at all. */
static const char s_recorded_sql[] = "SELECT 1 FROM event WHERE task = ?1 LIMIT 1";

const char *
nm_xfer_loc_sql(int i)
{
    static const char *const all[] = {s_locate_sql, s_made_sql, s_recorded_sql};
    return i >= 0 && i < (int) (sizeof all / sizeof *all) ? all[i] : NULL;
}

/* The log, opened once (and again after an error: the tails may have
   moved). NULL with the message. */
static db_query_t *
s_query(nm_t *nm)
{
    struct nm_xfer *x = nm->xfer;
    if (!x->q && !(x->q = db_query_open(&nm->cluster)))
        util_err_ctx(LUX_EIO, "reading the log for where objects live");
    return x->q;
}

/* The live holders the log lists for id, into *l. 0 or a code with the
   message. */
static int
s_holders(nm_t *nm, const lux_ref_t *id, const util_id_t *task, xfer_loc_t *l)
{
    struct nm_xfer *x = nm->xfer;
    sqlite3_stmt *st;
    int rc = db_query_prepare(x->q, s_locate_sql, &st, NULL);
    if (rc)
        return rc; /* the caller closes the query: the tails may have changed */
    sqlite3_bind_blob(st, 1, task->b, 16, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, exec_ref_idx(id));
    l->nsrc = 0;
    l->fpkind = FP_NONE;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && l->nsrc < XFER_SRC_MAX) {
        int kind = sqlite3_column_int(st, 0);
        const void *node = sqlite3_column_blob(st, 1), *fp = sqlite3_column_blob(st, 2);
        const char *addr = (const char *) sqlite3_column_text(st, 3);
        int port = sqlite3_column_int(st, 4), nret = sqlite3_column_int(st, 5);
        if (!node || sqlite3_column_bytes(st, 1) != 16 || !addr || port <= 0)
            continue;
        if (kind == 5 && (uint32_t) nret <= exec_ref_idx(id))
            continue; /* a return its task does not have */
        if (fp && sqlite3_column_bytes(st, 2) == 16 && l->fpkind != FP_EXACT &&
            (kind != 5 || nret == 1)) {
            memcpy(l->log_fp, fp, 16);
            l->fpkind = kind == 5 ? FP_OF_ONE : FP_EXACT;
        }
        if (kind != 5 || nret == 1)
            l->size = (uint64_t) sqlite3_column_int64(st, 6);
        if (memcmp(node, nm->node.b, 16) == 0 && !l->self)
            continue; /* this node: it is not here (or it would not be pulled) */
        bool seen = false;
        for (int i = 0; i < l->nsrc; i++)
            seen |= memcmp(l->src[i].node.b, node, 16) == 0;
        if (seen)
            continue;
        memcpy(l->src[l->nsrc].node.b, node, 16);
        snprintf(l->src[l->nsrc].ep, sizeof l->src[l->nsrc].ep, "tcp://%s:%d", addr, port);
        l->nsrc++;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = util_err(LUX_ESQL, "reading where objects live: %s",
                      sqlite3_errmsg(db_query_db(x->q)));
    sqlite3_finalize(st);
    return rc;
}

int
nm_xfer_locate(nm_t *nm, const lux_ref_t *id, xfer_loc_t *l)
{
    struct nm_xfer *x = nm->xfer;
    if (!s_query(nm))
        return LUX_EIO;
    util_id_t task;
    exec_ref_task(id, &task);
    int rc = s_holders(nm, id, &task, l);
    sqlite3_stmt *st;
    l->made = false;
    if (!rc && !l->nsrc && l->asked) /* test hook LUX_TEST_LOCATE_GATE: the race, held open */
        exec_test_gate(EXEC_GATE_LOCATE);
    if (!rc && !l->nsrc && !(rc = db_query_prepare(x->q, s_made_sql, &st, NULL))) {
        sqlite3_bind_blob(st, 1, task.b, 16, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, exec_ref_idx(id));
        int step = sqlite3_step(st);
        l->made = step == SQLITE_ROW;
        if (step != SQLITE_ROW && step != SQLITE_DONE)
            rc = util_err(LUX_ESQL, "reading whether an object was made: %s",
                          sqlite3_errmsg(db_query_db(x->q)));
        sqlite3_finalize(st);
        /* the making seen by this second query may have been committed
           after the first one read: the holders are read again, now that
           they are in the log (else a put whose event landed between the
           two was "made, held by nobody" and made again: a put cannot
           be, and its task failed "made by lux_put and then freed",
           locality_placement at load 25; t/6133) */
        if (!rc && l->made)
            rc = s_holders(nm, id, &task, l);
    }
    if (rc) {
        db_query_close(&x->q);
        return rc;
    }
    return l->nsrc ? 0 : LUX_ENOTFOUND;
}

bool
nm_xfer_recorded(nm_t *nm, const lux_ref_t *id)
{
    struct nm_xfer *x = nm->xfer;
    sqlite3_stmt *st;
    if (!s_query(nm) || db_query_prepare(x->q, s_recorded_sql, &st, NULL)) {
        db_query_close(&x->q);
        return true;
    }
    util_id_t task;
    exec_ref_task(id, &task);
    sqlite3_bind_blob(st, 1, task.b, 16, SQLITE_STATIC);
    int step = sqlite3_step(st);
    sqlite3_finalize(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        db_query_close(&x->q);
    return step != SQLITE_DONE;
}

/* The head's node, asked for an object that no live node holds (or whose
   listed holders all said they do not): have it here again. 0 when it is
   here (*here) or on its way (rebuilt from its lineage: nm_rebuild, its
   outputs kept here, unowned and evictable, for the pullers to come: a
   task rebuilt for nobody would drop them at once); else nm_rebuild's
   code and message (a put, which has no lineage; a rebuild that failed,
   naming the root cause). */
static int
s_make(nm_t *nm, const lux_ref_t *id, bool *here)
{
    nm_obj_t *o = nm_obj_get(nm, id);
    *here = o && (o->state == OBJ_READY || o->state == OBJ_SPILLED);
    if (*here)
        return 0;
    int rc = nm_rebuild(nm, id);
    if (rc)
        return rc;
    util_id_t tid;
    exec_ref_task(id, &tid);
    nm_task_t *t = nm_task_find(nm, &tid);
    if (t)
        t->keep_outputs = true;
    return 0;
}

/* NODE_LOCATE's answer for id, into *l, rc and *making (XFER_*), with
   why[n] the message of a code other than LUX_ENOTFOUND. */
static int
s_answer(nm_t *nm, const lux_ref_t *id, uint8_t flags, xfer_loc_t *l, uint8_t *making,
         char *why, size_t n)
{
    int rc = nm_xfer_locate(nm, id, l);
    bool stale = flags & XFER_LOCATE_STALE, unseen = flags & XFER_LOCATE_UNSEEN;
    *making = 0;
    /* the log has no event of it, and none will come: nobody it knows
       made it, or its maker has ended (exec_xfer_who.c); said at once,
       not after LUX_XFER_UNRECORDED_MS (issue 28; t/6139) */
    if (rc == LUX_ENOTFOUND && !l->made && !nm_xfer_recorded(nm, id) &&
        nm_xfer_madeup(nm, id, why, n)) {
        *making = XFER_MADEUP;
        return LUX_ENOTFOUND;
    }
    /* its listed holders said they do not hold it; or the asker found
       nobody holding it for longer than an event takes to reach the log;
       or the log records it made and held by no live node now, so that no
       event of it is on its way (asking again would only wait): made here
       again, from its lineage */
    if (!((rc == 0 && stale) || (rc == LUX_ENOTFOUND && (stale || unseen || l->made))))
        return rc;
    bool here = false;
    int mrc = s_make(nm, id, &here);
    if (mrc == LUX_ENOTFOUND && !nm_log_was_put(nm, id) && !nm_log_lineage_missing(nm, id))
        mrc = s_make(nm, id, &here); /* its lineage landed since the first read (seed 9) */
    if (mrc == LUX_ENOTFOUND) {
        /* nothing to make it from: its event may have landed since (then
           its holders are listed); or the log has none of it yet (a put's
           event waits for its bytes to be recorded), or records it made
           but not its lineage (its task finished on the node that ran it
           for another, whose task_submitted, and its record of the copy
           sent back to it, are on their way: t/6091 --harsh, 50-390 ms
           after the making, and the asker failed "was never created"):
           waited for, as not recorded yet */
        snprintf(why, n, "%s", lux_errmsg());
        xfer_loc_t again = {.self = l->self, .asked = l->asked};
        int arc = nm_xfer_locate(nm, id, &again);
        if (arc == 0) {
            *l = again;
            return 0;
        }
        if (arc == LUX_ENOTFOUND &&
            ((!l->made && !again.made && !nm_xfer_recorded(nm, id)) ||
             nm_log_lineage_missing(nm, id))) {
            *making = XFER_UNRECORDED;
            return LUX_ENOTFOUND;
        }
        return mrc;
    }
    if (mrc) {
        snprintf(why, n, "%s", lux_errmsg());
        return mrc;
    }
    if (here) { /* the head's own copy, whatever the log listed */
        l->nsrc = 1;
        l->src[0].node = nm->node;
        nm_peer_head_ep(nm, l->src[0].ep, sizeof l->src[0].ep);
        return 0;
    }
    *making = XFER_MAKING;
    return LUX_ENOTFOUND;
}

/* Test hook LUX_TEST_PULL_REMAKE=FILE: the object a NODE_LOCATE asks for,
   a task's output READY here and unpinned, is evicted as to make room and
   made again from its lineage (nm_rebuild) before the ask is answered,
   once, when FILE exists (it is removed; t/6162). While the log still
   lists the head (its object_lost waiting in a busy node's log queue:
   t/6091 seed 93, load 20), the answer lists the head, and the OPEN that
   follows finds the object pending, its task running again. */
static void
s_test_remake(nm_t *nm, const lux_ref_t *ref)
{
    const char *f = nm->xfer->remake_file;
    nm_obj_t *o = nm_obj_get(nm, ref);
    char hex[2 * LUX_REF_LEN + 1];
    if (!o || o->is_put || o->state != OBJ_READY || o->pins || access(f, F_OK) != 0 ||
        unlink(f) != 0)
        return;
    if (!nm_obj_evict(nm, o)) {
        log_warn("object %s: not evicted (LUX_TEST_PULL_REMAKE)", xfer_hex(ref, hex));
        return;
    }
    int rc = nm_rebuild(nm, ref);
    log_warn("object %s: evicted as an ask of where it lives came, and made again: %s "
             "(LUX_TEST_PULL_REMAKE)", xfer_hex(ref, hex), rc ? lux_errmsg() : "its task runs");
}

/* Test hook LUX_TEST_LOCATE_EVICT=FILE: while FILE exists, the object a
   NODE_LOCATE was just answered with the head's own copy first is evicted
   at once, as to make room (a store under pressure, at the worst moment),
   and a line is added to FILE: "evicted", or "not evicted" (held for the
   asker, or pinned by a reader) (t/6163). */
static void
s_test_evict(nm_t *nm, const lux_ref_t *id)
{
    const char *f = nm->xfer->evict_file;
    FILE *fp = access(f, F_OK) == 0 ? fopen(f, "a") : NULL;
    if (!fp)
        return;
    nm_obj_t *o = nm_obj_get(nm, id);
    fprintf(fp, "%s\n", o && nm_obj_evict(nm, o) ? "evicted" : "not evicted");
    fclose(fp);
}

void
nm_xfer_on_locate(nm_t *nm, nm_peer_msg_t *m)
{
    util_rd_t r;
    if (!nm_peer_body(nm, m, &r))
        return;
    uint64_t req = util_rd_u64(&r);
    const uint8_t *id = util_rd_take(&r, LUX_REF_LEN);
    uint8_t flags = util_rd_left(&r) > 0 ? util_rd_u8(&r) : 0; /* absent from older nodes */
    if (r.bad || !id) {
        nm_complain(nm, "malformed NODE_LOCATE");
        return;
    }
    /* another node asks: the head's own copy is a source too */
    xfer_loc_t l = {.self = true, .asked = true};
    lux_ref_t ref;
    memcpy(ref.b, id, LUX_REF_LEN);
    uint8_t making = 0;
    char why[UTIL_ERRMSG_MAX] = "";
    if (nm->xfer->remake_file && nm_peer_is_head(nm))
        s_test_remake(nm, &ref);
    int rc = nm_peer_is_head(nm)
                 ? s_answer(nm, &ref, flags, &l, &making, why, sizeof why)
                 : util_err(LUX_EINVAL, "only the head's node locates objects");
    if (rc == 0 && l.nsrc > 0 && memcmp(l.src[0].node.b, nm->node.b, 16) == 0) {
        /* the asker will OPEN the head's copy first: held for it until
           then (or LUX_XFER_TIMEOUT_MS). Before, a copy made again for a
           puller could be evicted between this answer and the OPEN, each
           time, and the puller's 8 rounds were spent (t/6163) */
        nm_xfer_src_hold(nm, &ref);
        if (nm->xfer->evict_file)
            s_test_evict(nm, &ref);
    }
    util_buf_t *b = &nm->xfer->buf;
    b->len = 0;
    util_buf_put_u64(b, req);
    util_buf_put_u32(b, (uint32_t) rc);
    util_buf_put(b, id, LUX_REF_LEN);
    util_buf_put_u8(b, (uint8_t) l.fpkind);
    util_buf_put(b, l.log_fp, 16);
    util_buf_put_u8(b, (uint8_t) (rc ? 0 : l.nsrc));
    for (int i = 0; !rc && i < l.nsrc; i++) {
        util_buf_put(b, l.src[i].node.b, 16);
        util_buf_put_str(b, l.src[i].ep, strlen(l.src[i].ep));
    }
    if (rc && rc != LUX_ENOTFOUND)
        util_buf_put_str(b, why[0] ? why : lux_errmsg(), strlen(why[0] ? why : lux_errmsg()));
    if (rc == LUX_ENOTFOUND) {
        /* being made here (ask again), not in the log yet (ask again),
           never to be (why), or why it cannot be made */
        bool said = !making || making == XFER_MADEUP;
        util_buf_put_u8(b, making);
        util_buf_put_str(b, said ? why : "", said ? strlen(why) : 0);
    }
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, b->data, b->len);
    nm_peer_reply(nm, m, NET_NODE_LOCATE_REP, &out);
}

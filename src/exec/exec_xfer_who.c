/*  exec_xfer_who - who made an object the log has no event of, as far as
    the log says (issue 28; doc/DESIGN.md 7.3; lux(3)): the head's answer
    to "is this ref on its way, or made up?".

    An object's ID is its making task's ID and the return index; a put's
    is an ID its driver or task drew for it, index 0. Either ID is a child
    ID (util_id.h): its first 8 bytes are a hash of the job and the
    creator (the driver's root, or the task that made it), its last 8 the
    creator's counter. So the first 8 bytes name the creator, though not
    in a way that can be undone; the log is asked who has that scope:
      1. another child of the same creator (a task it submitted, an actor
         it made or called, whose event holds job and parent; or a put,
         whose event holds the job): the event_task index, a range;
      2. else a driver: each job_started's job gives its driver's root;
      3. else a task: every task_submitted, actor_created and actor_call
         in the log, hashed (a scan of those events: only for a ref whose
         creator has no child in the log and is no driver; the last 16
         found are kept).
    Then whether that creator has ended: a driver's job_finished; a
    task's last end (task_finished, task_failed, task_cancelled) after its
    last task_retried. Every event a node logs waits behind a held put's
    (exec_node_log.c), so an ended creator's puts are in the log; a ref no
    creator of this log made (random bytes, another cluster's ref) names
    nobody. A driver's job_started does not wait behind a held put (it
    names no lineage), so a driver is known before its first put lands.
*/
#include "exec_xfer_who.h"
#include "../db/db_event.h"
#include "../util/util_err.h"
#include "../util/util_log.h"

#include <stdio.h>
#include <string.h>

_Static_assert(DB_K_job_started == 1 && DB_K_job_finished == 2 && DB_K_task_submitted == 4 &&
                   DB_K_task_finished == 5 && DB_K_task_failed == 6 && DB_K_task_retried == 7 &&
                   DB_K_actor_created == 11 && DB_K_actor_call == 12 &&
                   DB_K_task_cancelled == 19,
               "creator events");

/* A child of the creator, with its job (and parent, when it says). */
static const char s_sibling_sql[] =
    "SELECT job, parent FROM event WHERE task >= ?1 AND task <= ?2 AND job IS NOT NULL LIMIT 1";
/* Jobs by the event_rare index, whose condition is spelled out: SQLite
   does not see that kind = 1 implies it, and scanned the whole log (1 s
   of the head's loop on 2 million tasks; t/6148) */
static const char s_jobs_sql[] =
    "SELECT job, node FROM event WHERE kind = 1 AND (kind < 4 OR kind > 13) AND job IS NOT NULL";
static const char s_job_node_sql[] =
    "SELECT node FROM event WHERE kind = 1 AND (kind < 4 OR kind > 13) AND job = ?1 LIMIT 1";
static const char s_job_ended_sql[] =
    "SELECT 1 FROM event WHERE kind = 2 AND (kind < 4 OR kind > 13) AND job = ?1 LIMIT 1";
static const char s_tasks_sql[] =
    "SELECT job, task, node FROM event WHERE kind IN (4, 11, 12) AND job IS NOT NULL "
    "AND task IS NOT NULL";
static const char s_task_end_sql[] =
    "SELECT kind FROM event WHERE task = ?1 AND kind IN (5, 6, 7, 19) ORDER BY seq DESC LIMIT 1";
static const char s_task_node_sql[] =
    "SELECT node FROM event WHERE task = ?1 AND kind IN (4, 11, 12) LIMIT 1";

/* Whether the children of (job, creator) have ID's first 8 bytes. */
static bool
s_scope_is(const util_id_t *job, const util_id_t *creator, const lux_ref_t *id)
{
    util_id_t child;
    util_id_child(&child, job, creator, 0);
    return memcmp(child.b, id->b, 8) == 0;
}

/* A driver's root: a fixed child of its job (exec_client.c). */
static void
s_root(const util_id_t *job, util_id_t *root)
{
    util_id_t zero = {{0}};
    util_id_child(root, job, &zero, 0);
}

static bool
s_col_id(sqlite3_stmt *st, int col, util_id_t *out)
{
    const void *p = sqlite3_column_blob(st, col);
    if (!p || sqlite3_column_bytes(st, col) != 16)
        return false;
    memcpy(out->b, p, 16);
    return true;
}

/* Run st (bound) to its first row: SQLITE_ROW, SQLITE_DONE, or a code
   with the message (and st finalized then). */
static int
s_first(nm_t *nm, sqlite3_stmt *st, const char *what)
{
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW || step == SQLITE_DONE)
        return step;
    int rc = util_err(LUX_ESQL, "reading %s: %s", what, sqlite3_errmsg(db_query_db(nm->xfer->q)));
    sqlite3_finalize(st);
    return rc;
}

/* One statement with an ID bound as ?1 to its first row: *first its
   first column as a number (-1: no row), *node (when not NULL) as an ID
   (zero: no row, or none). 0 or a code. */
static int
s_one(nm_t *nm, const char *sql, const util_id_t *id, const char *what, int *first,
      util_id_t *node)
{
    sqlite3_stmt *st;
    int rc = db_query_prepare(nm->xfer->q, sql, &st, NULL);
    if (rc)
        return rc;
    sqlite3_bind_blob(st, 1, id->b, 16, SQLITE_STATIC);
    int step = s_first(nm, st, what);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return step;
    *first = step == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    if (node && (step != SQLITE_ROW || !s_col_id(st, 0, node)))
        memset(node->b, 0, 16);
    sqlite3_finalize(st);
    return 0;
}

/* 1: a child of the same creator in the log. */
static int
s_by_sibling(nm_t *nm, const lux_ref_t *id, xfer_by_t *b)
{
    uint8_t lo[16], hi[16];
    memcpy(lo, id->b, 8);
    memcpy(hi, id->b, 8);
    memset(lo + 8, 0, 8);
    memset(hi + 8, 0xff, 8);
    sqlite3_stmt *st;
    int rc = db_query_prepare(nm->xfer->q, s_sibling_sql, &st, NULL);
    if (rc)
        return rc;
    sqlite3_bind_blob(st, 1, lo, 16, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, hi, 16, SQLITE_STATIC);
    int step = s_first(nm, st, "the children of an object's creator");
    if (step != SQLITE_ROW) {
        if (step == SQLITE_DONE)
            sqlite3_finalize(st);
        return step == SQLITE_DONE ? 0 : step;
    }
    util_id_t job, parent, root;
    bool has_job = s_col_id(st, 0, &job), has_parent = s_col_id(st, 1, &parent);
    sqlite3_finalize(st);
    if (!has_job)
        return 0;
    s_root(&job, &root);
    if (has_parent && s_scope_is(&job, &parent, id)) {
        b->by = util_id_eq(&parent, &root) ? XFER_BY_DRIVER : XFER_BY_TASK;
        b->job = job;
        b->creator = parent;
    } else if (s_scope_is(&job, &root, id)) { /* a put's sibling: its job only */
        b->by = XFER_BY_DRIVER;
        b->job = job;
        b->creator = root;
    } else {
        b->job = job; /* a task of that job: found by the scan */
        b->job_known = true;
    }
    return 0;
}

/* 2: a driver, by the jobs the log has seen start. */
static int
s_by_driver(nm_t *nm, const lux_ref_t *id, xfer_by_t *b)
{
    sqlite3_stmt *st;
    int rc = db_query_prepare(nm->xfer->q, s_jobs_sql, &st, NULL);
    if (rc)
        return rc;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        util_id_t job, root;
        if (!s_col_id(st, 0, &job))
            continue;
        s_root(&job, &root);
        if (s_scope_is(&job, &root, id)) {
            b->by = XFER_BY_DRIVER;
            b->job = job;
            b->creator = root;
            b->has_node = s_col_id(st, 1, &b->node);
            break;
        }
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = util_err(LUX_ESQL, "reading the jobs: %s", sqlite3_errmsg(db_query_db(nm->xfer->q)));
    sqlite3_finalize(st);
    return rc;
}

/* 3: a task, by a scan of those the log has (the last found kept). */
static int
s_by_task(nm_t *nm, const lux_ref_t *id, xfer_by_t *b)
{
    struct nm_xfer *x = nm->xfer;
    for (int i = 0; i < XFER_WHO_KEEP; i++)
        if (x->who[i].used && memcmp(x->who[i].scope, id->b, 8) == 0) {
            b->by = XFER_BY_TASK;
            b->job = x->who[i].job;
            b->creator = x->who[i].task;
            return 0;
        }
    sqlite3_stmt *st;
    int rc = db_query_prepare(x->q, s_tasks_sql, &st, NULL);
    if (rc)
        return rc;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        util_id_t job, task;
        if (!s_col_id(st, 0, &job) || !s_col_id(st, 1, &task) ||
            (b->job_known && !util_id_eq(&job, &b->job)) || !s_scope_is(&job, &task, id))
            continue;
        b->by = XFER_BY_TASK;
        b->job = job;
        b->creator = task;
        int k = x->who_next++ % XFER_WHO_KEEP;
        memcpy(x->who[k].scope, id->b, 8);
        x->who[k].job = job;
        x->who[k].task = task;
        x->who[k].used = true;
        break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = util_err(LUX_ESQL, "reading the tasks: %s", sqlite3_errmsg(db_query_db(x->q)));
    sqlite3_finalize(st);
    return rc;
}

int
nm_xfer_who(nm_t *nm, const lux_ref_t *id, xfer_by_t *b)
{
    memset(b, 0, sizeof *b);
    if (!nm->xfer->q && !(nm->xfer->q = db_query_open(&nm->cluster)))
        return util_err_ctx(LUX_EIO, "reading the log for who made an object");
    int rc = s_by_sibling(nm, id, b);
    if (!rc && b->by == XFER_BY_UNKNOWN && !b->job_known)
        rc = s_by_driver(nm, id, b);
    if (!rc && b->by == XFER_BY_UNKNOWN)
        rc = s_by_task(nm, id, b);
    int first = -1;
    if (!rc && b->by == XFER_BY_DRIVER) {
        rc = s_one(nm, s_job_ended_sql, &b->job, "whether a job ended", &first, NULL);
        b->ended = first != -1;
        if (!rc && !b->has_node) {
            rc = s_one(nm, s_job_node_sql, &b->job, "a job's node", &first, &b->node);
            b->has_node = !util_id_is_zero(&b->node);
        }
    } else if (!rc && b->by == XFER_BY_TASK) {
        /* its last end or retry: ended unless a retry came after */
        rc = s_one(nm, s_task_end_sql, &b->creator, "whether a task ended", &first, NULL);
        b->ended = first != -1 && first != DB_K_task_retried;
        if (!rc)
            rc = s_one(nm, s_task_node_sql, &b->creator, "a task's node", &first, &b->node);
        b->has_node = !util_id_is_zero(&b->node);
    }
    if (rc)
        db_query_close(&nm->xfer->q);
    return rc;
}

const char *
nm_xfer_who_sql(int i)
{
    static const char *const all[] = {s_sibling_sql, s_jobs_sql, s_job_node_sql, s_job_ended_sql,
                                      s_task_end_sql, s_task_node_sql};
    return i >= 0 && i < (int) (sizeof all / sizeof *all) ? all[i] : NULL;
}

bool
nm_xfer_madeup(nm_t *nm, const lux_ref_t *id, char *why, size_t n)
{
    xfer_by_t b;
    char hex[UTIL_ID_HEX];
    if (nm_xfer_who(nm, id, &b)) {
        log_warn("object: cannot tell who made it (%s): waited for", lux_errmsg());
        return false; /* nothing is failed on a guess */
    }
    if (b.by == XFER_BY_UNKNOWN)
        snprintf(why, n, "no driver or task of this cluster's log made it (its ID names none: "
                 "it was made up, or is another cluster's), and the log has no event of it");
    else if (b.by == XFER_BY_DRIVER && b.ended)
        snprintf(why, n, "the driver that made it (job %s) has ended, and the log has no event "
                 "of it", util_id_hex(&b.job, hex));
    else if (b.by == XFER_BY_TASK && b.ended)
        snprintf(why, n, "the task that made it (%s) has ended, and the log has no event of it",
                 util_id_hex(&b.creator, hex));
    else
        return false;
    return true;
}

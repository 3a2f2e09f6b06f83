/*  lux_replay_load - `lux replay`'s reading of the recorded job from the
    log (lux_replay.h): its items in submission order, what each needs, and
    which of them a --task replay wants.
*/
#include "lux_replay.h"
#include "db/db_event.h"
#include "util/util_err.h"
#include "util/util_hash.h"

#include <stdlib.h>
#include <string.h>

static int
s_grow(replay_t *r, size_t *cap)
{
    if (r->n < *cap)
        return 0;
    *cap = *cap ? 2 * *cap : 64;
    replay_item_t *p = realloc(r->t, *cap * sizeof *p);
    if (!p)
        return util_err(LUX_ENOMEM, "out of memory");
    r->t = p;
    return 0;
}

int
replay_load(replay_t *r)
{
    sqlite3_stmt *st = lux_hist_prepare(
        r->h, "SELECT kind, task, parent, name, idx, body, actor, info, coalesce(t_end, ts)"
              " FROM event WHERE kind IN (4, 11, 12) AND job = ?1 ORDER BY ts, shard, seq");
    if (!st)
        return LUX_ESQL;
    sqlite3_bind_blob(st, 1, r->job.b, UTIL_ID_LEN, SQLITE_STATIC);
    size_t cap = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_bytes(st, 1) != UTIL_ID_LEN)
            continue;
        int fresh = 0;
        uint32_t *ix = util_idmap_put(r->by_task, sqlite3_column_blob(st, 1), &fresh);
        if (!ix) {
            rc = util_err(LUX_ENOMEM, "out of memory");
            break;
        }
        if (!fresh)
            continue; /* submitted again by a retried parent: the same task */
        if ((rc = s_grow(r, &cap)))
            break;
        replay_item_t *t = &r->t[r->n];
        memset(t, 0, sizeof *t);
        t->kind = sqlite3_column_int(st, 0);
        memcpy(t->task.b, sqlite3_column_blob(st, 1), UTIL_ID_LEN);
        if (sqlite3_column_bytes(st, 2) == UTIL_ID_LEN)
            memcpy(t->parent.b, sqlite3_column_blob(st, 2), UTIL_ID_LEN);
        if (sqlite3_column_bytes(st, 6) == UTIL_ID_LEN)
            memcpy(t->actor.b, sqlite3_column_blob(st, 6), UTIL_ID_LEN);
        const char *fn = (const char *) sqlite3_column_text(st, 3);
        t->fn = strdup(fn ? fn : "");
        t->idx = sqlite3_column_int64(st, 4);
        t->ts = sqlite3_column_int64(st, 8);
        t->nret = t->kind == DB_K_task_submitted ? (uint8_t) t->idx : 0;
        t->body_len = (uint32_t) sqlite3_column_bytes(st, 5);
        if (t->body_len && (t->body = malloc(t->body_len)))
            memcpy(t->body, sqlite3_column_blob(st, 5), t->body_len);
        const char *info = (const char *) sqlite3_column_text(st, 7);
        if (t->kind == DB_K_actor_created && info && strncmp(info, "name=", 5) == 0)
            t->name = strndup(info + 5, strcspn(info + 5, " "));
        if (t->kind == DB_K_actor_call && t->body_len)
            t->nret = t->body[0]; /* exec_call_body: nret u8 first */
        *ix = (uint32_t) ++r->n;
        if (t->kind == DB_K_actor_created && (ix = util_idmap_put(r->by_actor, t->actor.b, NULL)))
            *ix = (uint32_t) r->n;
    }
    sqlite3_finalize(st);
    if (rc)
        return rc;
    /* the job's puts, to find their IDs inside values */
    st = lux_hist_prepare(r->h, "SELECT task FROM event WHERE kind = 8 AND job = ?1");
    if (!st)
        return LUX_ESQL;
    sqlite3_bind_blob(st, 1, r->job.b, UTIL_ID_LEN, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW)
        if (sqlite3_column_bytes(st, 0) == UTIL_ID_LEN)
            util_idmap_put(r->put_ids, sqlite3_column_blob(st, 0), NULL);
    sqlite3_finalize(st);
    /* submitted by the driver: its parent is no task of this job */
    for (size_t i = 0; i < r->n; i++)
        r->t[i].top = !util_idmap_get(r->by_task, r->t[i].parent.b);
    for (size_t i = 0; i < r->n; i++) {
        replay_item_t *t = &r->t[i];
        uint32_t *ix = t->kind == DB_K_actor_call ? util_idmap_get(r->by_actor, t->actor.b) : NULL;
        t->drive = t->top || (ix && r->t[*ix - 1].top);
        if (ix && !t->top)
            r->t[*ix - 1].task_calls = true;
    }
    /* recorded outcomes: the last one of each */
    st = lux_hist_prepare(r->h, "SELECT kind, attempt, fp, coalesce(t_end, ts) FROM event WHERE task = ?1 AND"
                                " kind IN (5, 6) ORDER BY shard, seq");
    if (!st)
        return LUX_ESQL;
    for (size_t i = 0; i < r->n; i++) {
        if (r->t[i].kind == DB_K_actor_created)
            continue;
        sqlite3_bind_blob(st, 1, r->t[i].task.b, UTIL_ID_LEN, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            r->t[i].outcome = sqlite3_column_int(st, 0);
            r->t[i].attempt = sqlite3_column_int64(st, 1);
            r->t[i].done_ts = sqlite3_column_int64(st, 3);
            if (sqlite3_column_bytes(st, 2) == 16)
                memcpy(r->t[i].fp, sqlite3_column_blob(st, 2), 16);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    /* recorded checkpoints and restarts */
    st = lux_hist_prepare(r->h, "SELECT kind, actor, idx, fp, size FROM event WHERE kind IN (13, 14)"
                                " AND job = ?1 ORDER BY shard, seq");
    if (!st)
        return LUX_ESQL;
    sqlite3_bind_blob(st, 1, r->job.b, UTIL_ID_LEN, SQLITE_STATIC);
    size_t ckcap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_int(st, 0) == DB_K_actor_restarted) {
            replay_restart_t *p = realloc(r->rs, (r->nrs + 1) * sizeof *p);
            if (!p || sqlite3_column_bytes(st, 1) != UTIL_ID_LEN) {
                rc = p ? util_err(LUX_ECORRUPT, "an actor_restarted event names no actor")
                       : util_err(LUX_ENOMEM, "out of memory");
                r->rs = p ? p : r->rs;
                break;
            }
            r->rs = p;
            p = &r->rs[r->nrs++];
            memset(p, 0, sizeof *p);
            memcpy(p->actor.b, sqlite3_column_blob(st, 1), UTIL_ID_LEN);
            p->ckpt = sqlite3_column_int64(st, 2);
            p->after = p->ckpt + sqlite3_column_int64(st, 4);
            continue;
        }
        if (sqlite3_column_bytes(st, 1) != UTIL_ID_LEN || sqlite3_column_bytes(st, 3) != 16)
            continue;
        if (r->nck == ckcap) {
            ckcap = ckcap ? 2 * ckcap : 16;
            replay_ckpt_t *p = realloc(r->ck, ckcap * sizeof *p);
            if (!p) {
                rc = util_err(LUX_ENOMEM, "out of memory");
                break;
            }
            r->ck = p;
        }
        replay_ckpt_t *c = &r->ck[r->nck];
        memset(c, 0, sizeof *c);
        memcpy(c->actor.b, sqlite3_column_blob(st, 1), UTIL_ID_LEN);
        c->idx = sqlite3_column_int64(st, 2);
        memcpy(c->fp, sqlite3_column_blob(st, 3), 16);
        /* a restart's replayed calls may checkpoint the same call again */
        bool dup = false;
        for (size_t k = 0; k < r->nck && !dup; k++)
            dup = r->ck[k].idx == c->idx && util_id_eq(&r->ck[k].actor, &c->actor);
        r->nck += !dup;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The decoded submission of t (its spec), or nonzero when it does not decode. */
int
replay_spec(const replay_item_t *t, exec_spec_t *s)
{
    memset(s, 0, sizeof *s);
    if (!t->body)
        return LUX_ECORRUPT;
    switch (t->kind) {
    case DB_K_actor_created:
        return exec_actor_from_body(s, t->body, t->body_len);
    case DB_K_actor_call:
        return exec_call_from_body(s, t->body, t->body_len);
    default:
        return exec_spec_from_body(s, t->body, t->body_len);
    }
}

/* Mark item i, the driver's items its arguments come from, and for a call
   its actor and the driver's calls before it, as wanted. */
void
replay_want(replay_t *r, size_t i)
{
    replay_item_t *t = &r->t[i];
    if (t->want)
        return;
    t->want = true;
    exec_spec_t s;
    if (!replay_spec(t, &s)) {
        util_rd_t rd;
        exec_arg_t a;
        util_rd_init(&rd, s.args, s.args_len);
        while (exec_arg_next(&rd, &a)) {
            uint32_t *ix = NULL;
            if (a.kind == EXEC_ARG_REF)
                ix = util_idmap_get(r->by_task, a.ref.b);
            else if (a.size == UTIL_ID_LEN)
                ix = util_idmap_get(r->by_actor, a.data); /* an actor's handle */
            if (ix && r->t[*ix - 1].drive)
                replay_want(r, *ix - 1);
        }
    }
    if (t->kind == DB_K_actor_call) {
        uint32_t *ix = util_idmap_get(r->by_actor, t->actor.b);
        if (ix && r->t[*ix - 1].top)
            replay_want(r, *ix - 1);
        for (size_t k = 0; k < r->n; k++)
            if (r->t[k].kind == DB_K_actor_call && r->t[k].drive && r->t[k].idx < t->idx &&
                util_id_eq(&r->t[k].actor, &t->actor))
                replay_want(r, k);
    }
}

/* Whether item i is part of this replay: wanted, or nested under one that is. */
bool
replay_in_scope(replay_t *r, size_t i)
{
    replay_item_t *t = &r->t[i];
    if (!t->scope) {
        t->scope = -1; /* a cycle would be damage: out */
        if (t->drive)
            t->scope = t->want ? 1 : -1;
        else {
            uint32_t *ix = util_idmap_get(r->by_task, t->parent.b);
            t->scope = ix && replay_in_scope(r, *ix - 1) ? 1 : -1;
        }
    }
    return t->scope > 0;
}


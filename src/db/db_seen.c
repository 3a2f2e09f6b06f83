/*  db_seen - the newest event ID of each client in a log store (see
    db_seen.h).

    The map: client -> (cseq, seq, dirty), dirty while the row in
    client_seen is older than the map's entry. The stage: the open
    transaction's newest ID of each client it touched (few clients per
    transaction: a short array, searched from its end), merged into the
    map at commit, so that a rollback has nothing to take out of it.

    client_seen is written every S_SEEN_EVENTS events or S_SEEN_MS ms, not
    in every transaction: that third page per small commit cost a quarter
    of its time. meta seen_seq says how far it is exact; loading replays
    the events after it (at most that many), so the table is exact after a
    crash too. A truncation of the log (db_store_truncate) rewrites the
    rows and seen_seq of the clients it cuts itself, then loads.
*/
#include "db_seen.h"
#include "db_sqlerr.h"
#include "../util/util_err.h"
#include "../util/util_idmap.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SEEN_EVENTS 65536
#define S_SEEN_MS 200

typedef struct {
    uint64_t cseq, seq; /* newest event ID seen from a client, and its seq */
    bool dirty;         /* not yet written to client_seen */
} s_seen_t;

typedef struct {
    util_id_t client;
    uint64_t cseq, seq;
} s_stage_t;

struct db_seen_t {
    sqlite3 *db;            /* the store's connection (borrowed) */
    const char *path;       /* its file, for messages (borrowed) */
    sqlite3_stmt *upsert;   /* client_seen upsert, prepared at the first write */
    sqlite3_stmt *put_seq;  /* meta seen_seq's write, prepared at the first write */
    util_idmap_t *clients;  /* client -> s_seen_t; NULL until loaded */
    int write_rc;           /* the failed upsert's code in s_write_seen, or 0 */
    s_stage_t *stage;       /* the open transaction's updates to `clients` */
    size_t nstage, capstage;
    uint64_t seen_seq;      /* client_seen in the file is exact up to here */
    int64_t seen_ms;        /* when it was last written */
};

db_seen_t *
db_seen_new(sqlite3 *db, const char *path)
{
    db_seen_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    self->db = db;
    self->path = path;
    self->seen_ms = util_mono_ms();
    return self;
}

void
db_seen_destroy(db_seen_t **self_p)
{
    db_seen_t *self = *self_p;
    if (!self)
        return;
    sqlite3_finalize(self->upsert);
    sqlite3_finalize(self->put_seq);
    util_idmap_destroy(&self->clients);
    free(self->stage);
    free(self);
    *self_p = NULL;
}

/* Merge a newest event ID into the map; false when memory ran out. */
static bool
s_merge(db_seen_t *self, const util_id_t *client, uint64_t cseq, uint64_t seq, bool dirty)
{
    s_seen_t *v = util_idmap_put(self->clients, client, NULL);
    if (!v)
        return false;
    if (cseq > v->cseq) {
        v->cseq = cseq;
        v->seq = seq;
        v->dirty = v->dirty || dirty;
    }
    return true;
}

/* Merge the (client, cseq, seq) rows of st into the map, and finalize
   it. A read that fails is an error: a map that missed rows would take a
   client's resends for new events, or refuse them (LUX_EGAP). */
static int
s_load_rows(db_seen_t *self, sqlite3_stmt *st, bool dirty, const char *what)
{
    int step, rc = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_bytes(st, 0) != UTIL_ID_LEN)
            continue;
        util_id_t c;
        memcpy(c.b, sqlite3_column_blob(st, 0), UTIL_ID_LEN);
        if (!s_merge(self, &c, (uint64_t) sqlite3_column_int64(st, 1),
                     (uint64_t) sqlite3_column_int64(st, 2), dirty)) {
            rc = util_err(LUX_ENOMEM, "%s: out of memory", self->path);
            break;
        }
    }
    if (!rc && step != SQLITE_DONE)
        rc = db_sqlerr(self->db, self->path, what);
    sqlite3_finalize(st);
    return rc;
}

static int
s_load(db_seen_t *self)
{
    sqlite3_stmt *st;
    int rc;
    util_idmap_destroy(&self->clients);
    if (!(self->clients = util_idmap_new(sizeof(s_seen_t))))
        return util_err(LUX_ENOMEM, "%s: out of memory", self->path);
    self->seen_seq = 0;
    if (sqlite3_prepare_v2(self->db, "SELECT value FROM meta WHERE key = 'seen_seq'", -1, &st,
                           NULL) != SQLITE_OK)
        return db_sqlerr(self->db, self->path, "meta");
    if ((rc = sqlite3_step(st)) == SQLITE_ROW)
        self->seen_seq = strtoull((const char *) sqlite3_column_text(st, 0), NULL, 10);
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_sqlerr(self->db, self->path, "meta");
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(self->db, "SELECT client, cseq, seq FROM client_seen", -1, &st, NULL) !=
        SQLITE_OK)
        return db_sqlerr(self->db, self->path, "client_seen");
    if ((rc = s_load_rows(self, st, false, "client_seen")))
        return rc;
    if (sqlite3_prepare_v2(self->db, "SELECT client, cseq, seq FROM event WHERE seq > ?1 AND"
                                     " client IS NOT NULL", -1, &st, NULL) != SQLITE_OK)
        return db_sqlerr(self->db, self->path, "event");
    sqlite3_bind_int64(st, 1, (int64_t) self->seen_seq);
    return s_load_rows(self, st, true, "events after seen_seq");
}

int
db_seen_load(db_seen_t *self)
{
    int rc = s_load(self);
    if (rc)
        util_idmap_destroy(&self->clients);
    return rc;
}

void
db_seen_begin(db_seen_t *self)
{
    self->nstage = 0;
}

int
db_seen_note(db_seen_t *self, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    for (size_t i = self->nstage; i-- > 0;) {
        if (util_id_eq(&self->stage[i].client, client)) {
            if (cseq > self->stage[i].cseq) {
                self->stage[i].cseq = cseq;
                self->stage[i].seq = seq;
            }
            return 0;
        }
    }
    if (self->nstage == self->capstage) {
        size_t cap = self->capstage ? 2 * self->capstage : 16;
        s_stage_t *p = realloc(self->stage, cap * sizeof *p);
        if (!p)
            return util_err(LUX_ENOMEM, "%s: out of memory", self->path);
        self->stage = p;
        self->capstage = cap;
    }
    self->stage[self->nstage++] = (s_stage_t) {*client, cseq, seq};
    return 0;
}

/* The last call failed doing what: its error, saying whether SQLite
   rolled the transaction back. */
static int
s_fail(db_seen_t *self, const char *what)
{
    char w[128];
    snprintf(w, sizeof w, "%s%s", what,
             sqlite3_get_autocommit(self->db) ? " (SQLite rolled the transaction back)" : "");
    return db_sqlerr(self->db, self->path, w);
}

static int
s_write_seen(void *arg, const void *client, void *value)
{
    db_seen_t *self = arg;
    s_seen_t *v = value;
    if (!v->dirty)
        return 0;
    sqlite3_bind_blob(self->upsert, 1, client, UTIL_ID_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(self->upsert, 2, (int64_t) v->cseq);
    sqlite3_bind_int64(self->upsert, 3, (int64_t) v->seq);
    int rc = sqlite3_step(self->upsert);
    if (rc != SQLITE_DONE) {
        self->write_rc = s_fail(self, "writing client_seen");
        sqlite3_reset(self->upsert);
        return 1;
    }
    sqlite3_reset(self->upsert);
    v->dirty = false;
    return 0;
}

/* 0 while the store's transaction is open. A statement that fails with
   a full disk or an I/O error may have made SQLite roll the whole
   transaction back (sqlite3_get_autocommit), and the next statement would
   then run, and commit, alone. */
static int
s_open(db_seen_t *self, const char *what)
{
    if (!sqlite3_get_autocommit(self->db))
        return 0;
    return util_err(LUX_EIO, "%s: %s: the transaction is rolled back (an earlier step failed)",
                    self->path, what);
}

/* Prepared once, as the upsert is: it is written with every write of
   client_seen (prepared each time, it was half of db_seen_commit's own
   work in a callgrind count of single_client_tasks_async). */
static int
s_put_seen_seq(db_seen_t *self, uint64_t seq)
{
    int rc = 0;
    if (!self->put_seq &&
        sqlite3_prepare_v3(self->db, "INSERT OR REPLACE INTO meta VALUES ('seen_seq', ?1)", -1,
                           SQLITE_PREPARE_PERSISTENT, &self->put_seq, NULL) != SQLITE_OK)
        return s_fail(self, "writing seen_seq");
    char val[32];
    snprintf(val, sizeof val, "%llu", (unsigned long long) seq);
    sqlite3_bind_text(self->put_seq, 1, val, -1, SQLITE_STATIC);
    if (sqlite3_step(self->put_seq) != SQLITE_DONE)
        rc = s_fail(self, "writing seen_seq");
    sqlite3_reset(self->put_seq);
    sqlite3_clear_bindings(self->put_seq);
    return rc;
}

int
db_seen_commit(db_seen_t *self, uint64_t last_seq, bool now)
{
    int rc;
    int64_t t = util_mono_ms();
    if (!self->clients && (rc = db_seen_load(self))) /* a rollback could not */
        return rc;
    for (size_t i = 0; i < self->nstage; i++)
        if (!s_merge(self, &self->stage[i].client, self->stage[i].cseq, self->stage[i].seq, true))
            return util_err(LUX_ENOMEM, "%s: out of memory", self->path);
    self->nstage = 0;
    if (last_seq > self->seen_seq &&
        (now || last_seq - self->seen_seq >= S_SEEN_EVENTS || t - self->seen_ms >= S_SEEN_MS)) {
        if (!self->upsert &&
            sqlite3_prepare_v3(self->db,
                               "INSERT INTO client_seen VALUES (?1, ?2, ?3) ON CONFLICT (client)"
                               " DO UPDATE SET cseq = excluded.cseq, seq = excluded.seq"
                               " WHERE excluded.cseq > cseq",
                               -1, SQLITE_PREPARE_PERSISTENT, &self->upsert, NULL) != SQLITE_OK)
            return db_sqlerr(self->db, self->path, "prepare");
        /* Each step stops at a failure, and sees first that the
           transaction is still open: seen_seq committed alone, past rows
           of client_seen not written, loses the events in between from
           the map once loaded again (t/9162: a client's resends refused
           with LUX_EGAP for ever). */
        if ((rc = s_open(self, "writing client_seen")))
            return rc;
        self->write_rc = 0;
        util_idmap_each(self->clients, s_write_seen, self);
        if ((rc = self->write_rc) || (rc = s_open(self, "writing seen_seq")) ||
            (rc = s_put_seen_seq(self, last_seq)))
            return rc;
        self->seen_seq = last_seq;
        self->seen_ms = t;
    }
    return 0;
}

void
db_seen_rollback(db_seen_t *self)
{
    self->nstage = 0;
    /* a failed commit's events and write marks are in the map: read it again (t/9161) */
    if (self->clients)
        db_seen_load(self);
}

bool
db_seen_behind(db_seen_t *self, uint64_t last_seq)
{
    return self->clients && self->seen_seq < last_seq;
}

typedef struct {
    int (*fn)(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq);
    void *arg;
    int rc; /* what fn returned when it stopped the walk */
} s_each_t;

static int
s_each(void *arg, const void *client, void *value)
{
    s_each_t *e = arg;
    s_seen_t *v = value;
    return e->rc = e->fn(e->arg, client, v->cseq, v->seq);
}

int
db_seen_each(db_seen_t *self,
             int (*fn)(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq), void *arg)
{
    int rc;
    if (!self->clients && (rc = db_seen_load(self)))
        return rc;
    s_each_t e = {fn, arg, 0};
    util_idmap_each(self->clients, s_each, &e);
    return e.rc;
}

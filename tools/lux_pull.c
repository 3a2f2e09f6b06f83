/*  lux_pull - `lux pull --dir D|--address A [--job ID] [--since SEQ] OUT.db`:
    copy a cluster's log, every shard, into one local SQLite file
    (sql/pull.sql) that outlives the cluster, verifying every hash on the
    way; and `lux audit OUT.db`, which verifies such a file.

    Where the events come from:
      --address A   a running cluster's directory A (its cluster.conf and,
                    for tcp, its keys), read through the documented protocol
                    alone (doc/protocol.md): CONFIG_REQ at the chain master
                    for every chain, then READs at each shard's tail, from
                    the first seq the file does not have, until a READ comes
                    back empty. A chain that changes under the pull (EEPOCH,
                    ESTATE, ESHARD, a tail that stops answering) sends it
                    back to the master for the new chain, a few times.
                    It copies what the tail had committed at its first
                    READ of each shard (a busy cluster's newer events wait
                    for the next pull).
      --dir D       the same when D's head is running (`lux start`);
                    otherwise (a stopped cluster, a finished run's
                    directory) each shard's tail file, read-only, through
                    db_store_read: the same records a READ returns.

    Verification: each record is decoded (db_event_decode) and its chain
    hash recomputed from the one before it (db_event_chain); a record
    whose hash is not that, or a seq that is not the next, stops the pull
    with an error naming the shard and seq, and nothing of that batch is
    kept. The first record chains on the genesis of its shard (or, after
    --since SEQ, on the hash the record SEQ-1 carries, which a partial copy
    must trust: protocol section 7); a later pull chains on the last hash
    the file holds, so a log that does not continue the copy is refused.
    Signed checkpoints (doc/DESIGN.md section 9): the witness file
    (DIR/witness, or --witness) is read before the first READ, every line
    checked with the cluster's public key (DIR/keys/checkpoint.public, or
    --public-key): a line that does not parse, is another cluster's or
    whose signature fails stops the pull, naming the line, shard and seq.
    Each record that passes s_checkpoint at a checkpoint's seq must carry
    the signed hash, and after the pull no shard may end before its newest
    checkpoint (committed events cut): either stops the pull naming shard
    and seq. Since the witness is read first, every checkpoint it holds is
    of events the tail had committed before the pull's first READ, which
    the pull copies. The checkpoints verified go into the file's
    checkpoint table, with their signatures, so the file carries its
    proof (lux audit OUT.db --public-key K).

    The file: one transaction per batch, the batch's rows and its shard's
    shard_state row together, so an interrupted pull leaves a file that
    verifies and that the next pull continues. With --job, only that job's
    events are kept (its job events, its tasks' events, its actors' events,
    the nodes' events), each still verified in its chain on the way in;
    their prev column lets `lux audit` check each row alone, and it says
    how many gaps the filter left.
*/
#include "lux_cmd.h"
#include "lux_opt.h"
#include "db/db_chain.h"
#include "db/db_ckpt.h"
#include "db/db_query.h"
#include "db/db_event.h"
#include "db/db_store.h"
#include "exec/exec_blob.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_hash.h"
#include "util/util_idmap.h"
#include "util/util_time.h"

#include <czmq.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

extern const char db_sql_pull[];

static const char s_usage[] =
    "lux pull --dir DIR|--address DIR [--job ID] [--since SEQ]\n"
    "                [--witness FILE] [--public-key FILE]... OUT.db";

#define S_WAIT_MS 10000 /* a master or a tail silent this long is asked again */
#define S_TRIES 5       /* times a shard's READ goes back to the master */

typedef struct {
    uint64_t first;          /* first seq the file copies */
    uint8_t anchor[16];      /* the hash before first */
    uint64_t last;           /* last seq verified */
    uint8_t hash[16];        /* its hash */
    uint8_t genesis[16];
    bool known;              /* from shard_state */
} s_shard_t;

typedef struct {
    db_cluster_t c;
    sqlite3 *db;
    sqlite3_stmt *ins, *state;
    s_shard_t *sh;
    uint64_t since;
    bool job_only;
    util_id_t job;
    util_idmap_t *tasks, *actors; /* --job: what belongs to it */
    /* the protocol */
    bool net;
    net_sec_t *sec;
    zsock_t *master;
    db_chain_t *chains;
    uint64_t req;
    /* signed checkpoints, verified, sorted by shard and seq */
    db_ckpt_t *cks;
    int *ck_line;            /* each one's line in the witness */
    size_t ncks;
    size_t *ck_at;           /* per shard: the next checkpoint to meet */
    char witness[PATH_MAX];
    sqlite3_stmt *ck_ins;
    /* counts */
    uint64_t verified, kept, checked;
} s_pull_t;

/* --- the file -------------------------------------------------------------------------- */

static int
s_exec(s_pull_t *p, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(p->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        util_err(LUX_ESQL, "%s", msg ? msg : sqlite3_errmsg(p->db));
        sqlite3_free(msg);
        return LUX_ESQL;
    }
    return 0;
}

static int
s_meta_put(s_pull_t *p, const char *key, const char *value)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(p->db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", -1,
                           &st, NULL) != SQLITE_OK)
        return util_err(LUX_ESQL, "%s", sqlite3_errmsg(p->db));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : util_err(LUX_ESQL, "%s", sqlite3_errmsg(p->db));
}

bool
lux_pull_meta_get(sqlite3 *db, const char *key, char *out, size_t n)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        snprintf(out, n, "%s", (const char *) sqlite3_column_text(st, 0));
        found = true;
    }
    sqlite3_finalize(st);
    return found;
}

/* Open or create OUT.db for cluster p->c; load where each shard stands. */
static int
s_open_file(s_pull_t *p, const char *out, const char *source)
{
    char v[128], hex[UTIL_ID_HEX], jhex[UTIL_ID_HEX];
    bool fresh = !util_exists(out);
    util_id_hex(&p->c.id, hex);
    util_id_hex(&p->job, jhex);
    if (sqlite3_open_v2(out, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK)
        return util_err(LUX_EIO, "%s: cannot open: %s", out,
                        p->db ? sqlite3_errmsg(p->db) : "out of memory");
    sqlite3_busy_timeout(p->db, 5000);
    if (!fresh) {
        if (!lux_pull_meta_get(p->db, "format", v, sizeof v) || strcmp(v, "lux-pull-1") != 0)
            return util_err(LUX_EEXIST, "%s exists and is not a file `lux pull` wrote: give "
                            "a new file, or one an earlier pull made", out);
        if (!lux_pull_meta_get(p->db, "cluster", v, sizeof v) || strcmp(v, hex) != 0)
            return util_err(LUX_EEXIST, "%s holds the log of cluster %s, not of %s (%s)", out, v,
                            hex, p->c.dir);
        char j[64] = "";
        lux_pull_meta_get(p->db, "job", j, sizeof j);
        if (strcmp(j, p->job_only ? jhex : "") != 0)
            return util_err(LUX_EEXIST, "%s was pulled %s%s; pull again the same way, or into a "
                            "new file", out, j[0] ? "with --job " : "without --job", j);
    }
    /* the tables of sql/base.sql and pull.sql; the views of sql/views.sql */
    char *views = db_query_shardify(false, NULL);
    if (!views)
        return util_err(LUX_ENOMEM, "out of memory");
    int vrc = s_exec(p, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = NORMAL;") ||
              s_exec(p, "BEGIN") || s_exec(p, db_sql_base) || s_exec(p, db_sql_pull) ||
              s_exec(p, views);
    free(views);
    if (vrc)
        return util_err_ctx(LUX_ESQL, "%s", out);
    if (fresh) {
        for (int k = 1; k < 256; k++) {
            const char *name = db_kind_name(k);
            if (!name)
                continue;
            char sql[128];
            snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO event_kind VALUES (%d, '%s')", k,
                     name);
            if (s_exec(p, sql))
                return util_err_ctx(LUX_ESQL, "%s", out);
        }
        snprintf(v, sizeof v, "%u", p->c.shards);
        if (s_meta_put(p, "format", "lux-pull-1") || s_meta_put(p, "cluster", hex) ||
            s_meta_put(p, "shards", v) ||
            (p->job_only && s_meta_put(p, "job", jhex)))
            return util_err_ctx(LUX_ESQL, "%s", out);
    } else {
        if (!lux_pull_meta_get(p->db, "shards", v, sizeof v) || (uint32_t) atoi(v) != p->c.shards)
            return util_err(LUX_ECORRUPT, "%s holds %s shards, the cluster %u", out, v,
                            p->c.shards);
    }
    if (s_meta_put(p, "source", source) || s_exec(p, "COMMIT"))
        return util_err_ctx(LUX_ESQL, "%s", out);
    /* where each shard stands */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(p->db, "SELECT shard, first_seq, anchor, last_seq, last_hash FROM"
                                  " shard_state", -1, &st, NULL) != SQLITE_OK)
        return util_err(LUX_ESQL, "%s: %s", out, sqlite3_errmsg(p->db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint32_t s = (uint32_t) sqlite3_column_int(st, 0);
        if (s >= p->c.shards || sqlite3_column_bytes(st, 2) != 16 ||
            sqlite3_column_bytes(st, 4) != 16)
            continue;
        p->sh[s].known = true;
        p->sh[s].first = (uint64_t) sqlite3_column_int64(st, 1);
        memcpy(p->sh[s].anchor, sqlite3_column_blob(st, 2), 16);
        p->sh[s].last = (uint64_t) sqlite3_column_int64(st, 3);
        memcpy(p->sh[s].hash, sqlite3_column_blob(st, 4), 16);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(p->db,
                           "INSERT INTO event (seq, ts, kind, client, cseq, job, task, parent,"
                           " actor, node, idx, worker, attempt, status, t_start, t_end, size,"
                           " name, info, fp, deps, body, hash, shard, prev) VALUES (?1, ?2, ?3,"
                           " ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
                           " ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
                           -1, &p->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(p->db,
                           "INSERT OR REPLACE INTO shard_state (shard, genesis, first_seq,"
                           " anchor, last_seq, last_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &p->state, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(p->db,
                           "INSERT OR IGNORE INTO checkpoint (shard, seq, hash, ts, sig) VALUES"
                           " (?1, ?2, ?3, ?4, ?5)", -1, &p->ck_ins, NULL) != SQLITE_OK)
        return util_err(LUX_ESQL, "%s: %s", out, sqlite3_errmsg(p->db));
    return 0;
}

/* --- verification and storage ---------------------------------------------------------- */

/* --- signed checkpoints ----------------------------------------------------------------- */

static int
s_ck_cmp(const void *a, const void *b)
{
    const db_ckpt_t *x = a, *y = b;
    if (x->shard != y->shard)
        return x->shard < y->shard ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct {
    s_pull_t *p;
    const db_ckpt_keys_t *pk;
    size_t cap;
    int rc;
} s_ckload_t;

static int
s_ck_line(void *arg, int line, const db_ckpt_t *c)
{
    s_ckload_t *l = arg;
    s_pull_t *p = l->p;
    if (!c)
        l->rc = util_err(LUX_ECORRUPT, "witness %s line %d: not a checkpoint line", p->witness,
                         line);
    else if (!util_id_eq(&c->cluster, &p->c.id))
        l->rc = util_err(LUX_ECORRUPT, "witness %s line %d: shard %u seq %llu: a checkpoint of "
                         "another cluster", p->witness, line, c->shard,
                         (unsigned long long) c->seq);
    else if (!db_ckpt_keys_verify(c, l->pk))
        l->rc = util_err(LUX_EAUTH, "witness %s line %d: shard %u seq %llu: bad signature "
                         "(forged, altered, or signed with a key not given): the pull refuses it",
                         p->witness, line, c->shard, (unsigned long long) c->seq);
    else if (c->shard >= p->c.shards)
        l->rc = util_err(LUX_ECORRUPT, "witness %s line %d: shard %u does not exist (the "
                         "cluster has %u)", p->witness, line, c->shard, p->c.shards);
    if (l->rc)
        return 1;
    if (p->ncks == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        db_ckpt_t *n = realloc(p->cks, cap * sizeof *n);
        int *nl = n ? realloc(p->ck_line, cap * sizeof *nl) : NULL;
        if (n)
            p->cks = n;
        if (!n || !nl) {
            l->rc = util_err(LUX_ENOMEM, "out of memory");
            return 1;
        }
        p->ck_line = nl;
        l->cap = cap;
    }
    p->ck_line[p->ncks] = line;
    p->cks[p->ncks++] = *c;
    return 0;
}

/* Read and verify the witness, before anything is pulled. *unsigned_: a
   witness but no public key (nothing checked). */
static int
s_ck_load(s_pull_t *p, const lux_pull_opts_t *o, bool *unsigned_)
{
    char pkpath[PATH_MAX];
    db_ckpt_keys_t pk = {0};
    int rc;
    *unsigned_ = false;
    if (o->witness)
        snprintf(p->witness, sizeof p->witness, "%s", o->witness);
    else
        db_ckpt_witness_path(&p->c, p->witness, sizeof p->witness);
    if (!(p->ck_at = calloc(p->c.shards, sizeof *p->ck_at)))
        return util_err(LUX_ENOMEM, "out of memory");
    if (!util_exists(p->witness)) {
        if (o->witness)
            return util_err(LUX_ENOTFOUND, "witness %s: no such file", o->witness);
        return 0; /* a cluster that never signed one */
    }
    /* the keys given (a file of one or more), or the cluster's: its key
       history (every key it signed with: the witness spans rotations),
       else its public key */
    if (o->keys)
        pk = *o->keys;
    rc = o->keys ? 0 : db_ckpt_keys_cluster(&p->c, &pk, pkpath, sizeof pkpath);
    if (rc) {
        if (rc == LUX_ENOTFOUND) {
            *unsigned_ = true;
            return 0;
        }
        return rc;
    }
    s_ckload_t l = {.p = p, .pk = &pk};
    if ((rc = db_ckpt_each(p->witness, s_ck_line, &l)))
        return rc;
    if (l.rc)
        return l.rc;
    /* sorted with their lines: sort an index */
    for (size_t i = 1; i < p->ncks; i++)
        for (size_t j = i; j > 0 && s_ck_cmp(&p->cks[j - 1], &p->cks[j]) > 0; j--) {
            db_ckpt_t t = p->cks[j];
            p->cks[j] = p->cks[j - 1];
            p->cks[j - 1] = t;
            int tl = p->ck_line[j];
            p->ck_line[j] = p->ck_line[j - 1];
            p->ck_line[j - 1] = tl;
        }
    /* each shard's cursor at its first checkpoint */
    for (size_t i = p->ncks; i-- > 0;)
        p->ck_at[p->cks[i].shard] = i;
    for (uint32_t s = 0; s < p->c.shards; s++) {
        size_t i = p->ck_at[s];
        if (i >= p->ncks || p->cks[i].shard != s)
            p->ck_at[s] = p->ncks; /* none */
    }
    return 0;
}

/* The signed hash against the one the pull computed. */
static int
s_ck_match(s_pull_t *p, size_t i, const uint8_t h[16])
{
    const db_ckpt_t *c = &p->cks[i];
    if (memcmp(h, c->hash, 16) != 0) {
        char want[33], got[33];
        util_hex(want, c->hash, 16);
        util_hex(got, h, 16);
        return util_err(LUX_ECORRUPT, "shard %u seq %llu: the log's hash there is %s, not %s, "
                        "the one signed in the checkpoint of witness %s line %d: events at or "
                        "before seq %llu were changed (every hash recomputed)",
                        c->shard, (unsigned long long) c->seq, got, want, p->witness,
                        p->ck_line[i], (unsigned long long) c->seq);
    }
    sqlite3_stmt *st = p->ck_ins;
    sqlite3_bind_int(st, 1, (int) c->shard);
    sqlite3_bind_int64(st, 2, (int64_t) c->seq);
    sqlite3_bind_blob(st, 3, c->hash, 16, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, c->ts);
    sqlite3_bind_blob(st, 5, c->sig, DB_CKPT_SIG_LEN, SQLITE_STATIC);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    if (step != SQLITE_DONE)
        return util_err(LUX_ESQL, "shard %u: checkpoint: %s", c->shard, sqlite3_errmsg(p->db));
    p->checked++;
    return 0;
}

/* Every verified record passes here (seq, with the hash h the pull
   computed): the checkpoints of its shard at seq are checked; those
   below it were below where this pull started. */
static int
s_checkpoint(s_pull_t *p, uint32_t shard, uint64_t seq, const uint8_t h[16])
{
    size_t *i = &p->ck_at[shard];
    int rc;
    for (; *i < p->ncks && p->cks[*i].shard == shard && p->cks[*i].seq <= seq; ++*i)
        if (p->cks[*i].seq == seq && (rc = s_ck_match(p, *i, h)))
            return rc;
    return 0;
}

/* Checkpoints of events an earlier pull copied: against the file. */
static int
s_ck_file(s_pull_t *p)
{
    sqlite3_stmt *st;
    int rc = 0;
    if (sqlite3_prepare_v2(p->db, "SELECT hash FROM event WHERE shard = ?1 AND seq = ?2", -1, &st,
                           NULL) != SQLITE_OK)
        return util_err(LUX_ESQL, "%s", sqlite3_errmsg(p->db));
    if ((rc = s_exec(p, "BEGIN"))) {
        sqlite3_finalize(st);
        return rc;
    }
    for (uint32_t s = 0; s < p->c.shards && !rc; s++) {
        const s_shard_t *sh = &p->sh[s];
        size_t *i = &p->ck_at[s];
        for (; !rc && sh->known && *i < p->ncks && p->cks[*i].shard == s &&
               p->cks[*i].seq <= sh->last;
             ++*i) {
            const db_ckpt_t *c = &p->cks[*i];
            if (c->seq < sh->first)
                continue; /* before what the file holds (--since) */
            if (c->seq == sh->last) {
                rc = s_ck_match(p, *i, sh->hash);
                continue;
            }
            sqlite3_bind_int(st, 1, (int) s);
            sqlite3_bind_int64(st, 2, (int64_t) c->seq);
            if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 16)
                rc = s_ck_match(p, *i, sqlite3_column_blob(st, 0));
            sqlite3_reset(st); /* not kept (--job): its chain was verified when pulled */
        }
    }
    sqlite3_finalize(st);
    if (rc) {
        sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return s_exec(p, "COMMIT");
}

/* After the pull: no shard may end before its newest checkpoint. */
static int
s_ck_ends(s_pull_t *p)
{
    for (size_t i = 0; i < p->ncks; i++) {
        const db_ckpt_t *c = &p->cks[i];
        if (c->seq > p->sh[c->shard].last)
            return util_err(LUX_ECORRUPT, "shard %u: the log ends at seq %llu, before the "
                            "signed checkpoint at seq %llu (witness %s line %d): committed "
                            "events were cut", c->shard,
                            (unsigned long long) p->sh[c->shard].last,
                            (unsigned long long) c->seq, p->witness, p->ck_line[i]);
    }
    return 0;
}

/* Whether --job keeps e (decoded, in log order: a task's submission comes
   before its other events in its shard). */
static bool
s_keep(s_pull_t *p, const db_event_t *e)
{
    if (!p->job_only || e->kind == DB_K_node_joined || e->kind == DB_K_node_died)
        return true;
    bool mine = (e->mask & DB_F_JOB) && util_id_eq(&e->job, &p->job);
    if ((e->mask & DB_F_TASK) && !mine)
        mine = util_idmap_get(p->tasks, e->task.b) != NULL;
    if ((e->mask & DB_F_ACTOR) && !mine)
        mine = util_idmap_get(p->actors, e->actor.b) != NULL;
    if (mine && (e->mask & DB_F_TASK))
        util_idmap_put(p->tasks, e->task.b, NULL);
    if (mine && (e->mask & DB_F_ACTOR))
        util_idmap_put(p->actors, e->actor.b, NULL);
    return mine;
}

/* Verify and store the records of batch b of shard s, in one transaction
   with the shard's state. */
static int
s_take(s_pull_t *p, uint32_t s, const net_batch_t *b)
{
    s_shard_t *sh = &p->sh[s];
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    uint8_t h[16];
    int rc = 0;
    s_shard_t save = *sh;

    if (s_exec(p, "BEGIN"))
        return util_err_ctx(LUX_ESQL, "shard %u", s);
    net_batch_iter(&it, b);
    while (!rc && net_batch_next(&it, &seq, &rec, &n)) {
        if (n < DB_REC_MIN) {
            rc = util_err(LUX_ECORRUPT, "shard %u seq %" PRIu64 ": a record of %zu bytes", s,
                          seq, n);
            break;
        }
        if (!sh->known) {
            /* the first record of a copy: from the genesis, or after
               --since the one before SEQ, whose hash is the anchor
               (trusted, not verified) */
            uint64_t want = p->since > 1 ? p->since - 1 : 1;
            if (seq != want) {
                rc = util_err(LUX_EGAP, "shard %u: the first record sent was seq %" PRIu64
                              ", not %" PRIu64, s, seq, want);
                break;
            }
            sh->known = true;
            sh->first = seq;
            memcpy(sh->anchor, sh->genesis, 16);
            if (seq > 1 || p->since > 1) {
                memcpy(sh->anchor, rec + n - 16, 16);
                memcpy(sh->hash, rec + n - 16, 16);
                sh->last = seq;
                sh->first = seq + 1;
                continue;
            }
        } else if (seq != sh->last + 1) {
            rc = util_err(LUX_EGAP, "shard %u: seq %" PRIu64 " came after %" PRIu64
                          " (a gap in what the tail sent)", s, seq, sh->last);
            break;
        }
        db_event_t e;
        if ((rc = db_event_decode(&e, rec, n))) {
            util_err_ctx(rc, "shard %u seq %" PRIu64, s, seq);
            break;
        }
        db_event_chain(h, sh->last ? sh->hash : sh->genesis, seq, rec, n);
        if (memcmp(h, rec + n - 16, 16) != 0) {
            char want[33], got[33];
            util_hex(want, h, 16);
            util_hex(got, rec + n - 16, 16);
            rc = util_err(LUX_ECORRUPT, "shard %u seq %" PRIu64 ": its hash %s is not %s, the "
                          "hash of its bytes after seq %" PRIu64 "%s: the log or the transfer "
                          "is corrupt, or the log does not continue this copy",
                          s, seq, got, want, seq - 1, sh->last ? "" : " (the genesis)");
            break;
        }
        if ((rc = s_checkpoint(p, s, seq, h)))
            break;
        p->verified++;
        if (s_keep(p, &e)) {
            db_store_bind_event(p->ins, seq, &e);
            sqlite3_bind_int(p->ins, 24, (int) s);
            sqlite3_bind_blob(p->ins, 25, sh->last ? sh->hash : sh->genesis, 16,
                              SQLITE_TRANSIENT);
            int step = sqlite3_step(p->ins);
            sqlite3_reset(p->ins);
            if (step != SQLITE_DONE) {
                rc = util_err(LUX_ESQL, "shard %u seq %" PRIu64 ": %s", s, seq,
                              sqlite3_errmsg(p->db));
                break;
            }
            p->kept++;
        }
        sh->last = seq;
        memcpy(sh->hash, h, 16);
    }
    if (!rc) {
        sqlite3_stmt *st = p->state;
        sqlite3_bind_int(st, 1, (int) s);
        sqlite3_bind_blob(st, 2, sh->genesis, 16, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (int64_t) sh->first);
        sqlite3_bind_blob(st, 4, sh->anchor, 16, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, (int64_t) sh->last);
        sqlite3_bind_blob(st, 6, sh->hash, 16, SQLITE_STATIC);
        int step = sqlite3_step(st);
        sqlite3_reset(st);
        if (step != SQLITE_DONE)
            rc = util_err(LUX_ESQL, "shard %u: %s", s, sqlite3_errmsg(p->db));
    }
    if (!rc && s_exec(p, "COMMIT"))
        rc = util_err_ctx(LUX_ESQL, "shard %u", s);
    if (rc) {
        sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
        *sh = save;
    }
    return rc;
}

/* --- reading the tail files ------------------------------------------------------------ */

static int
s_pull_files(s_pull_t *p)
{
    db_chain_t *chains = calloc(p->c.shards, sizeof *chains);
    util_buf_t buf;
    int rc = 0;
    if (!chains)
        return util_err(LUX_ENOMEM, "out of memory");
    util_buf_init(&buf);
    if ((rc = db_chain_load_state(&p->c, chains)))
        goto out;
    for (uint32_t s = 0; s < p->c.shards && !rc; s++) {
        char path[PATH_MAX];
        db_cluster_replica_db(&p->c, s, chains[s].m[chains[s].n - 1].index, path, sizeof path);
        db_store_opts_t so = {.path = path, .cluster = p->c.id, .shard = s, .readonly = true};
        db_store_t *st = db_store_open(&so);
        if (!st) {
            rc = util_err_ctx(LUX_EIO, "shard %u", s);
            break;
        }
        for (;;) {
            uint64_t from = p->sh[s].last + 1;
            if (!p->sh[s].known && p->since > 1)
                from = p->since - 1;
            uint32_t count;
            buf.len = 0;
            if ((rc = db_store_read(st, from, 16384, 8u << 20, &buf, &count)))
                break;
            if (count == 0)
                break;
            net_batch_t b = {.first = from, .count = count, .recs = buf.data, .len = buf.len};
            if ((rc = s_take(p, s, &b)))
                break;
        }
        db_store_close(&st);
    }
out:
    util_buf_free(&buf);
    free(chains);
    return rc;
}

/* --- reading through the protocol ------------------------------------------------------ */

/* Ask the master for every chain (shard S or more: all); wait for the
   answer. */
static int
s_config(s_pull_t *p)
{
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_CONFIG_REQ, 0xffffffffu, 0)});
    if (zmsg_send(&m, p->master))
        return util_err(LUX_EIO, "cannot send to the chain master");
    zpoller_t *poll = zpoller_new(p->master, NULL);
    int64_t until = util_mono_ms() + S_WAIT_MS;
    int rc = LUX_ETIMEDOUT;
    while (rc == LUX_ETIMEDOUT && util_mono_ms() < until) {
        if (zpoller_wait(poll, (int) (until - util_mono_ms())) != p->master)
            continue;
        zmsg_t *r = zmsg_recv(p->master);
        net_hdr_t h;
        util_id_t id;
        uint32_t count;
        if (r && zmsg_size(r) == 2 && net_hdr_decode(&h, zmsg_first(r)) == 0 &&
            h.type == NET_CONFIG) {
            zframe_t *body = zmsg_next(r);
            db_chain_t *chains = calloc(p->c.shards, sizeof *chains);
            if (chains && db_chain_decode(zframe_data(body), zframe_size(body), &id, chains,
                                          p->c.shards, &count) == 0 &&
                util_id_eq(&id, &p->c.id)) {
                for (uint32_t i = 0; i < count; i++)
                    if (chains[i].shard < p->c.shards &&
                        chains[i].epoch >= p->chains[chains[i].shard].epoch)
                        p->chains[chains[i].shard] = chains[i];
                rc = 0;
            } else {
                rc = util_err(LUX_EPROTO, "the chain master's CONFIG is malformed or of "
                              "another cluster");
            }
            free(chains);
        }
        zmsg_destroy(&r);
    }
    zpoller_destroy(&poll);
    if (rc == LUX_ETIMEDOUT)
        util_err(rc, "the chain master of %s did not answer within %d s: is the cluster "
                 "running?", p->c.dir, S_WAIT_MS / 1000);
    return rc;
}

/* One READ of shard s from `from` at its tail (rd, connected to ep, a
   copy: the chains change under it): the batch in *b, pointing into *keep;
   the tail's last seq in *last. */
static int
s_read(s_pull_t *p, uint32_t s, zsock_t **rd, char *ep, uint64_t from, zmsg_t **keep,
       net_batch_t *b, uint64_t *last)
{
    char text[256];
    for (int tries = 0;; tries++) {
        const db_chain_t *ch = &p->chains[s];
        if (ch->n == 0 || !ch->m[ch->n - 1].ep[DB_EP_READ][0]) {
            if (tries >= S_TRIES)
                return util_err(LUX_ESTATE, "shard %u: the master names no tail to read from",
                                s);
            int rc = s_config(p);
            if (rc)
                return rc;
            zsock_destroy(rd);
            continue;
        }
        const char *tail_ep = ch->m[ch->n - 1].ep[DB_EP_READ];
        if (!*rd || strcmp(ep, tail_ep) != 0) {
            zsock_destroy(rd);
            if (!(*rd = net_connect(ZMQ_DEALER, tail_ep, p->sec)))
                return util_err_ctx(LUX_EIO, "shard %u: its tail %s", s, tail_ep);
            snprintf(ep, DB_EP_MAX, "%s", tail_ep);
        }
        uint8_t q[24];
        uint64_t req = ++p->req;
        util_le64(q, req);
        util_le64(q + 8, from);
        util_le32(q + 16, 0); /* the tail's limits */
        util_le32(q + 20, 0);
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_READ, s, ch->epoch)});
        zmsg_addmem(m, q, sizeof q);
        zmsg_send(&m, *rd);
        zpoller_t *poll = zpoller_new(*rd, NULL);
        int64_t until = util_mono_ms() + S_WAIT_MS;
        int code = LUX_ETIMEDOUT;
        text[0] = 0;
        while (code == LUX_ETIMEDOUT && util_mono_ms() < until) {
            if (zpoller_wait(poll, (int) (until - util_mono_ms())) != *rd)
                continue;
            zmsg_t *r = zmsg_recv(*rd);
            net_hdr_t h;
            if (!r || net_hdr_decode(&h, zmsg_first(r))) {
                zmsg_destroy(&r);
                continue;
            }
            if (h.type == NET_READ_REP && zmsg_size(r) == 3) {
                zframe_t *rep = zmsg_next(r), *bf = zmsg_next(r);
                if (zframe_size(rep) != 16 || util_rd64(zframe_data(rep)) != req) {
                    zmsg_destroy(&r); /* an answer to a READ we gave up on */
                    continue;
                }
                if (net_batch_parse(b, zframe_data(bf), zframe_size(bf)) || b->first != from) {
                    zmsg_destroy(&r);
                    zpoller_destroy(&poll);
                    return util_err(LUX_EPROTO, "shard %u: the tail %s sent a malformed batch",
                                    s, tail_ep);
                }
                zpoller_destroy(&poll);
                *last = util_rd64(zframe_data(rep) + 8);
                *keep = r; /* b points into it */
                return 0;
            }
            if (h.type == NET_ERROR)
                net_error_decode(zmsg_next(r), &code, text, sizeof text);
            zmsg_destroy(&r);
        }
        zpoller_destroy(&poll);
        bool moved = code == LUX_EEPOCH || code == LUX_ESTATE || code == LUX_ESHARD ||
                     code == LUX_ETIMEDOUT;
        if (!moved || tries >= S_TRIES)
            return code == LUX_ETIMEDOUT
                       ? util_err(code, "shard %u: its tail %s did not answer a READ within %d "
                                  "s, %d times", s, tail_ep, S_WAIT_MS / 1000, tries + 1)
                       : util_err(code, "shard %u: its tail %s refused a READ: %s", s, tail_ep,
                                  text);
        /* the chain changed, or its tail is silent: ask the master again */
        int rc = s_config(p);
        if (rc)
            return rc;
        zsock_destroy(rd);
    }
}

static int
s_pull_net(s_pull_t *p)
{
    char ep[DB_EP_MAX], keys[PATH_MAX + 8];
    int rc = 0;
    if (db_cluster_tcp(&p->c) &&
        !(p->sec = net_sec_load(db_cluster_path(&p->c, keys, sizeof keys, "keys"))))
        return util_err_ctx(LUX_EIO, "the cluster's keys");
    if (!(p->chains = calloc(p->c.shards, sizeof *p->chains)))
        return util_err(LUX_ENOMEM, "out of memory");
    if (!(p->master = net_connect(ZMQ_DEALER, db_cluster_master_ep(&p->c, ep, sizeof ep), p->sec)))
        return util_err_ctx(LUX_EIO, "the chain master");
    if ((rc = s_config(p)))
        return rc;
    for (uint32_t s = 0; s < p->c.shards && !rc; s++) {
        zsock_t *rd = NULL;
        char at[DB_EP_MAX] = "";
        uint64_t until = UINT64_MAX; /* the tail's last seq at the first READ */
        for (;;) {
            uint64_t from = p->sh[s].last + 1, last = 0;
            if (!p->sh[s].known && p->since > 1)
                from = p->since - 1;
            if (from > until)
                break; /* what was committed when the pull began is here */
            zmsg_t *keep = NULL;
            net_batch_t b;
            if ((rc = s_read(p, s, &rd, at, from, &keep, &b, &last)))
                break;
            if (until == UINT64_MAX)
                until = last;
            if (b.count == 0) {
                zmsg_destroy(&keep);
                break;
            }
            rc = s_take(p, s, &b);
            zmsg_destroy(&keep);
            if (rc)
                break;
        }
        zsock_destroy(&rd);
    }
    return rc;
}

/* --- lux pull -------------------------------------------------------------------------- */

static const char s_help[] =
    "Copies a cluster's log, every shard, into OUT.db (one SQLite file with the views\n"
    "of `lux sql` and a shard column), verifying every event's hash and every signed\n"
    "checkpoint of the witness (DIR/witness, or --witness FILE; the keys of\n"
    "DIR/keys/checkpoint.history, else DIR/keys/checkpoint.public, or those of\n"
    "each --public-key FILE given, one key a line) on the way. Run again, it\n"
    "fetches only what is new. --address reads a running cluster through the protocol\n"
    "(doc/protocol.md: READs at each tail); --dir does too when its head runs, and\n"
    "reads the tail files of a stopped cluster or a finished run. --job keeps one\n"
    "job's events; --since SEQ starts each shard at SEQ. Then: lux sql OUT.db \"...\",\n"
    "lux audit OUT.db. See lux(1).\n";

int
cmd_pull(int argc, char **argv)
{
    const char *dir = NULL, *addr = NULL, *out = NULL, *job = NULL, *witness = NULL;
    db_ckpt_keys_t keys = {0};
    int nkeyfiles = 0;
    unsigned long v = 1;
    static const struct option opts[] = {
        {"dir", required_argument, 0, 'd'},     {"address", required_argument, 0, 'a'},
        {"job", required_argument, 0, 'j'},     {"since", required_argument, 0, 's'},
        {"witness", required_argument, 0, 'W'}, {"public-key", required_argument, 0, 'K'},
        {0}};
    const lux_opt_str_t strs[] = {{'d', &dir}, {'a', &addr}, {'j', &job},
                                  {'W', &witness}, {0}};
    lux_opt_t p = {.cmd = "pull", .usage = s_usage, .help = s_help, .opts = opts, .strs = strs};
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o == 'K') {
            /* several: a key rotation leaves checkpoints of each key */
            if (db_ckpt_keys_add(&keys, optarg))
                return lux_fail("pull", "--public-key: %s", lux_errmsg());
            nkeyfiles++;
        }
        else if (o != 's' || !lux_opt_uint(&p, "--since", ~0UL, false, &v))
            return p.status;
    }
    if (!lux_opt_args(&p, argc, argv, 1, 1, "OUT.db"))
        return p.status;
    out = argv[optind];
    if ((dir != NULL) == (addr != NULL))
        return lux_opt_usage(&p, "one of --dir DIR and --address DIR is required");
    util_id_t jid;
    if (job && (strlen(job) != 32 || util_id_parse(&jid, job)))
        return lux_opt_usage(&p, "--job takes a job ID of 32 hex digits, not '%s'", job);
    lux_pull_opts_t po = {.dir = dir ? dir : addr, .address = addr != NULL, .job = job,
                          .since = v, .out = out, .witness = witness,
                          .keys = nkeyfiles ? &keys : NULL};
    lux_pull_stats_t st;
    if (lux_pull_run(&po, &st))
        return lux_fail("pull", "%s", lux_errmsg());
    char cks[160];
    if (st.unsigned_)
        snprintf(cks, sizeof cks, "; no public key: signed checkpoints not checked");
    else
        snprintf(cks, sizeof cks, ", %" PRIu64 " signed checkpoint%s verified", st.checkpoints,
                 st.checkpoints == 1 ? "" : "s");
    char blobs[160] = "";
    if (st.blobs || st.blobs_missing)
        snprintf(blobs, sizeof blobs, "; %" PRIu64 " recorded put%s copied into blobs/ (%" PRIu64
                 " bytes)%s", st.blobs, st.blobs == 1 ? "" : "s", st.blob_bytes,
                 st.blobs_missing ? ", some recorded puts missing from the cluster's blobs/" : "");
    printf("pulled %" PRIu64 " new events from %u shards of %s (%s), every hash verified%s; "
           "kept %" PRIu64 "%s; %s holds the log up to seq %s (%.2f s)%s\n",
           st.verified, st.shards, st.dir, st.net ? "through the protocol" : "its files", cks,
           st.kept, job ? " of the job" : "", out, st.lasts, st.seconds, blobs);
    if (st.blobs_missing)
        fprintf(stderr, "lux pull: %" PRIu64 " put%s the log says were recorded %s not in %s/blobs:"
                " lux replay of the file will name the tasks that read them\n",
                st.blobs_missing, st.blobs_missing == 1 ? "" : "s",
                st.blobs_missing == 1 ? "is" : "are", st.dir);
    return 0;
}

static int s_copy_blobs(const char *dir, const char *out, lux_pull_stats_t *stats);

int
lux_pull_run(const lux_pull_opts_t *o, lux_pull_stats_t *stats)
{
    s_pull_t p = {0};
    memset(stats, 0, sizeof *stats);
    if (o->job && (strlen(o->job) != 32 || util_id_parse(&p.job, o->job)))
        return util_err(LUX_EINVAL, "--job takes a job ID of 32 hex digits, not '%s'", o->job);
    p.job_only = o->job != NULL;
    p.since = o->since ? o->since : 1;
    const char *src = o->dir, *out = o->out;
    int rc = 0;
    if (db_cluster_load(&p.c, src))
        return util_err_ctx(LUX_ENOTFOUND, "%s is not a cluster's or a run's directory", src);
    p.net = o->address || lux_head_pid(src) > 0;
    if (!(p.sh = calloc(p.c.shards, sizeof *p.sh)) || !(p.tasks = util_idmap_new(0)) ||
        !(p.actors = util_idmap_new(0))) {
        free(p.sh);
        util_idmap_destroy(&p.tasks);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    for (uint32_t s = 0; s < p.c.shards; s++)
        db_event_genesis(p.sh[s].genesis, &p.c.id, s);
    char source[PATH_MAX + 64];
    snprintf(source, sizeof source, "%s %s", p.net ? "address" : "dir", p.c.dir);
    int64_t t0 = util_mono_ns();
    rc = s_ck_load(&p, o, &stats->unsigned_); /* before the first READ */
    if (!rc)
        rc = s_open_file(&p, out, source);
    if (!rc)
        rc = s_ck_file(&p);
    if (!rc && p.job_only) {
        /* what an earlier --job pull kept names the job's tasks and actors */
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(p.db, "SELECT task, actor FROM event WHERE task IS NOT NULL OR"
                                     " actor IS NOT NULL", -1, &st, NULL) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                if (sqlite3_column_bytes(st, 0) == 16)
                    util_idmap_put(p.tasks, sqlite3_column_blob(st, 0), NULL);
                if (sqlite3_column_bytes(st, 1) == 16)
                    util_idmap_put(p.actors, sqlite3_column_blob(st, 1), NULL);
            }
            sqlite3_finalize(st);
        }
    }
    if (!rc)
        rc = p.net ? s_pull_net(&p) : s_pull_files(&p);
    if (!rc)
        rc = s_ck_ends(&p);
    if (p.db) { /* the file complete before its blobs are read from it */
        sqlite3_finalize(p.ins);
        sqlite3_finalize(p.state);
        sqlite3_finalize(p.ck_ins);
        sqlite3_close(p.db);
        p.ins = p.state = p.ck_ins = NULL;
        p.db = NULL;
    }
    if (!rc)
        rc = s_copy_blobs(p.c.dir, out, stats);
    stats->checkpoints = p.checked;
    stats->seconds = (double) (util_mono_ns() - t0) / 1e9;
    stats->verified = p.verified;
    stats->kept = p.kept;
    stats->shards = p.c.shards;
    stats->net = p.net;
    snprintf(stats->dir, sizeof stats->dir, "%s", p.c.dir);
    size_t at = 0;
    for (uint32_t s = 0; s < p.c.shards && at + 24 < sizeof stats->lasts; s++)
        at += (size_t) snprintf(stats->lasts + at, sizeof stats->lasts - at, "%s%" PRIu64,
                                s ? ", " : "", p.sh[s].last);
    sqlite3_finalize(p.ins);
    sqlite3_finalize(p.state);
    sqlite3_finalize(p.ck_ins);
    if (p.db)
        sqlite3_close(p.db);
    zsock_destroy(&p.master);
    net_sec_destroy(&p.sec);
    free(p.chains);
    free(p.sh);
    free(p.cks);
    free(p.ck_line);
    free(p.ck_at);
    util_idmap_destroy(&p.tasks);
    util_idmap_destroy(&p.actors);
    return rc;
}

/* --- recorded puts ---------------------------------------------------------------------- */

/* The recorded puts (exec_blob.h) of the file's object_put events, from
   the cluster's DIR/blobs into blobs/ beside the file, where lux replay
   looks by default: each one not there yet, checked (frame and
   fingerprint) before it is written. A put the log says was recorded but
   DIR/blobs lacks is counted, not an error: replay names it. A small
   put's bytes are in its event (its body), with no blob to copy. */
static int
s_copy_blobs(const char *dir, const char *out, lux_pull_stats_t *stats)
{
    char src[PATH_MAX], dst[PATH_MAX], from[PATH_MAX + 64], to[PATH_MAX + 64];
    const char *slash = strrchr(out, '/');
    snprintf(src, sizeof src, "%s/blobs", dir);
    snprintf(dst, sizeof dst, "%.*sblobs", slash ? (int) (slash - out + 1) : 0, out);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT DISTINCT fp, size FROM event WHERE kind = %d AND"
             " length(fp) = 16 AND body IS NULL AND coalesce(info, '') NOT LIKE 'not recorded%%'",
             DB_K_object_put);
    if (sqlite3_open_v2(out, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = util_err(LUX_ESQL, "%s: the puts to copy: %s", out, sqlite3_errmsg(db));
        goto out;
    }
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        uint8_t fp[16], *bytes = NULL;
        memcpy(fp, sqlite3_column_blob(st, 0), 16);
        int64_t size = sqlite3_column_int64(st, 1);
        exec_blob_path(dst, fp, to, sizeof to);
        if (util_exists(to))
            continue;
        exec_blob_path(src, fp, from, sizeof from);
        if (!util_exists(from)) {
            stats->blobs_missing++;
            continue;
        }
        if ((rc = exec_blob_read(src, fp, (size_t) size, &bytes)))
            break; /* altered or damaged: not copied (the message names it) */
        free(bytes);
        size_t n = 0;
        char *frame = util_read_file(from, &n);
        if (!frame) {
            rc = LUX_EIO;
            break;
        }
        if (!(rc = util_mkdirs(dst, 0755)) && !(rc = util_write_file(to, frame, n, 0644))) {
            stats->blobs++;
            stats->blob_bytes += n;
        }
        free(frame);
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

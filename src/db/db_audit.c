/*  db_audit - the log checked across replicas and against signed
    checkpoints (see db_audit.h for what counts as a problem).

    Per shard: every replica file is opened read-only and its hash chain
    verified; the longest file that verifies is the reference. Because a
    chain hash covers every event before it, two files that verify and
    agree at seq N agree everywhere up to N, so a fork is found by one
    comparison at the shorter file's last seq and located by bisection.

    Signed checkpoints come from two places, each believed only once its
    signature verifies with the public key: the witness file, and the
    `checkpoint` events (kind 20) the supervisor appends to each shard
    (db_ckpt_event). An event's checkpoint must also be in its own shard,
    sign a seq below its own, and (when a witness is given) be a line of
    the witness unless the witness ends before it. Both kinds then bound
    every file alike: a chain member ending before one, or a file whose
    hash at its seq is not the signed one, is a problem. So a log whose
    witness was deleted still proves its past up to its newest checkpoint
    event, and a checkpoint event forged into every replica (hashes
    recomputed) fails its signature. */
#include "db_audit.h"
#include "db_archive.h"
#include "db_chain.h"
#include "db_store.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char path[PATH_MAX];
    db_store_t *st;   /* NULL: missing or would not open */
    bool ok;          /* its hash chain verified (or quick) */
    uint64_t last;
    int pos;          /* in the chain, -1 when not a member */
    uint64_t dropped; /* out of the chain: the first seq of its unacknowledged
                         suffix, which differs from the chain (0: none) */
} s_file_t;

typedef struct {
    db_ckpt_t c;
    int line;          /* its line in the witness, or 0: an event of the log */
    const char *file;  /* an event's: the file holding it (borrowed) */
    uint64_t at;       /* an event's: its own seq */
} s_ck_t;

typedef struct {
    s_ck_t *v;
    size_t n, cap;
} s_cks_t;

typedef struct {
    const db_audit_opts_t *o;
    int problems;
    s_cks_t wit;      /* the witness's verified checkpoints of this cluster, in file order */
    bool have_wit;    /* the witness file was read */
    bool told_no_pk;  /* "checkpoint events not verified" said once */
} s_audit_t;

static void
s_say(s_audit_t *a, bool problem, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (problem)
        a->problems++;
    if (a->o->say)
        a->o->say(a->o->arg, problem, line);
}

static int
s_push(s_cks_t *l, const s_ck_t *ck)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        s_ck_t *n = realloc(l->v, cap * sizeof *n);
        if (!n)
            return util_err(LUX_ENOMEM, "out of memory");
        l->v = n;
        l->cap = cap;
    }
    l->v[l->n++] = *ck;
    return 0;
}

/* Where a checkpoint comes from, for messages. */
static const char *
s_src(const s_audit_t *a, const s_ck_t *ck, char *out, size_t n)
{
    if (ck->line)
        snprintf(out, n, "witness %s line %d", a->o->witness, ck->line);
    else
        snprintf(out, n, "the checkpoint event at seq %llu of %s", (unsigned long long) ck->at,
                 ck->file);
    return out;
}

static int
s_on_line(void *arg, int line, const db_ckpt_t *c)
{
    s_audit_t *a = arg;
    const char *w = a->o->witness;
    if (!c) {
        s_say(a, true, "witness %s line %d: not a checkpoint line", w, line);
        return 0;
    }
    if (!util_id_eq(&c->cluster, &a->o->cluster->id)) {
        s_say(a, true, "witness %s line %d: a checkpoint of another cluster", w, line);
        return 0;
    }
    if (!db_ckpt_keys_verify(c, a->o->keys)) {
        s_say(a, true,
              "witness %s line %d: shard %u seq %llu: bad signature (forged, altered, or"
              " signed with a key not given)",
              w, line, c->shard, (unsigned long long) c->seq);
        return 0;
    }
    if (c->shard >= a->o->cluster->shards) {
        s_say(a, true, "witness %s line %d: shard %u does not exist", w, line, c->shard);
        return 0;
    }
    s_ck_t ck = {.c = *c, .line = line};
    return s_push(&a->wit, &ck);
}

/* The first seq in 1..last where a and b differ, given they differ at last. */
static uint64_t
s_first_diff(db_store_t *a, db_store_t *b, uint64_t last)
{
    uint64_t lo = 0, hi = last; /* agree at lo (the genesis), differ at hi */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        uint8_t ha[DB_HASH_LEN], hb[DB_HASH_LEN];
        if (db_store_hash_at(a, mid, ha) || db_store_hash_at(b, mid, hb) ||
            memcmp(ha, hb, DB_HASH_LEN) != 0)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* The checkpoint events of one file (a replica's, or the shard's archive):
   each checked (db_ckpt_check_event) and against the witness; those that
   hold go into l. Problems said with shard, file and seq. */
static void
s_events(s_audit_t *a, uint32_t s, const char *path, s_cks_t *l)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    const db_ckpt_keys_t *pk = a->o->keys;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT seq, idx, info FROM event WHERE kind = ?1 ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK) {
        s_say(a, true, "shard %u: %s: cannot read its checkpoint events: %s", s, path,
              sqlite3_errmsg(db));
        sqlite3_close(db);
        return;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_bind_int(st, 1, DB_K_checkpoint);
    int step;
    size_t seen = 0, held = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t at = (uint64_t) sqlite3_column_int64(st, 0);
        int64_t idx = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1
                                                                : sqlite3_column_int64(st, 1);
        const char *info = (const char *) sqlite3_column_text(st, 2);
        s_ck_t ck = {.file = path, .at = at};
        seen++;
        if (db_ckpt_check_event(&a->o->cluster->id, s, at, idx, info, pk, &ck.c)) {
            s_say(a, true, "shard %u: %s: seq %llu: a checkpoint event that does not hold: %s",
                  s, path, (unsigned long long) at, lux_errmsg());
            continue;
        }
        if (!pk)
            continue; /* unverified: not believed */
        if (a->have_wit) {
            /* the supervisor fsyncs a checkpoint into the witness before it
               logs it: the same (shard, seq, hash) must be there */
            const s_ck_t *same = NULL, *other = NULL, *later = NULL;
            for (size_t k = 0; k < a->wit.n; k++) {
                const s_ck_t *w = &a->wit.v[k];
                if (w->c.shard != s)
                    continue;
                if (w->c.seq == ck.c.seq && !memcmp(w->c.hash, ck.c.hash, DB_HASH_LEN))
                    same = w;
                else if (w->c.seq == ck.c.seq)
                    other = w;
                else if (w->c.seq > ck.c.seq && !later)
                    later = w;
            }
            if (!same && other) {
                s_say(a, true, "shard %u: %s: seq %llu: the checkpoint event signs another hash"
                      " at seq %llu than witness %s line %d: the key signed two histories",
                      s, path, (unsigned long long) at, (unsigned long long) ck.c.seq,
                      a->o->witness, other->line);
                continue;
            }
            if (!same && later)
                s_say(a, true, "shard %u: %s: seq %llu: the checkpoint of seq %llu it holds is"
                      " not in witness %s, which holds a later one of the shard (line %d):"
                      " lines were removed from the witness",
                      s, path, (unsigned long long) at, (unsigned long long) ck.c.seq,
                      a->o->witness, later->line);
            else if (!same)
                s_say(a, false, "shard %u: %s: seq %llu: the checkpoint of seq %llu it holds is"
                      " newer than witness %s's newest of the shard (an older copy?)",
                      s, path, (unsigned long long) at, (unsigned long long) ck.c.seq,
                      a->o->witness);
        }
        if (s_push(l, &ck))
            break;
        held++;
    }
    if (step != SQLITE_DONE && step != SQLITE_ROW)
        s_say(a, true, "shard %u: %s: reading its checkpoint events: %s", s, path,
              sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (seen && !pk && !a->told_no_pk) {
        s_say(a, false, "checkpoint events in the log not verified: no public key");
        a->told_no_pk = true;
    }
    if (held && !a->o->quick)
        s_say(a, false, "shard %u: %s: signed checkpoint events verified: %zu", s, path, held);
}

static void
s_shard(s_audit_t *a, uint32_t s, const db_chain_t *chain, db_audit_shard_t *out)
{
    const db_cluster_t *c = a->o->cluster;
    uint64_t window = a->o->window ? a->o->window : DB_AUDIT_WINDOW;
    s_file_t *f = calloc(c->replicas, sizeof *f);
    int ref = -1, tail = -1;
    if (!f) {
        s_say(a, true, "shard %u: out of memory", s);
        return;
    }
    if (chain->n)
        tail = (int) chain->m[chain->n - 1].index;

    /* the tail first, then each predecessor, then the others: on a running
       cluster a file read later has grown, so a member read after its
       successor holds at least what that successor held */
    uint32_t *order = calloc(c->replicas, sizeof *order), n = 0;
    if (!order) {
        free(f);
        s_say(a, true, "shard %u: out of memory", s);
        return;
    }
    for (int k = (int) chain->n - 1; k >= 0; k--)
        if (chain->m[k].index < c->replicas)
            order[n++] = chain->m[k].index;
    for (uint32_t i = 0; i < c->replicas; i++)
        if (db_chain_find(chain, i) < 0)
            order[n++] = i;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = order[k];
        uint64_t bad;
        db_cluster_replica_db(c, s, i, f[i].path, sizeof f[i].path);
        f[i].pos = db_chain_find(chain, i);
        if (!util_exists(f[i].path)) {
            s_say(a, f[i].pos >= 0, "shard %u: %s: no such file%s", s, f[i].path,
                  f[i].pos >= 0 ? " (a member of the chain)" : "");
            continue;
        }
        db_store_opts_t so = {.path = f[i].path, .cluster = c->id, .shard = s, .readonly = true};
        if (!(f[i].st = db_store_open(&so))) {
            s_say(a, true, "shard %u: %s: cannot open: %s", s, f[i].path, lux_errmsg());
            continue;
        }
        f[i].last = db_store_last_seq(f[i].st);
        f[i].ok = a->o->quick || db_store_verify(f[i].st, &bad) == 0;
        if (!f[i].ok)
            s_say(a, true, "shard %u: %s: seq %llu: %s", s, f[i].path, (unsigned long long) bad,
                  lux_errmsg());
        /* its archive, when its events start after one (db_archive.h) */
        uint64_t archived = 0;
        if (f[i].ok && !a->o->quick && db_archive_verify(c, s, f[i].path, &bad, &archived)) {
            f[i].ok = false;
            s_say(a, true, "shard %u: %s: archive: seq %llu: %s", s, f[i].path,
                  (unsigned long long) bad, lux_errmsg());
        } else if (f[i].ok && archived && !a->o->quick) {
            s_say(a, false, "shard %u: %s: its archive's %llu events verified from the genesis,"
                  " and the file continues its chain", s, f[i].path, (unsigned long long) archived);
        }
        /* the reference: the longest member (the tail among equals), or
           the longest file when no member verifies */
        bool better = ref < 0 || (f[i].pos >= 0 && f[ref].pos < 0) ||
                      ((f[i].pos >= 0) == (f[ref].pos >= 0) &&
                       (f[i].last > f[ref].last || (f[i].last == f[ref].last && (int) i == tail)));
        if (f[i].ok && better)
            ref = (int) i;
    }

    /* forks: every file against the reference, up to the shorter's end */
    for (uint32_t i = 0; i < c->replicas && ref >= 0 && !a->o->quick; i++) {
        uint8_t hi[DB_HASH_LEN], hr[DB_HASH_LEN];
        uint64_t upto = f[i].last < f[ref].last ? f[i].last : f[ref].last;
        if ((int) i == ref || !f[i].ok || upto == 0)
            continue;
        const db_out_t *gone = i < DB_MAX_REPLICAS ? &chain->out[i] : NULL;
        if (db_store_hash_at(f[i].st, upto, hi) == 0 &&
            db_store_hash_at(f[ref].st, upto, hr) == 0 && memcmp(hi, hr, DB_HASH_LEN) == 0) {
            if (f[i].pos < 0 && f[i].last > upto)
                s_say(a, false, "shard %u: %s: %llu events past seq %llu, where the chain's %s"
                      " ends, out of the chain: never on its tail",
                      s, f[i].path, (unsigned long long) (f[i].last - upto),
                      (unsigned long long) upto, f[ref].path);
            continue;
        }
        uint64_t first = s_first_diff(f[i].st, f[ref].st, upto);
        /* a replica out of the chain past what the chain had committed
           when it left (db_chain.h: master.state): a head's events never
           forwarded, which it truncates when it rejoins (doc/protocol.md
           8.4); at or below it, or in a member, committed events differ */
        if (f[i].pos < 0 && gone && gone->epoch && first > gone->committed) {
            f[i].dropped = first;
            s_say(a, false, "shard %u: %s: %llu unacknowledged events past seq %llu, out of the"
                  " chain (removed at epoch %llu, the tail then at seq %llu; %s differs from"
                  " seq %llu on); dropped when it rejoins",
                  s, f[i].path, (unsigned long long) (f[i].last - first + 1),
                  (unsigned long long) (first - 1), (unsigned long long) gone->epoch,
                  (unsigned long long) gone->committed, f[ref].path, (unsigned long long) first);
            continue;
        }
        char more[160] = "";
        if (f[i].pos < 0 && gone && gone->epoch)
            snprintf(more, sizeof more, " (out of the chain since epoch %llu, when the tail had"
                     " committed seq %llu)", (unsigned long long) gone->epoch,
                     (unsigned long long) gone->committed);
        else if (f[i].pos < 0)
            snprintf(more, sizeof more, " (out of the chain; master.state does not say what the"
                     " chain had committed when it left)");
        s_say(a, true, "shard %u: %s forks from %s at seq %llu: different events from there on%s",
              s, f[i].path, f[ref].path, (unsigned long long) first, more);
    }

    /* members behind the tail, files behind the longest */
    for (uint32_t i = 0; i < c->replicas; i++) {
        if (!f[i].st)
            continue;
        if (tail >= 0 && f[tail].st && f[i].pos >= 0 && (int) i != tail &&
            f[i].last < f[tail].last)
            s_say(a, true,
                  "shard %u: %s (position %d of the chain) ends at seq %llu, before the tail %s"
                  " (seq %llu): a member holds all its successors hold",
                  s, f[i].path, f[i].pos, (unsigned long long) f[i].last, f[tail].path,
                  (unsigned long long) f[tail].last);
        if (ref >= 0 && f[ref].last > f[i].last && f[ref].last - f[i].last > window)
            s_say(a, true,
                  "shard %u: %s ends at seq %llu, %llu events behind %s: more than the"
                  " uncommitted window of %llu",
                  s, f[i].path, (unsigned long long) f[i].last,
                  (unsigned long long) (f[ref].last - f[i].last), f[ref].path,
                  (unsigned long long) window);
    }

    /* signed checkpoints: the witness's of this shard, then the events of
       every file that verified, and of the shard's archive */
    s_cks_t l = {0};
    char src[PATH_MAX + 64], arch[PATH_MAX];
    for (size_t k = 0; k < a->wit.n; k++)
        if (a->wit.v[k].c.shard == s && s_push(&l, &a->wit.v[k]))
            break;
    for (uint32_t i = 0; i < c->replicas; i++)
        if (f[i].st && f[i].ok)
            s_events(a, s, f[i].path, &l);
    if (ref >= 0 && db_store_base(f[ref].st, NULL) > 0 &&
        util_exists(db_archive_path_of(f[ref].path, arch, sizeof arch)))
        s_events(a, s, arch, &l);
    const s_ck_t *newest = NULL;
    for (size_t k = 0; k < l.n; k++)
        if (!newest || l.v[k].c.seq > newest->c.seq)
            newest = &l.v[k];
    for (uint32_t i = 0; i < c->replicas && newest; i++) {
        if (!f[i].st)
            continue;
        if (f[i].last < newest->c.seq) {
            s_say(a, f[i].pos >= 0,
                  "shard %u: %s ends at seq %llu, before the signed checkpoint at seq %llu"
                  " (%s): %s",
                  s, f[i].path, (unsigned long long) f[i].last,
                  (unsigned long long) newest->c.seq, s_src(a, newest, src, sizeof src),
                  f[i].pos >= 0 ? "committed events were cut" : "not in the chain, behind");
        }
        /* the lowest checkpoint this file contradicts */
        const s_ck_t *bad = NULL;
        for (size_t k = 0; k < l.n; k++) {
            const s_ck_t *ck = &l.v[k];
            uint8_t h[DB_HASH_LEN];
            if (ck->c.seq == 0 || ck->c.seq > f[i].last ||
                (f[i].dropped && ck->c.seq >= f[i].dropped))
                continue; /* past its end, or in its unacknowledged suffix */
            if (db_store_hash_at(f[i].st, ck->c.seq, h) == 0 &&
                memcmp(h, ck->c.hash, DB_HASH_LEN) == 0)
                continue;
            if (!bad || ck->c.seq < bad->c.seq)
                bad = ck;
        }
        if (bad)
            s_say(a, true,
                  "shard %u: %s: the hash at seq %llu is not the signed one (%s): events at or"
                  " before seq %llu were changed",
                  s, f[i].path, (unsigned long long) bad->c.seq, s_src(a, bad, src, sizeof src),
                  (unsigned long long) bad->c.seq);
    }

    if (out) {
        out->tail = tail >= 0 ? (uint32_t) tail : UINT32_MAX;
        out->tail_last = tail >= 0 ? f[tail].last : 0;
        out->max_last = 0;
        for (uint32_t i = 0; i < c->replicas; i++)
            if (f[i].last > out->max_last)
                out->max_last = f[i].last;
        out->ckpt_seq = newest ? newest->c.seq : 0;
        if (newest)
            s_src(a, newest, out->ckpt_src, sizeof out->ckpt_src);
    }
    if (!a->o->quick)
        for (uint32_t i = 0; i < c->replicas; i++)
            if (f[i].st && f[i].ok)
                s_say(a, false, "shard %u: %s (%s): %llu events, hash chain verified", s,
                      f[i].path,
                      f[i].pos < 0                      ? "not in the chain"
                      : f[i].pos == (int) chain->n - 1 ? "tail"
                                                        : "member",
                      (unsigned long long) f[i].last);
    for (uint32_t i = 0; i < c->replicas; i++)
        db_store_close(&f[i].st);
    free(l.v);
    free(order);
    free(f);
}

int
db_audit_run(const db_audit_opts_t *o, db_audit_shard_t *shards)
{
    const db_cluster_t *c = o->cluster;
    s_audit_t a = {.o = o};
    db_chain_t *chains = calloc(c->shards, sizeof *chains);
    int rc;
    if (!chains)
        return util_err(LUX_ENOMEM, "out of memory");
    db_chain_load_state(c, chains);
    if (o->witness && o->keys) {
        rc = db_ckpt_each(o->witness, s_on_line, &a);
        a.have_wit = rc == 0;
        if (rc == LUX_ENOTFOUND)
            s_say(&a, false, "witness %s: no such file: no checkpoint to check against",
                  o->witness);
        else if (rc) {
            free(chains);
            free(a.wit.v);
            return rc;
        }
    } else if (o->witness) {
        s_say(&a, false, "witness %s: not checked: no public key", o->witness);
    }
    for (uint32_t s = 0; s < c->shards; s++)
        s_shard(&a, s, &chains[s], shards ? &shards[s] : NULL);
    free(chains);
    free(a.wit.v);
    return a.problems;
}

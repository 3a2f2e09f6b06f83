/*  db_audit - the log checked across replicas and against signed
    checkpoints (see db_audit.h for what counts as a problem).

    Per shard: every replica file is opened read-only and its hash chain
    verified; the longest file that verifies is the reference. Because a
    chain hash covers every event before it, two files that verify and
    agree at seq N agree everywhere up to N, so a fork is found by one
    comparison at the shorter file's last seq and located by bisection.
    Checkpoints come from the witness file, each verified with the public
    key before it is believed. */
#include "db_audit.h"
#include "db_archive.h"
#include "db_chain.h"
#include "db_store.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"

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
} s_file_t;

typedef struct {
    db_ckpt_t c;
    int line;
} s_ck_t;

typedef struct {
    const db_audit_opts_t *o;
    int problems;
    s_ck_t *cks;      /* verified checkpoints of this cluster, in file order */
    size_t ncks, capcks;
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
    if (!db_ckpt_verify(c, a->o->public_key)) {
        s_say(a, true,
              "witness %s line %d: shard %u seq %llu: bad signature (forged, altered, or"
              " signed with another key)",
              w, line, c->shard, (unsigned long long) c->seq);
        return 0;
    }
    if (c->shard >= a->o->cluster->shards) {
        s_say(a, true, "witness %s line %d: shard %u does not exist", w, line, c->shard);
        return 0;
    }
    if (a->ncks == a->capcks) {
        size_t cap = a->capcks ? 2 * a->capcks : 64;
        s_ck_t *n = realloc(a->cks, cap * sizeof *n);
        if (!n)
            return util_err(LUX_ENOMEM, "out of memory");
        a->cks = n;
        a->capcks = cap;
    }
    a->cks[a->ncks].c = *c;
    a->cks[a->ncks].line = line;
    a->ncks++;
    return 0;
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
        if (f[i].ok && (ref < 0 || f[i].last > f[ref].last ||
                        (f[i].last == f[ref].last && (int) i == tail)))
            ref = (int) i;
    }

    /* forks: every file against the longest */
    for (uint32_t i = 0; i < c->replicas && ref >= 0 && !a->o->quick; i++) {
        uint8_t hi[DB_HASH_LEN], hr[DB_HASH_LEN];
        if ((int) i == ref || !f[i].ok || f[i].last == 0)
            continue;
        if (db_store_hash_at(f[i].st, f[i].last, hi) == 0 &&
            db_store_hash_at(f[ref].st, f[i].last, hr) == 0 && memcmp(hi, hr, DB_HASH_LEN) == 0)
            continue;
        uint64_t first = s_first_diff(f[i].st, f[ref].st, f[i].last);
        s_say(a, true, "shard %u: %s forks from %s at seq %llu: different events from there on",
              s, f[i].path, f[ref].path, (unsigned long long) first);
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

    /* signed checkpoints */
    const s_ck_t *newest = NULL;
    for (size_t k = 0; k < a->ncks; k++) {
        const s_ck_t *ck = &a->cks[k];
        if (ck->c.shard != s)
            continue;
        if (!newest || ck->c.seq >= newest->c.seq)
            newest = ck;
    }
    for (uint32_t i = 0; i < c->replicas && newest; i++) {
        if (!f[i].st)
            continue;
        if (f[i].last < newest->c.seq) {
            s_say(a, f[i].pos >= 0,
                  "shard %u: %s ends at seq %llu, before the signed checkpoint at seq %llu"
                  " (witness %s line %d): %s",
                  s, f[i].path, (unsigned long long) f[i].last,
                  (unsigned long long) newest->c.seq, a->o->witness, newest->line,
                  f[i].pos >= 0 ? "committed events were cut" : "not in the chain, behind");
        }
        /* the lowest checkpoint this file contradicts */
        const s_ck_t *bad = NULL;
        for (size_t k = 0; k < a->ncks; k++) {
            const s_ck_t *ck = &a->cks[k];
            uint8_t h[DB_HASH_LEN];
            if (ck->c.shard != s || ck->c.seq == 0 || ck->c.seq > f[i].last)
                continue;
            if (db_store_hash_at(f[i].st, ck->c.seq, h) == 0 &&
                memcmp(h, ck->c.hash, DB_HASH_LEN) == 0)
                continue;
            if (!bad || ck->c.seq < bad->c.seq)
                bad = ck;
        }
        if (bad)
            s_say(a, true,
                  "shard %u: %s: the hash at seq %llu is not the signed one (witness %s line"
                  " %d): events at or before seq %llu were changed",
                  s, f[i].path, (unsigned long long) bad->c.seq, a->o->witness, bad->line,
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
    if (o->witness && o->public_key) {
        rc = db_ckpt_each(o->witness, s_on_line, &a);
        if (rc == LUX_ENOTFOUND)
            s_say(&a, false, "witness %s: no such file: no checkpoint to check against",
                  o->witness);
        else if (rc) {
            free(chains);
            free(a.cks);
            return rc;
        }
    } else if (o->witness) {
        s_say(&a, false, "witness %s: not checked: no public key", o->witness);
    }
    for (uint32_t s = 0; s < c->shards; s++)
        s_shard(&a, s, &chains[s], shards ? &shards[s] : NULL);
    free(chains);
    free(a.cks);
    return a.problems;
}

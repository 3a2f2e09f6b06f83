/*  chainlog - the chain fixture's logs, modelled or on real replica files
    (see chainlog.h). */
#include "chainlog.h"
#include "faultvfs.h"
#include "db/db_store.h"
#include "util/util_buf.h"
#include "util/util_err.h"
#include "util/util_log.h"
#include "tap.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define S_MAXR 8

static struct {
    bool on;
    char dir[PATH_MAX];
    int nr;
    util_id_t cluster;
    uint8_t genesis[DB_HASH_LEN];
    db_store_t *st[S_MAXR];
    uint64_t fn[S_MAXR];        /* events in the file */
    bool died[S_MAXR];          /* a fault fired in its last sync */
    uint64_t pre[S_MAXR], post[S_MAXR]; /* ...which went from pre to post events */
    util_buf_t rec;
} S;

bool
chainlog_is_real(void)
{
    return S.on;
}

const uint8_t *
chainlog_genesis(void)
{
    static const uint8_t zero[DB_HASH_LEN];
    return S.on ? S.genesis : zero;
}

/* The record of value val (its hash field left as it is). */
static void
s_record(uint64_t val, util_buf_t *b)
{
    db_event_t e = {.kind = DB_K_note};
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) val);
    b->len = 0;
    db_event_encode(&e, b);
}

void
chainlog_hash(uint8_t out[DB_HASH_LEN], const uint8_t prev[DB_HASH_LEN], uint64_t seq,
              uint64_t val)
{
    if (S.on) {
        s_record(val, &S.rec);
        db_event_chain(out, prev, seq, S.rec.data, S.rec.len);
        return;
    }
    uint64_t a, b;
    memcpy(&a, prev, 8);
    memcpy(&b, prev + 8, 8);
    a ^= seq * 0x9E3779B97F4A7C15ull + val;
    a ^= a >> 31;
    a *= 0xBF58476D1CE4E5B9ull;
    b ^= a + val * 0x94D049BB133111EBull;
    b ^= b >> 29;
    b *= 0x9E3779B97F4A7C15ull;
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
}

static char *
s_path(int i, char *out, size_t n)
{
    snprintf(out, n, "%s/replica-%d.db", S.dir, i);
    return out;
}

static db_store_t *
s_open(int i)
{
    char p[PATH_MAX + 32];
    db_store_opts_t o = {.path = s_path(i, p, sizeof p), .cluster = S.cluster, .shard = 0};
    return db_store_open(&o);
}

static void
s_rmdir(void)
{
    char cmd[PATH_MAX + 32];
    chainlog_close();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", S.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "# could not remove %s\n", S.dir);
}

int
chainlog_real(const char *dir, int nr, char *why, size_t len)
{
    if (nr > S_MAXR || faultvfs_install()) {
        snprintf(why, len, "chainlog: %s", nr > S_MAXR ? "too many replicas" : "no fault VFS");
        return -1;
    }
    if (dir) {
        snprintf(S.dir, sizeof S.dir, "%s", dir);
    } else {
        snprintf(S.dir, sizeof S.dir, "/dev/shm/lux-t-chainlog-%d", (int) getpid());
        if (mkdir(S.dir, 0700) != 0)
            snprintf(S.dir, sizeof S.dir, "%s", tap_tmpdir());
        else
            tap_atexit(s_rmdir);
    }
    util_log_level = tap_verbose() ? UTIL_LOG_DEBUG : UTIL_LOG_ERROR;
    S.nr = nr;
    util_id_random(&S.cluster);
    db_event_genesis(S.genesis, &S.cluster, 0);
    util_buf_init(&S.rec);
    S.on = true;
    return 0;
}

int
chainlog_reset(int i, char *why, size_t len)
{
    char p[PATH_MAX + 32], f[PATH_MAX + 40];
    if (!S.on)
        return 0;
    db_store_close(&S.st[i]);
    s_path(i, p, sizeof p);
    unlink(p);
    snprintf(f, sizeof f, "%s-wal", p);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", p);
    unlink(f);
    S.fn[i] = 0;
    S.died[i] = false;
    if (!(S.st[i] = s_open(i))) {
        snprintf(why, len, "replica %d: a new file: %s", i, lux_errmsg());
        return -1;
    }
    return 0;
}

int
chainlog_sync(int i, const ent_t *log, uint64_t n, long k, char *why, size_t len)
{
    if (!S.on || !S.st[i] || n == S.fn[i])
        return 0;
    int rc = 0;
    if (k > 0)
        faultvfs_arm(k);
    if (n < S.fn[i]) {
        rc = db_store_truncate(S.st[i], n);
    } else if (!(rc = db_store_begin(S.st[i]))) {
        for (uint64_t s = S.fn[i] + 1; s <= n && !rc; s++) {
            s_record(log[s - 1].val, &S.rec);
            memcpy(S.rec.data + S.rec.len - DB_HASH_LEN, log[s - 1].hash, DB_HASH_LEN);
            rc = db_store_put(S.st[i], s, S.rec.data, S.rec.len);
        }
        if (!rc)
            rc = db_store_commit(S.st[i]);
        else
            db_store_rollback(S.st[i]);
    }
    char err[256];
    snprintf(err, sizeof err, "%s", rc ? lux_errmsg() : "");
    bool fired = false;
    if (k > 0) {
        /* a failed operation closes while the files still fail: the
           process died there. The fault counts when the VFS says it
           fired, whatever SQLite reported: a failure it swallowed (an
           automatic checkpoint after the commit) kills the process all
           the same, and nothing after it reached the files. */
        if (rc || faultvfs_fired())
            db_store_close(&S.st[i]);
        fired = faultvfs_disarm();
    }
    if (fired) {
        S.died[i] = true;
        S.pre[i] = S.fn[i];
        S.post[i] = n;
        return 1;
    }
    if (rc) {
        snprintf(why, len, "replica %d: %s of its file to %llu events failed without a fault: %s",
                 i, n < S.fn[i] ? "the cut" : "the append", (unsigned long long) n, err);
        return -1;
    }
    S.fn[i] = n;
    return 0;
}

/* Read the file of replica i into out (at most max events). The count,
   or -1 (why). */
static int64_t
s_read(int i, ent_t *out, uint64_t max, char *why, size_t len)
{
    util_buf_t b;
    uint32_t got = 0;
    uint64_t bad = 0;
    int64_t n = -1;
    util_buf_init(&b);
    if (db_store_verify(S.st[i], &bad))
        snprintf(why, len, "replica %d: its file's chain breaks at seq %llu: %s", i,
                 (unsigned long long) bad, lux_errmsg());
    else if (db_store_last_seq(S.st[i]) > max)
        snprintf(why, len, "replica %d: its file holds %llu events, more than the fixture's"
                 " log can", i, (unsigned long long) db_store_last_seq(S.st[i]));
    else if (db_store_last_seq(S.st[i]) &&
             db_store_read(S.st[i], 1, UINT32_MAX, SIZE_MAX, &b, &got))
        snprintf(why, len, "replica %d: reading its file: %s", i, lux_errmsg());
    else {
        size_t off = 0;
        for (uint32_t k = 0; k < got; k++) {
            uint32_t rl = util_rd32(b.data + off);
            db_event_t e;
            if (db_event_decode(&e, b.data + off + 4, rl)) {
                snprintf(why, len, "replica %d: seq %u does not decode", i, k + 1);
                util_buf_free(&b);
                return -1;
            }
            out[k].val = (uint64_t) e.idx;
            memcpy(out[k].hash, b.data + off + 4 + rl - DB_HASH_LEN, DB_HASH_LEN);
            off += 4 + rl;
        }
        n = got;
    }
    util_buf_free(&b);
    return n;
}

static ent_t s_file[4096];

int
chainlog_reload(int i, ent_t *log, uint64_t *n, char *why, size_t len)
{
    if (!S.on)
        return 0;
    db_store_close(&S.st[i]);
    if (!(S.st[i] = s_open(i))) {
        snprintf(why, len, "replica %d: its file does not reopen: %s", i, lux_errmsg());
        return -1;
    }
    int64_t got = s_read(i, s_file, sizeof s_file / sizeof *s_file, why, len);
    if (got < 0)
        return -1;
    uint64_t g = (uint64_t) got;
    if (S.died[i] ? g != S.pre[i] && g != S.post[i] : g != *n) {
        snprintf(why, len, "replica %d restarts with %llu events in its file; it had %llu%s%llu",
                 i, (unsigned long long) g, (unsigned long long) (S.died[i] ? S.pre[i] : *n),
                 S.died[i] ? " before the failed write, and that write made it " : ", not ",
                 (unsigned long long) (S.died[i] ? S.post[i] : *n));
        return -1;
    }
    for (uint64_t k = 0; k < g; k++)
        if (s_file[k].val != log[k].val || memcmp(s_file[k].hash, log[k].hash, DB_HASH_LEN)) {
            snprintf(why, len, "replica %d: its file differs from its log at seq %llu", i,
                     (unsigned long long) k + 1);
            return -1;
        }
    *n = g;
    S.fn[i] = g;
    S.died[i] = false;
    return 0;
}

int
chainlog_check(int i, const ent_t *log, uint64_t n, char *why, size_t len)
{
    if (!S.on || !S.st[i])
        return 0;
    int64_t got = s_read(i, s_file, sizeof s_file / sizeof *s_file, why, len);
    if (got < 0)
        return -1;
    if ((uint64_t) got != n) {
        snprintf(why, len, "replica %d: its file holds %lld events, its log %llu", i,
                 (long long) got, (unsigned long long) n);
        return -1;
    }
    for (uint64_t k = 0; k < n; k++)
        if (s_file[k].val != log[k].val || memcmp(s_file[k].hash, log[k].hash, DB_HASH_LEN)) {
            snprintf(why, len, "replica %d: its file differs from its log at seq %llu", i,
                     (unsigned long long) k + 1);
            return -1;
        }
    return 0;
}

void
chainlog_close(void)
{
    for (int i = 0; i < S_MAXR; i++)
        db_store_close(&S.st[i]);
    if (S.on)
        util_buf_free(&S.rec);
    S.on = false;
}

uint64_t
chainlog_file_last(const char *path, uint64_t at, uint8_t last_hash[DB_HASH_LEN],
                   uint8_t hash_at[DB_HASH_LEN], bool *verified)
{
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    uint64_t last, bad;
    *verified = false;
    if (!st)
        return 0;
    last = db_store_last_seq(st);
    memcpy(last_hash, db_store_last_hash(st), DB_HASH_LEN);
    if (hash_at && db_store_hash_at(st, at, hash_at))
        memset(hash_at, 0, DB_HASH_LEN);
    *verified = db_store_verify(st, &bad) == 0;
    if (!*verified)
        diag("%s: %s", path, lux_errmsg());
    db_store_close(&st);
    return last;
}

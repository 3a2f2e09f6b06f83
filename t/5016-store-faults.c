/* 5016-store-faults: the real storage code (db_store over SQLite and the
   log writer's lux-wal VFS) under a write failure at every step of a
   truncation and of an append (issue 26: "put the truncation path under
   write failures injected at every step"). t/5012's fixture models the
   replica's reaction to such a failure (it stops and rejoins); this test
   runs what the model takes for granted: that whatever step the failure
   hits, the file a restarted replica opens is the log before the cut or
   the log after it, never a mix; that its hash chain verifies; that its
   table of clients (which decides what a resent event is) matches its
   events; and that the restarted store cuts, appends and reads on.

   For k = 1, 2, ... until an armed operation completes without reaching
   its k-th write: a store of 300 events from three clients (several
   commits), truncated after seq 170 (or appended 40 events) with the k-th
   write, sync or truncate of the SQLite files failing and every one after
   it (t/lib/faultvfs.h: the process died there); closed while still
   failing; reopened as a restarted replica would. */
#include "tap.h"
#include "lib/faultvfs.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N0 300     /* events before the operation */
#define CUT 170    /* the truncation keeps seqs 1..CUT */
#define MORE 40    /* the append adds this many */
#define CLIENTS 3

static util_id_t s_cluster, s_client[CLIENTS];
static uint8_t s_hash[N0 + MORE + 1][DB_HASH_LEN]; /* the chain as made, by seq */
static char s_path[4096];

/* The record of event seq: a note of client seq % CLIENTS, cseq its
   count of events from that client so far; hashed after prev. */
static void
s_record(uint64_t seq, const uint8_t prev[DB_HASH_LEN], util_buf_t *b)
{
    db_event_t e = {.kind = DB_K_note, .ts = (int64_t) seq * 1000};
    DB_SET_ID(&e, client, DB_F_CLIENT, &s_client[seq % CLIENTS]);
    e.cseq = (seq - 1) / CLIENTS + 1;
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) seq);
    db_event_set_info(&e, "an event a failed write may hit");
    b->len = 0;
    db_event_encode(&e, b);
    db_event_chain(b->data + b->len - DB_HASH_LEN, prev, seq, b->data, b->len);
}

/* Append seqs from..to in commits of `per` events. 0 or the store's code. */
static int
s_append(db_store_t *st, uint64_t from, uint64_t to, uint64_t per)
{
    util_buf_t b;
    int rc = 0;
    util_buf_init(&b);
    for (uint64_t s = from; s <= to && !rc; s += per) {
        if ((rc = db_store_begin(st)))
            break;
        for (uint64_t q = s; q < s + per && q <= to && !rc; q++) {
            s_record(q, q == 1 ? db_store_genesis(st) : s_hash[q - 1], &b);
            memcpy(s_hash[q], b.data + b.len - DB_HASH_LEN, DB_HASH_LEN);
            rc = db_store_put(st, q, b.data, b.len);
        }
        if (!rc)
            rc = db_store_commit(st);
        else
            db_store_rollback(st);
    }
    util_buf_free(&b);
    return rc;
}

static db_store_t *
s_open(void)
{
    db_store_opts_t o = {.path = s_path, .cluster = s_cluster, .shard = 0};
    return db_store_open(&o);
}

static void
s_fresh(void)
{
    char f[4200];
    unlink(s_path);
    snprintf(f, sizeof f, "%s-wal", s_path);
    unlink(f);
    snprintf(f, sizeof f, "%s-shm", s_path);
    unlink(f);
    db_store_t *st = s_open();
    if (!st || s_append(st, 1, N0, 37))
        bail("a store of %d events: %s", N0, lux_errmsg());
    db_store_close(&st);
}

typedef struct {
    uint64_t cseq[CLIENTS], seq[CLIENTS];
    int seen;
    bool wrong;
} s_clients_t;

static int
s_on_client(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq)
{
    s_clients_t *c = arg;
    for (int k = 0; k < CLIENTS; k++)
        if (util_id_eq(client, &s_client[k])) {
            c->cseq[k] = cseq;
            c->seq[k] = seq;
            c->seen++;
            return 0;
        }
    c->wrong = true;
    return 0;
}

/* The reopened store holds 1..last of the chain as made, verifies, and its
   client table names each client's newest event. "" or what is wrong. */
static const char *
s_check(db_store_t *st, uint64_t last, char *why, size_t n)
{
    uint64_t bad = 0;
    uint8_t h[DB_HASH_LEN];
    why[0] = '\0';
    if (db_store_last_seq(st) != last)
        snprintf(why, n, "it ends at seq %llu, not %llu", (unsigned long long) db_store_last_seq(st),
                 (unsigned long long) last);
    else if (db_store_verify(st, &bad))
        snprintf(why, n, "its chain breaks at seq %llu: %s", (unsigned long long) bad,
                 lux_errmsg());
    else if (last && (db_store_hash_at(st, last, h) || memcmp(h, s_hash[last], DB_HASH_LEN)))
        snprintf(why, n, "its hash at seq %llu is not the one made", (unsigned long long) last);
    if (why[0])
        return why;
    s_clients_t c = {{0}, {0}, 0, false};
    if (db_store_clients(st, s_on_client, &c)) {
        snprintf(why, n, "its clients: %s", lux_errmsg());
        return why;
    }
    for (int k = 0; k < CLIENTS; k++) {
        /* the newest event of client k at or below last */
        uint64_t s = last;
        while (s >= 1 && s % CLIENTS != (uint64_t) k)
            s--;
        uint64_t cseq = s ? (s - 1) / CLIENTS + 1 : 0;
        if (s && (c.cseq[k] != cseq || c.seq[k] != s)) {
            snprintf(why, n, "client %d's newest is recorded as cseq %llu at seq %llu, its events"
                     " say cseq %llu at seq %llu", k, (unsigned long long) c.cseq[k],
                     (unsigned long long) c.seq[k], (unsigned long long) cseq,
                     (unsigned long long) s);
            return why;
        }
    }
    if (c.wrong)
        snprintf(why, n, "its client table names a client no event has");
    return why;
}

/* One operation (truncate, or append when `more`) with the k-th write
   failing; the checks of the reopened store. Returns whether the fault
   fired (false: k is past the operation's last write). */
static bool
s_round(long k, bool more, int *failed)
{
    char why[512];
    uint64_t pre = N0, post = more ? N0 + MORE : CUT;
    s_fresh();
    db_store_t *st = s_open();
    if (!st)
        bail("open: %s", lux_errmsg());
    faultvfs_arm(k);
    int rc = more ? s_append(st, N0 + 1, N0 + MORE, MORE) : db_store_truncate(st, CUT);
    char err[256];
    snprintf(err, sizeof err, "%s", rc ? lux_errmsg() : "");
    db_store_close(&st); /* still failing: the process died */
    bool fired = faultvfs_disarm();
    /* the restarted replica */
    if (!(st = s_open())) {
        (*failed)++;
        ok(0, "%s, write %ld failing: the store reopens (%s)", more ? "append" : "truncation", k,
           lux_errmsg());
        return fired;
    }
    uint64_t last = db_store_last_seq(st);
    const char *bad = "";
    if (last != pre && last != post)
        snprintf(why, sizeof why, "it ends at seq %llu: neither before (%llu) nor after (%llu)",
                 (unsigned long long) last, (unsigned long long) pre, (unsigned long long) post),
            bad = why;
    else if (rc == 0 && last != post)
        snprintf(why, sizeof why, "the operation said it succeeded, the file ends at %llu",
                 (unsigned long long) last),
            bad = why;
    else
        bad = s_check(st, last, why, sizeof why);
    /* and it goes on: the cut made again, events appended after it */
    if (!bad[0] && (db_store_truncate(st, CUT) || s_append(st, CUT + 1, CUT + 20, 7)))
        snprintf(why, sizeof why, "cutting and appending after the restart: %s", lux_errmsg()),
            bad = why;
    if (!bad[0])
        bad = s_check(st, CUT + 20, why, sizeof why);
    db_store_close(&st);
    if (bad[0] || tap_verbose())
        ok(!bad[0], "%s, write %ld of it failing%s%s (rc %d): the restarted store %s",
           more ? "append" : "truncation", k, rc ? ": " : "", err, rc,
           bad[0] ? bad : "holds the log before or after, and goes on");
    if (bad[0])
        (*failed)++;
    return fired;
}

int
main(void)
{
    util_log_level = tap_verbose() ? UTIL_LOG_DEBUG : UTIL_LOG_ERROR; /* "truncating ..." */
    if (faultvfs_install())
        bail("the fault VFS would not register");
    util_id_random(&s_cluster);
    for (int k = 0; k < CLIENTS; k++)
        util_id_random(&s_client[k]);
    snprintf(s_path, sizeof s_path, "%s/replica.db", tap_tmpdir());

    for (int more = 0; more < 2; more++) {
        int failed = 0;
        long k = 1;
        while (s_round(k, more, &failed) && k < 10000)
            k++;
        ok(k > 1 && k < 10000, "%s: %ld steps with a write of their own, each failed in turn",
           more ? "an append of 40 events" : "a truncation", k - 1);
        ok(failed == 0, "%s: after a failure at any of them the restarted store held the log"
           " before or after it, verified, knew its clients and went on (%d wrong)",
           more ? "append" : "truncation", failed);
    }
    return done_testing();
}

/* 1011-db-truncate-clients: after a truncation, the table of the newest
   event ID of each client (client_seen, and the store's map of it) is
   exact, whether it is read at once or after reopening: a client whose
   events are all before the cut keeps its newest; one cut in part goes
   back to its event before the cut (found by scanning back, however far);
   one cut entirely is forgotten. The rebuild reads the cut range and scans
   back per cut client, never the whole log (issue 26: 6 s at 2.7 million
   events). LUX_TRUNC_EVENTS=N appends N events first and reports how long
   the truncation took (a figure, not a check). */
#include "tap.h"
#include "lib/tamper.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_idmap.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCL 4

static util_id_t s_cluster, s_cl[NCL];
static uint64_t s_cseq[NCL];
static uint64_t s_want_cseq[NCL], s_want_seq[NCL];

/* Append n events of client k in one transaction. */
static void
s_make(void *arg, int i, uint64_t seq, db_event_t *e)
{
    int k = *(int *) arg;
    (void) i;
    e->ts = (int64_t) seq;
    e->kind = DB_K_note;
    e->client = s_cl[k];
    e->cseq = ++s_cseq[k];
    e->mask |= DB_F_CLIENT;
}
static int
s_append(db_store_t *st, int k, int n)
{
    return tamper_store_append(st, n, s_make, &k);
}

static int s_seen_n, s_seen_bad;

static int
s_check(void *arg, const util_id_t *c, uint64_t cseq, uint64_t seq)
{
    (void) arg;
    s_seen_n++;
    for (int k = 0; k < NCL; k++)
        if (util_id_eq(c, &s_cl[k])) {
            if (cseq != s_want_cseq[k] || seq != s_want_seq[k]) {
                diag("client %d: (%llu, %llu), want (%llu, %llu)", k, (unsigned long long) cseq,
                     (unsigned long long) seq, (unsigned long long) s_want_cseq[k],
                     (unsigned long long) s_want_seq[k]);
                s_seen_bad++;
            }
            return 0;
        }
    diag("a client the test does not know");
    s_seen_bad++;
    return 0;
}

static void
s_expect(db_store_t *st, int want_clients, const char *when)
{
    s_seen_n = s_seen_bad = 0;
    db_store_clients(st, s_check, NULL);
    ok(s_seen_n == want_clients && s_seen_bad == 0, "%s: %d clients, each with its newest "
       "event ID before the cut (%d listed, %d wrong)", when, want_clients, s_seen_n, s_seen_bad);
}

static int
s_fail_one(void *arg, const util_id_t *c, uint64_t cseq, uint64_t seq)
{
    (void) arg, (void) c, (void) cseq, (void) seq;
    s_seen_n++;
    return LUX_ENOMEM;
}

int
main(void)
{
    char path[512];
    util_id_random(&s_cluster);
    for (int k = 0; k < NCL; k++)
        util_id_random(&s_cl[k]);
    snprintf(path, sizeof path, "%s/shard.db", tap_tmpdir());
    db_store_opts_t o = {.path = path, .cluster = s_cluster, .shard = 0};
    db_store_t *st = db_store_open(&o);
    if (!st)
        bail("%s", lux_errmsg());

    /* client 3: one event at the very start, then nothing until the cut */
    is_int(s_append(st, 3, 1), 0, "client 3 appends once");
    s_want_cseq[3] = 1;
    s_want_seq[3] = 1;
    long extra = getenv("LUX_TRUNC_EVENTS") ? atol(getenv("LUX_TRUNC_EVENTS")) : 0;
    for (long done = 0; done < extra; done += 10000)
        if (s_append(st, 0, 10000))
            bail("%s", lux_errmsg());
    /* clients 0 and 1 interleave, many batches (client_seen is written
       every so often, so the cut falls after its last write) */
    for (int r = 0; r < 300; r++) {
        if (s_append(st, 0, 7) || s_append(st, 1, 5))
            bail("%s", lux_errmsg());
    }
    s_want_cseq[0] = s_cseq[0];
    s_want_seq[0] = db_store_last_seq(st) - 5;
    uint64_t cut = db_store_last_seq(st) - 2; /* inside client 1's last batch */
    s_want_cseq[1] = s_cseq[1] - 2;
    s_want_seq[1] = cut;
    /* after the cut: more of client 1, client 3 again, client 2 only */
    if (s_append(st, 1, 20) || s_append(st, 3, 4) || s_append(st, 2, 9) || s_append(st, 1, 3))
        bail("%s", lux_errmsg());
    uint64_t last = db_store_last_seq(st);

    int64_t t0 = (util_mono_ns() / 1000);
    int rc = db_store_truncate(st, cut);
    int64_t us = (util_mono_ns() / 1000) - t0;
    is_int(rc, 0, "truncate %llu..%llu (%s)", (unsigned long long) cut + 1,
           (unsigned long long) last, rc ? lux_errmsg() : "ok");
    if (extra)
        diag("truncating %llu events of %llu took %lld us", (unsigned long long) (last - cut),
             (unsigned long long) last, (long long) us);
    is_int((int64_t) db_store_last_seq(st), (int64_t) cut, "the store ends at the cut");
    s_expect(st, 3, "at once");
    db_store_close(&st);

    st = db_store_open(&o);
    if (!st)
        bail("%s", lux_errmsg());
    s_expect(st, 3, "reopened");
    /* and appends go on from there: client 2 starts again at 1 */
    s_cseq[2] = 0;
    s_cseq[1] = s_want_cseq[1];
    ok(s_append(st, 2, 2) == 0 && s_append(st, 1, 1) == 0, "appends go on after the cut");
    s_want_cseq[2] = 2;
    s_want_seq[2] = db_store_last_seq(st) - 1;
    s_want_cseq[1]++;
    s_want_seq[1] = db_store_last_seq(st);
    s_expect(st, 4, "after more appends");

    /* a visitor that fails (the replica's, out of memory: db_replica.c
       s_setup) stops the walk, and its code is what the walk returns */
    s_seen_n = 0;
    is_int(db_store_clients(st, s_fail_one, NULL), LUX_ENOMEM,
           "a visitor's failure stops db_store_clients, which returns its code");
    is_int(s_seen_n, 1, "... after the one client it failed on");
    db_store_close(&st);
    return done_testing();
}

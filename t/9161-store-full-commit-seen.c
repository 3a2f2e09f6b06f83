/* 9161-store-full-commit-seen: a commit that fails (a full disk) leaves
   the store's table of the newest event ID of each client (client_seen and
   the map behind it, which decides what a resent event is) as the file's
   events say, once the store goes on and is closed with room again, as a
   replica does when its disk fills and is freed (t/5304). Before: the
   failed commit's events stayed in the map, so the table written at close
   counted them as seen, and a restarted replica skipped the client's
   resends of them as duplicates (events lost; t/5304 at 32 MiB: a client's
   cseq jumped 10906 -> 10914 in the file); or the failed commit had marked
   the map's entries written, so the close wrote seen_seq past rows it did
   not write, and the restarted replica expected an event the client had
   long had acknowledged (LUX_EGAP for ever: 292,000 log lines in 25 s).

   Two rounds, one per way: the failed commit when client_seen's write is
   not due (its events in the map), and when it is (entries marked
   written). Each: a store, commits of client 0, a commit whose writes fail
   (t/lib/faultvfs), disarmed, closed, reopened: client 0's newest event ID
   is the last committed one. (This test is a 9xxx number because the
   session that wrote it was given those.) */
#include "tap.h"
#include "lib/faultvfs.h"
#include "lib/tamper.h"
#include "db/db_store.h"
#include "util/util_err.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static util_id_t s_cluster;
static tamper_client_t s_cl; /* the log client writing the events */

static uint64_t s_got_cseq, s_got_seq;

static void
s_round(int round, bool due)
{
    char path[512];
    snprintf(path, sizeof path, "%s/shard%d.db", tap_tmpdir(), round);
    db_store_opts_t o = {.path = path, .cluster = s_cluster, .shard = 0};
    db_store_t *st = db_store_open(&o);
    if (!st)
        bail("%s", lux_errmsg());
    s_cl.cseq = 0;
    /* the first commit writes client_seen (none written yet) ... */
    is_int(tamper_store_append(st, 10, tamper_client_make, &s_cl), 0,
           "round %d: 10 events committed", round);
    /* ... the next within 200 ms does not, unless it is due */
    is_int(tamper_store_append(st, 5, tamper_client_make, &s_cl), 0, "round %d: 5 more committed",
           round);
    uint64_t last_cseq = s_cl.cseq, last_seq = db_store_last_seq(st);
    if (due)
        usleep(300 * 1000); /* past S_SEEN_MS: the failing commit writes client_seen */
    faultvfs_arm(1);
    int rc = tamper_store_append(st, 5, tamper_client_make, &s_cl);
    bool fired = faultvfs_disarm();
    ok(rc != 0 && fired, "round %d: a commit whose writes fail fails (%s)", round,
       rc ? lux_errmsg() : "it did not");
    if (rc != 0)
        db_store_rollback(st); /* as the replica's writer does (db_replica_pipe.c) */
    is_int(db_store_last_seq(st), last_seq, "round %d: the store's last seq is the committed one",
           round);
    db_store_close(&st); /* with room again: writes client_seen */
    st = db_store_open(&o);
    if (!st)
        bail("reopen: %s", lux_errmsg());
    tamper_client_seen(st, &s_cl.id, &s_got_cseq, &s_got_seq);
    ok(s_got_cseq == last_cseq && s_got_seq == last_seq,
       "round %d (client_seen %s): after the failed commit and a reopen, the client's newest "
       "event is the last committed one: (cseq %llu, seq %llu), want (%llu, %llu)",
       round, due ? "due" : "not due", (unsigned long long) s_got_cseq,
       (unsigned long long) s_got_seq, (unsigned long long) last_cseq,
       (unsigned long long) last_seq);
    db_store_close(&st);
}

int
main(void)
{
    if (faultvfs_install() != 0)
        bail("faultvfs_install failed");
    util_id_random(&s_cluster);
    util_id_random(&s_cl.id);
    s_round(1, false);
    s_round(2, true);
    return done_testing();
}

/* 1017-db-audit-out-tail: `lux audit` and the tail of a replica that is
   out of its chain (t/5020 seed 65, stop 44). A head killed and never
   restarted keeps the events it wrote and never forwarded; the chain's
   new head gave those seqs to other events, so the file forks from the
   chain's. That suffix was never acknowledged, and the replica
   truncates it when it rejoins (doc/protocol.md 8.4): a note, not a
   problem. What bounds it is master.state's record of the removal (the
   seq the tail had committed then, db_chain.h): a fork past it in a
   replica out of the chain is a note; at or before it, with no record,
   or in a chain member, a PROBLEM (exit 1).

   A stopped 3-replica cluster of 30 events (signed at its stop: the
   witness holds a checkpoint at seq 30) is copied for each case, its
   master.state rewritten (chain 1 2, replica 0 out or not) and
   replica 0's file given other events after a seq:
     - forked after 20 (23 events), out, committed 20: a note, exit 0;
     - the same, committed 21, or no out record: PROBLEM at seq 21;
     - the same with replica 0 a member: PROBLEM;
     - forked after 27 (33 events: longer than the chain), out,
       committed 27: a note; the chain's members are not reported as
       forking from it, nor its file as contradicting the checkpoint at
       30, which is in its dropped suffix;
     - the same, committed 28: PROBLEM at 28, and the checkpoint too;
     - the chain's 30 and 3 more (no fork), out: a note, exit 0. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_chain.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static db_cluster_t s_c;
static char s_out[65536];

static void
s_other(void *arg, int i, uint64_t seq, db_event_t *e)
{
    (void) seq;
    tamper_client_make(arg, i, seq, e);
    db_event_set_info(e, "written by a head that died before forwarding it");
}

/* A copy of the cluster with master.state's text, replica 0 cut after
   `after` (UINT64_MAX: not cut) and given n other events. */
static const char *
s_case(const char *name, const char *state, uint64_t after, int n, char *dir, size_t len)
{
    char path[PATH_MAX];
    tamper_copy(s_c.dir, name, dir, len);
    snprintf(path, sizeof path, "%s/master.state", dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(state, f) < 0 || fclose(f))
        bail("%s", path);
    db_store_opts_t o = {.path = tamper_db(dir, 0, 0, path, sizeof path), .cluster = s_c.id};
    db_store_t *st = db_store_open(&o);
    tamper_client_t cl = {0};
    util_id_random(&cl.id);
    if (!st || (after != UINT64_MAX && db_store_truncate(st, after)) ||
        tamper_store_append(st, n, s_other, &cl))
        bail("%s: %s", path, lux_errmsg());
    db_store_close(&st);
    return dir;
}

/* lux audit of dir: its exit status, each of want in its output, none
   of never. */
static void
s_audit(const char *what, const char *dir, int want_rc, const char *const *want,
        const char *const *never)
{
    int rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s", dir);
    bool good = rc == want_rc;
    for (int k = 0; want && want[k]; k++)
        if (!strstr(s_out, want[k])) {
            good = false;
            diag("missing: %s", want[k]);
        }
    for (int k = 0; never && never[k]; k++)
        if (strstr(s_out, never[k])) {
            good = false;
            diag("unexpected: %s", never[k]);
        }
    ok(good, "%s: exit %d (want %d)", what, rc, want_rc);
    if (!good || tap_verbose())
        diag("%s", s_out);
}

int
main(void)
{
    char dir[PATH_MAX], state[256], w1[PATH_MAX + 64], w2[PATH_MAX + 64];
    fx_start(&s_c, 1, 3, "--log-only");
    db_client_t *cl = fx_client(&s_c, 64, 1024);
    fx_notes_spread(cl, 30, "an event of the chain", 0);
    db_client_destroy(&cl);
    fx_stop(&s_c);
    db_chain_t ch[1];
    if (db_chain_load_state(&s_c, ch))
        bail("master.state: %s", lux_errmsg());
    uint64_t e = ch[0].epoch + 1;
    char r0[PATH_MAX];
    tamper_db(s_c.dir, 0, 0, r0, sizeof r0);
    if (tamper_last(r0) != 30)
        bail("replica 0 holds %llu events, not 30", (unsigned long long) tamper_last(r0));

    /* past what was committed when it left: a note */
    snprintf(state, sizeof state,
             "shard 0 epoch %llu chain 1 2\nout shard 0 replica 0 epoch %llu committed 20\n",
             (unsigned long long) e, (unsigned long long) e);
    s_case("past", state, 20, 3, dir, sizeof dir);
    snprintf(w1, sizeof w1, "%s/shard-0/replica-0.db: 3 unacknowledged events past seq 20, out"
             " of the chain (removed at epoch %llu, the tail then at seq 20;", dir,
             (unsigned long long) e);
    s_audit("forked after the seq committed when it left", dir, 0,
            (const char *[]) {w1, "dropped when it rejoins", NULL},
            (const char *[]) {"PROBLEM", "forks from", NULL});

    /* at or before it: a problem */
    snprintf(state, sizeof state,
             "shard 0 epoch %llu chain 1 2\nout shard 0 replica 0 epoch %llu committed 21\n",
             (unsigned long long) e, (unsigned long long) e);
    s_case("at", state, 20, 3, dir, sizeof dir);
    snprintf(w1, sizeof w1, "PROBLEM: shard 0: %s/shard-0/replica-0.db forks from %s/shard-0/"
             "replica-2.db at seq 21", dir, dir);
    s_audit("forked at the seq committed when it left", dir, 1,
            (const char *[]) {w1, "when the tail had committed seq 21", NULL},
            (const char *[]) {"unacknowledged", NULL});

    /* no record of what was committed: a problem */
    snprintf(state, sizeof state, "shard 0 epoch %llu chain 1 2\n", (unsigned long long) e);
    s_case("norecord", state, 20, 3, dir, sizeof dir);
    snprintf(w1, sizeof w1, "PROBLEM: shard 0: %s/shard-0/replica-0.db forks from %s/shard-0/"
             "replica-2.db at seq 21", dir, dir);
    s_audit("forked, out of the chain, no record of its removal", dir, 1,
            (const char *[]) {w1, "master.state does not say", NULL},
            (const char *[]) {"unacknowledged", NULL});

    /* a member: a problem */
    snprintf(state, sizeof state, "shard 0 epoch %llu chain 0 1 2\n", (unsigned long long) e);
    s_case("member", state, 20, 3, dir, sizeof dir);
    snprintf(w1, sizeof w1, "PROBLEM: shard 0: %s/shard-0/replica-0.db forks from %s/shard-0/"
             "replica-2.db at seq 21", dir, dir);
    s_audit("forked, a member of the chain", dir, 1, (const char *[]) {w1, NULL},
            (const char *[]) {"unacknowledged", NULL});

    /* longer than the chain, past its checkpoint at 30 */
    snprintf(state, sizeof state,
             "shard 0 epoch %llu chain 1 2\nout shard 0 replica 0 epoch %llu committed 27\n",
             (unsigned long long) e, (unsigned long long) e);
    s_case("longer", state, 27, 6, dir, sizeof dir);
    snprintf(w1, sizeof w1, "%s/shard-0/replica-0.db: 6 unacknowledged events past seq 27", dir);
    s_audit("longer than the chain, forked after the seq committed when it left", dir, 0,
            (const char *[]) {w1, NULL},
            (const char *[]) {"PROBLEM", "forks from", "is not the signed one", NULL});
    snprintf(state, sizeof state,
             "shard 0 epoch %llu chain 1 2\nout shard 0 replica 0 epoch %llu committed 28\n",
             (unsigned long long) e, (unsigned long long) e);
    s_case("longer-at", state, 27, 6, dir, sizeof dir);
    snprintf(w1, sizeof w1, "PROBLEM: shard 0: %s/shard-0/replica-0.db forks from %s/shard-0/"
             "replica-2.db at seq 28", dir, dir);
    snprintf(w2, sizeof w2, "PROBLEM: shard 0: %s/shard-0/replica-0.db: the hash at seq 30 is"
             " not the signed one", dir);
    s_audit("longer than the chain, forked at the seq committed when it left", dir, 1,
            (const char *[]) {w1, w2, NULL}, (const char *[]) {"unacknowledged", NULL});

    /* the chain's events and more: never on its tail, a note */
    snprintf(state, sizeof state,
             "shard 0 epoch %llu chain 1 2\nout shard 0 replica 0 epoch %llu committed 30\n",
             (unsigned long long) e, (unsigned long long) e);
    s_case("ahead", state, UINT64_MAX, 3, dir, sizeof dir);
    snprintf(w1, sizeof w1, "%s/shard-0/replica-0.db: 3 events past seq 30, where the chain's",
             dir);
    s_audit("the chain's events and 3 more, out of the chain", dir, 0, (const char *[]) {w1, NULL},
            (const char *[]) {"PROBLEM", "forks from", NULL});
    return done_testing();
}

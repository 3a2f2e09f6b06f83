/* 5021-chain-out-audit: the chain master records what its chain had
   committed when it removed a replica, and `lux audit` takes a removed
   head's unacknowledged suffix for what it is (t/5020 seed 65, stop 44).

   A 3-replica log-only cluster takes 40 events; its head is killed -9
   and held from restarting (LUX_TEST_REPLICA_HOLD, as t/5020's "never
   back"). The master removes it, and master.state says so: an out line
   with the removal's epoch and a committed seq of at least 40 (all were
   acknowledged) and at most what the new tail holds. The chain takes 20
   more and the cluster stops; the dead head's file is then given the 3
   events a head writes and dies before forwarding (seqs the chain gave
   to others): `lux audit` passes with a note naming them. Released and
   started again, the replica rejoins (truncating them), master.state
   has no out line any more, and the audit passes with no such note. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_chain.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;
static char s_out[65536], s_err[8192];

static void
s_other(void *arg, int i, uint64_t seq, db_event_t *e)
{
    tamper_client_make(arg, i, seq, e);
    db_event_set_info(e, "written by a head that died before forwarding it");
}

static void
s_append(int n)
{
    db_client_t *cl = fx_client(&s_c, 64, 1024);
    fx_notes_spread(cl, n, "an event of the chain", 0);
    db_client_destroy(&cl);
}

int
main(void)
{
    char hold[PATH_MAX], flag[PATH_MAX + 32], path[PATH_MAX], want[PATH_MAX + 128];
    snprintf(hold, sizeof hold, "%s/hold", tap_tmpdir());
    tamper_sh("mkdir -p '%s'", hold);
    setenv("LUX_TEST_REPLICA_HOLD", hold, 1);
    fx_start(&s_c, 1, 3, "--log-only");
    ok(fx_wait_chain(&s_c, 0, 3, 30000), "a chain of 3");
    s_append(40);

    uint32_t head = 0;
    pid_t pid = fx_pid_at(&s_c, 0, 0, &head);
    if (pid <= 0)
        bail("no head pid");
    snprintf(flag, sizeof flag, "%s/replica-0-%u", hold, head);
    tamper_sh("touch '%s'", flag);
    kill(pid, SIGKILL);
    ok(fx_wait_chain(&s_c, 0, 2, 30000), "head (replica %u, pid %d) killed and held: 2 left",
       head, (int) pid);

    db_chain_t ch[1];
    if (db_chain_load_state(&s_c, ch))
        bail("master.state: %s", lux_errmsg());
    uint32_t tail = ch[0].m[ch[0].n - 1].index;
    uint64_t tail_last = fx_last_seq(&s_c, 0, tail);
    const db_out_t *o = &ch[0].out[head];
    ok(db_chain_find(&ch[0], head) < 0 && o->epoch == ch[0].epoch && o->committed >= 40 &&
           o->committed <= tail_last,
       "master.state: replica %u out since epoch %llu (the chain's is %llu), the tail then at "
       "seq %llu (40 acknowledged; the tail holds %llu)",
       head, (unsigned long long) o->epoch, (unsigned long long) ch[0].epoch,
       (unsigned long long) o->committed, (unsigned long long) tail_last);
    uint64_t committed = o->committed;

    s_append(20);
    fx_stop(&s_c);
    if (db_chain_load_state(&s_c, ch))
        bail("master.state: %s", lux_errmsg());
    ok(ch[0].out[head].epoch && ch[0].out[head].committed == committed,
       "the record outlives the stop");

    /* the events it wrote and never forwarded, after its last */
    tamper_db(s_c.dir, 0, head, path, sizeof path);
    db_store_opts_t so = {.path = path, .cluster = s_c.id};
    db_store_t *st = db_store_open(&so);
    tamper_client_t tc = {0};
    util_id_random(&tc.id);
    uint64_t last = st ? db_store_last_seq(st) : 0;
    if (!st || tamper_store_append(st, 3, s_other, &tc))
        bail("%s: %s", path, lux_errmsg());
    db_store_close(&st);
    ok(last >= committed && last + 3 <= fx_last_seq(&s_c, 0, tail),
       "replica %u: seqs %llu..%llu written after its last (the chain holds %llu)", head,
       (unsigned long long) last + 1, (unsigned long long) last + 3,
       (unsigned long long) fx_last_seq(&s_c, 0, tail));
    int rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s", s_c.dir);
    snprintf(want, sizeof want, "%s: 3 unacknowledged events past seq %llu, out of the chain",
             path, (unsigned long long) last);
    ok(rc == 0 && strstr(s_out, want) && !strstr(s_out, "PROBLEM"),
       "lux audit passes (exit %d), with a note: %s", rc, want);
    if (rc || !strstr(s_out, want))
        diag("%s", s_out);

    /* back: it rejoins, the record goes */
    unlink(flag);
    rc = fx_lux(NULL, 0, s_err, sizeof s_err, "start --head --log-only --dir %s", s_c.dir);
    is_int(rc, 0, "the cluster starts again %s", rc ? s_err : "");
    ok(fx_wait_chain(&s_c, 0, 3, 60000), "replica %u rejoined: the chain is whole", head);
    s_append(5);
    fx_stop(&s_c);
    if (db_chain_load_state(&s_c, ch))
        bail("master.state: %s", lux_errmsg());
    ok(!ch[0].out[head].epoch, "master.state has no out record for it any more");
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit --dir %s", s_c.dir);
    ok(rc == 0 && !strstr(s_out, "unacknowledged") && !strstr(s_out, "PROBLEM"),
       "lux audit passes, nothing left to drop (exit %d)", rc);
    if (rc)
        diag("%s", s_out);
    return done_testing();
}

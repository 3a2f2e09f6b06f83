/* 5040-read-hold: a READ that a tail took before it began holding for a
   joiner is not served past the held seq (issue 26, "the log must never
   fork").

   A tail holding acknowledgements for a joiner (JOIN_HOLD, doc/protocol.md
   8.4) commits what comes meanwhile but must not serve it: the master may
   yet remove the tail, which then truncates what it did not acknowledge,
   and a subscriber that read those events saw a history that never was
   (t/5001 under ASan: "seq 4222 does not chain"). The reader took the
   hold's bound when the READ arrived, and its worker read the file's last
   seq later; a hold begun in between was not seen.

   A 2-replica chain: the head is stopped (SIGSTOP), so the tail is left
   alone at a new epoch. A READ of the lone tail at that epoch is held
   at its worker (LUX_TEST_READ_GATE) before it reads. The head goes on
   (SIGCONT), finds itself removed, catches up and asks to join; the tail
   holds, and the master is stopped about to admit it (LUX_TEST_JOIN_GATE),
   so the hold stays. A client appends 200 events, which the tail commits
   and does not acknowledge. Then the READ goes on: its answer must hold
   nothing past the seq the tail had when the hold began. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GATE_MAX 4242 /* the READ's max: which READ the reader's gate holds */

static db_cluster_t s_c;
static db_client_t *s_cl;
static uint64_t s_appended;

static void
s_append(int n)
{
    fx_append_notes(s_cl, NULL, n, &s_appended);
}

static uint64_t
s_last(uint32_t index)
{
    return fx_last_seq(&s_c, 0, index);
}
static char s_rgate[PATH_MAX], s_jgate[PATH_MAX];
static pid_t s_stopped;

/* never leave a gate shut or the head stopped */
static void
s_cleanup(void)
{
    fx_gate_touch(s_rgate, "go", "");
    fx_gate_touch(s_jgate, "go", "");
    if (s_stopped > 0)
        kill(s_stopped, SIGCONT);
}

int
main(void)
{
    snprintf(s_rgate, sizeof s_rgate, "%s/rgate", tap_tmpdir());
    snprintf(s_jgate, sizeof s_jgate, "%s/jgate", tap_tmpdir());
    if (util_mkdirs(s_rgate, 0700) || util_mkdirs(s_jgate, 0700))
        bail("%s", lux_errmsg());
    setenv("LUX_TEST_READ_GATE", s_rgate, 1);
    setenv("LUX_TEST_JOIN_GATE", s_jgate, 1);
    fx_start(&s_c, 1, 2, "--log-only");
    tap_atexit(s_cleanup);
    db_client_opts_t co = {.cluster = &s_c, .timeout_ms = 60000};
    if (!(s_cl = db_client_new(&co)))
        bail("client: %s", lux_errmsg());
    s_append(100);
    is_int(db_client_sync(s_cl, 30000), 0, "100 events appended to the whole chain");

    /* stop the head: the tail is left alone at a new epoch */
    uint32_t head, tail;
    pid_t hpid = fx_pid_at(&s_c, 0, 0, &head), tpid = fx_pid_at(&s_c, 0, -1, &tail);
    if (hpid <= 0 || tpid <= 0 || head == tail)
        bail("no chain of two");
    kill(hpid, SIGSTOP);
    s_stopped = hpid;
    diag("head replica %u (pid %d) stopped; tail replica %u (pid %d)", head, (int) hpid, tail,
         (int) tpid);
    ok(fx_wait_chain(&s_c, 0, 1, 90000), "the tail is left alone in the chain");
    db_status_t st;
    if (db_master_status(&s_c, NULL, &st, 5000))
        bail("status: %s", lux_errmsg());
    uint64_t epoch = st.chains[0].epoch;
    uint32_t alone = st.chains[0].m[0].index;
    db_status_free(&st);
    if (alone != tail)
        bail("the chain's lone member is replica %u, not the tail %u", alone, tail);

    /* a READ of the lone tail, held at its worker before it reads */
    char n[32];
    zsock_t *rd = fx_read_connect(&s_c, 0, tail);
    snprintf(n, sizeof n, "%d\n", GATE_MAX);
    fx_gate_touch(s_rgate, "armed", n);
    fx_read_send(rd, 0, epoch, 1, GATE_MAX);
    ok(fx_gate_wait(s_rgate, s_cl, 60000), "the tail's reader took the READ (epoch %llu) and waits",
       (unsigned long long) epoch);

    /* the head goes on, finds itself removed, catches up and asks to join:
       the tail holds, and the master waits before admitting it */
    fx_gate_touch(s_jgate, "armed", "");
    kill(hpid, SIGCONT);
    s_stopped = 0;
    ok(fx_gate_wait(s_jgate, s_cl, 120000), "replica %u asked to join; the tail holds", head);
    uint64_t held = s_last(tail);

    /* the tail commits 200 more events and acknowledges none */
    uint64_t acked0 = db_client_acked_cseq(s_cl, 0);
    s_append(200);
    int64_t t0 = util_mono_ms();
    while (s_last(tail) < held + 200 && util_mono_ms() - t0 < 30000)
        db_client_poll(s_cl, 10);
    ok(s_last(tail) >= held + 200, "the holding tail committed 200 more (seq %llu, held %llu)",
       (unsigned long long) s_last(tail), (unsigned long long) held);
    is_int((int64_t) db_client_acked_cseq(s_cl, 0), (int64_t) acked0,
           "none of them is acknowledged");

    /* the READ goes on: nothing past the held seq */
    fx_gate_touch(s_rgate, "go", "");
    uint64_t last = 0, top = 0;
    int code = 0;
    char text[256];
    if (fx_read_answer(rd, &last, &top, &code, text, sizeof text))
        ok(true, "the READ was refused (%s: %s): nothing past the held seq %llu",
           lux_strerror(code), text, (unsigned long long) held);
    else
        ok(last <= held && top <= held,
           "the READ's answer holds nothing past the held seq %llu (last %llu, events "
           "up to %llu)", (unsigned long long) held, (unsigned long long) last,
           (unsigned long long) top);
    zsock_destroy(&rd);

    /* the master admits the joiner: everything is acknowledged */
    fx_gate_touch(s_jgate, "go", "");
    is_int(db_client_sync(s_cl, 60000), 0, "every event is acknowledged once the joiner is in");
    ok(fx_wait_chain(&s_c, 0, 2, 90000), "the chain has two members again");
    db_client_destroy(&s_cl);
    return done_testing();
}

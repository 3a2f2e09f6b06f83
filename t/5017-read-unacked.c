/* 5017-read-unacked: a tail serves only what it acknowledged (issue 26,
   "the log must never fork").

   A tail's writer thread commits a batch to SQLite, then tells the
   replica's network thread, which acknowledges it. A READ answered in
   between served events past the acknowledged seq; a join hold begun in
   that gap holds at the acknowledged seq, and when the master then
   removes the tail, it truncates the events above it, which a subscriber
   already holds: a history that never was (the race left by t/5040).

   For a chain of two (the tail is not the head) and of one (the head is
   the tail), the tail's writer is stopped after a commit, before it tells
   the replica (LUX_TEST_COMMIT_GATE). A READ from seq 1 at that moment
   must answer nothing of what that commit added; once the writer goes
   on, everything is acknowledged and readable. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char s_gate[PATH_MAX];

/* never leave a writer waiting */
static void
s_cleanup(void)
{
    fx_gate_touch(s_gate, "go", "");
}

static void
s_case(uint32_t replicas)
{
    db_cluster_t c;
    uint64_t appended = 0;
    char held[PATH_MAX + 8];
    snprintf(held, sizeof held, "%s/held", s_gate);
    unlink(held);
    fx_start(&c, 1, replicas, "--log-only");
    db_client_opts_t co = {.cluster = &c, .timeout_ms = 60000};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    fx_append_notes(cl, NULL, 100, &appended);
    is_int(db_client_sync(cl, 30000), 0, "R=%u: 100 events appended to the whole chain",
           replicas);
    ok(fx_wait_chain(&c, 0, replicas, 90000), "R=%u: the chain is whole", replicas);

    /* the tail's writer stops after its next commit, before the replica
       hears of it */
    uint32_t tail;
    if (fx_pid_at(&c, 0, -1, &tail) <= 0)
        bail("no tail");
    char name[64];
    snprintf(name, sizeof name, "shard-0/replica-%u.db\n", tail);
    fx_gate_touch(s_gate, "armed", name);
    uint64_t acked0 = db_client_acked_cseq(cl, 0);
    fx_append_notes(cl, NULL, 200, &appended);
    ok(fx_gate_wait(s_gate, cl, 60000), "R=%u: the tail's writer committed and waits", replicas);
    unsigned long long from = 0, to = 0;
    FILE *f = fopen(held, "r");
    if (!f || fscanf(f, "%llu %llu", &from, &to) != 2)
        bail("%s: no FROM TO", held);
    fclose(f);
    diag("R=%u: tail replica %u committed seqs %llu..%llu and waits", replicas, tail, from, to);
    is_int((int64_t) db_client_acked_cseq(cl, 0), (int64_t) acked0,
           "R=%u: none of the new events is acknowledged", replicas);

    /* a READ of the tail in the gap */
    db_status_t st;
    if (db_master_status(&c, NULL, &st, 5000))
        bail("status: %s", lux_errmsg());
    uint64_t epoch = st.chains[0].epoch;
    db_status_free(&st);
    char ep[DB_EP_MAX], text[256];
    db_cluster_replica_ep(&c, 0, tail, DB_EP_READ, ep, sizeof ep);
    zsock_t *rd = net_connect(ZMQ_DEALER, ep, NULL);
    if (!rd)
        bail("connect %s: %s", ep, lux_errmsg());
    zsock_set_rcvtimeo(rd, 60000);
    fx_read_send(rd, 0, epoch, 1, 0);
    uint64_t last = 0, top = 0;
    int code = 0;
    if (fx_read_answer(rd, &last, &top, &code, text, sizeof text))
        ok(false, "R=%u: the READ in the gap was refused (%s: %s)", replicas,
           lux_strerror(code), text);
    else
        ok(last < from && top < from,
           "R=%u: the READ in the gap answers nothing the tail did not acknowledge (last %llu, "
           "events up to %llu; unacknowledged %llu..%llu)", replicas, (unsigned long long) last,
           (unsigned long long) top, from, to);

    /* the writer goes on: everything is acknowledged and served */
    fx_gate_touch(s_gate, "go", "");
    is_int(db_client_sync(cl, 60000), 0, "R=%u: every event is acknowledged once the writer "
           "goes on", replicas);
    fx_read_send(rd, 0, epoch, 1, 0);
    last = top = 0;
    if (fx_read_answer(rd, &last, &top, &code, text, sizeof text))
        bail("READ refused: %s: %s", lux_strerror(code), text);
    ok(last >= to && top >= to, "R=%u: the READ then serves them (last %llu, events up to %llu)",
       replicas, (unsigned long long) last, (unsigned long long) top);
    zsock_destroy(&rd);
    db_client_destroy(&cl);
    fx_stop(&c);
}

int
main(void)
{
    snprintf(s_gate, sizeof s_gate, "%s/cgate", tap_tmpdir());
    if (util_mkdirs(s_gate, 0700))
        bail("%s", lux_errmsg());
    setenv("LUX_TEST_COMMIT_GATE", s_gate, 1);
    tap_atexit(s_cleanup);
    s_case(2);
    s_case(1);
    return done_testing();
}

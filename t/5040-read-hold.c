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
#include "db/db_store.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GATE_MAX 4242 /* the READ's max: which READ the reader's gate holds */

static db_cluster_t s_c;
static db_client_t *s_cl;
static uint64_t s_appended;
static char s_rgate[PATH_MAX], s_jgate[PATH_MAX];
static pid_t s_stopped;

static void
s_append(int n)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) s_appended);
        if (db_client_append(s_cl, &e))
            bail("append: %s", lux_errmsg());
        s_appended++;
    }
    db_client_flush(s_cl);
}

/* The last seq in a replica's file (0 when it cannot be opened). */
static uint64_t
s_last(uint32_t index)
{
    char path[PATH_MAX];
    db_cluster_replica_db(&s_c, 0, index, path, sizeof path);
    db_store_opts_t o = {.path = path, .readonly = true};
    db_store_t *st = db_store_open(&o);
    uint64_t last = st ? db_store_last_seq(st) : 0;
    db_store_close(&st);
    return last;
}

static void
s_touch(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        bail("%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* Wait (polling the client) until DIR/held exists. */
static bool
s_held(const char *dir, int timeout_ms)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/held", dir);
    for (int64_t t0 = util_mono_ms(); !util_exists(path);) {
        if (util_mono_ms() - t0 > timeout_ms)
            return false;
        if (s_cl)
            db_client_poll(s_cl, 20);
        else
            usleep(20000);
    }
    return true;
}

/* never leave a gate shut or the head stopped */
static void
s_cleanup(void)
{
    s_touch(s_rgate, "go", "");
    s_touch(s_jgate, "go", "");
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
    char ep[DB_EP_MAX], n[32];
    db_cluster_replica_ep(&s_c, 0, tail, DB_EP_READ, ep, sizeof ep);
    zsock_t *rd = net_connect(ZMQ_DEALER, ep, NULL);
    if (!rd)
        bail("connect %s: %s", ep, lux_errmsg());
    zsock_set_rcvtimeo(rd, 60000);
    snprintf(n, sizeof n, "%d\n", GATE_MAX);
    s_touch(s_rgate, "armed", n);
    uint8_t b[24];
    util_le64(b, 7);
    util_le64(b + 8, 1);
    util_le32(b + 16, GATE_MAX);
    util_le32(b + 20, 0);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_READ, 0, epoch)});
    zmsg_addmem(m, b, sizeof b);
    zmsg_send(&m, rd);
    ok(s_held(s_rgate, 60000), "the tail's reader took the READ (epoch %llu) and waits",
       (unsigned long long) epoch);

    /* the head goes on, finds itself removed, catches up and asks to join:
       the tail holds, and the master waits before admitting it */
    s_touch(s_jgate, "armed", "");
    kill(hpid, SIGCONT);
    s_stopped = 0;
    ok(s_held(s_jgate, 120000), "replica %u asked to join; the tail holds", head);
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
    s_touch(s_rgate, "go", "");
    m = zmsg_recv(rd);
    net_hdr_t h = {0};
    if (!m || zmsg_size(m) < 2 || net_hdr_decode(&h, zmsg_first(m)))
        bail("no answer to the READ in 60 s, or not a Lux message");
    if (h.type == NET_ERROR) {
        int code = 0;
        char text[256] = "";
        net_error_decode(zmsg_next(m), &code, text, sizeof text);
        ok(true, "the READ was refused (%s: %s): nothing past the held seq %llu",
             lux_strerror(code), text, (unsigned long long) held);
    } else {
        zframe_t *rep = zmsg_next(m), *batch = zmsg_next(m);
        if (h.type != NET_READ_REP || !rep || zframe_size(rep) != 16 || !batch ||
            zframe_size(batch) < NET_BATCH_HDR)
            bail("a malformed answer to the READ (%s)", net_type_name(h.type));
        uint64_t last = util_rd64(zframe_data(rep) + 8);
        uint64_t first = util_rd64(zframe_data(batch));
        uint32_t count = util_rd32(zframe_data(batch) + 8);
        uint64_t top = count ? first + count - 1 : 0;
        ok(last <= held && top <= held,
           "the READ's answer holds nothing past the held seq %llu (last %llu, events "
           "%llu..%llu)", (unsigned long long) held, (unsigned long long) last,
           (unsigned long long) first, (unsigned long long) top);
    }
    zmsg_destroy(&m);
    zsock_destroy(&rd);

    /* the master admits the joiner: everything is acknowledged */
    s_touch(s_jgate, "go", "");
    is_int(db_client_sync(s_cl, 60000), 0, "every event is acknowledged once the joiner is in");
    ok(fx_wait_chain(&s_c, 0, 2, 90000), "the chain has two members again");
    db_client_destroy(&s_cl);
    return done_testing();
}

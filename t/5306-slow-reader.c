/* 5306-slow-reader: a client sends a tail many READs and never reads the
   answers. The tail's memory must stay bounded (it kept every answer
   queued for that client: 100 unread READs of 8 MiB took a tail from
   12 MB to 880 MB): replies past DB_READ_HWM queued for one peer are
   dropped, and that client must ask again. Measured as the growth of the
   tail's peak resident memory while it serves 80 READs of about 2 MiB
   each to a client whose receive queue holds one message; the tail must
   also still answer a well-behaved reader afterwards. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_reader.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_proc.h"

#include <stdio.h>
#include <string.h>

#define NREADS 80
#define REPLY_BYTES (2u << 20)

static void
s_read(zsock_t *s, uint64_t req, uint64_t epoch)
{
    uint8_t b[24];
    util_le64(b, req);
    util_le64(b + 8, 1);
    util_le32(b + 16, 1000000);
    util_le32(b + 20, REPLY_BYTES);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_READ, 0, epoch)});
    zmsg_addmem(m, b, sizeof b);
    zmsg_send(&m, s);
}

int
main(void)
{
    db_cluster_t c;
    fx_start(&c, 1, 1, "--log-only");
    /* about 5 MB of events: every READ below is answered with REPLY_BYTES */
    db_client_opts_t o = {.cluster = &c, .timeout_ms = 60000};
    db_client_t *cl = db_client_new(&o);
    if (!cl)
        bail("db_client_new: %s", lux_errmsg());
    char info[481];
    memset(info, 'x', sizeof info - 1);
    info[sizeof info - 1] = '\0';
    for (int i = 0; i < 10000; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) i);
        db_event_set_info(&e, info);
        if (db_client_append(cl, &e))
            bail("append: %s", lux_errmsg());
    }
    is_int(db_client_sync(cl, 60000), 0, "10000 events of 480 bytes appended");
    db_client_destroy(&cl);

    db_status_t st;
    if (db_master_status(&c, NULL, &st, 5000))
        bail("status: %s", lux_errmsg());
    uint64_t epoch = st.chains[0].epoch;
    db_status_free(&st);
    pid_t tail = fx_pid_at(&c, 0, -1, NULL);
    char ep[DB_EP_MAX];
    db_cluster_replica_ep(&c, 0, 0, DB_EP_READ, ep, sizeof ep);

    /* a well-behaved reader first: the tail's memory after one answer */
    zsock_t *good = net_connect(ZMQ_DEALER, ep, NULL);
    zsock_set_rcvtimeo(good, 60000);
    s_read(good, 1, epoch);
    zmsg_t *m = zmsg_recv(good);
    ok(m && zmsg_size(m) >= 2 && zframe_size(zmsg_last(m)) > REPLY_BYTES / 2,
       "a reader gets an answer of about %u bytes", REPLY_BYTES);
    zmsg_destroy(&m);
    int64_t peak0;
    util_proc_rss(tail, &peak0);

    /* the slow reader: asks NREADS times, reads nothing */
    zsock_t *slow = zsock_new(ZMQ_DEALER);
    zsock_set_rcvhwm(slow, 1); /* before connecting: its pipe is made then */
    if (!slow || zsock_connect(slow, "%s", ep))
        bail("connect %s", ep);
    for (int i = 0; i < NREADS; i++)
        s_read(slow, (uint64_t) (100 + i), epoch);
    /* the tail serves READs in the order it took them, and takes what
       comes at once (queueing a READ is cheap): by the time the good
       reader's first answer is back every slow READ was taken, so its
       second is served after all of them */
    bool answered = true;
    for (int k = 2; k <= 3; k++) {
        s_read(good, (uint64_t) k, epoch);
        m = zmsg_recv(good);
        answered = answered && m;
        zmsg_destroy(&m);
    }
    ok(answered, "the tail still answers a well-behaved reader");
    int64_t peak1;
    int64_t cur = util_proc_rss(tail, &peak1);
    diag("tail now %lld MB; this process %lld MB", (long long) (cur >> 20),
         (long long) (util_proc_rss(getpid(), NULL) >> 20));
    int64_t grew = peak1 - peak0;
    diag("tail pid %d: peak RSS %lld -> %lld bytes (+%lld MB for %d unread answers of %u MB)",
         (int) tail, (long long) peak0, (long long) peak1, (long long) (grew >> 20), NREADS,
         REPLY_BYTES >> 20);
#ifdef __SANITIZE_ADDRESS__
    /* ASan keeps freed blocks resident in its quarantine (256 MB by
       default), so the tail's RSS says nothing of what it queues; the
       next check still counts the answers it kept */
    skip("AddressSanitizer's quarantine holds freed answers: RSS is no measure here");
#else
    ok(grew < (int64_t) (DB_READ_HWM + 8) * REPLY_BYTES,
       "the tail's memory grew by %lld MB, under (DB_READ_HWM + 8) answers (%u MB), not %d answers",
       (long long) (grew >> 20), (unsigned) ((DB_READ_HWM + 8) * (REPLY_BYTES >> 20)), NREADS);
#endif
    int got = 0;
    zsock_set_rcvtimeo(slow, 2000);
    while ((m = zmsg_recv(slow))) {
        got++;
        zmsg_destroy(&m);
    }
    ok(got < NREADS && got <= DB_READ_HWM + 2,
       "the slow reader then finds %d answers kept for it (DB_READ_HWM %d): the rest were "
       "dropped, to be asked again", got, DB_READ_HWM);
    zsock_destroy(&slow);
    zsock_destroy(&good);
    return done_testing();
}

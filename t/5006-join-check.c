/* 5006-join-check: the chain master admits a replica at the tail only if
   it holds what the tail has (doc/protocol.md 8.3, 12).

   A joiner becomes the tail, whose log is the committed one; admitted
   without everything the tail committed, it would serve a shorter log,
   and if the old tail were lost it would continue the shard from an
   older seq than clients were told. Here the tail of a 2-replica chain
   hangs (SIGSTOP) until the master removes it; then a JOIN in its name
   that claims seq 0 must be refused with EGAP and change nothing; then
   the real replica, continued, must rejoin by itself. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;
static pid_t s_stopped;

static void
s_cont(void)
{
    if (s_stopped > 0)
        kill(s_stopped, SIGCONT);
    s_stopped = 0;
}

/* The shard's chain length and epoch, and the last seq its tail reported. */
static bool
s_chain(uint32_t *n, uint64_t *epoch, uint64_t *tail_last)
{
    db_status_t st;
    if (db_master_status(&s_c, NULL, &st, 2000))
        return false;
    const db_chain_t *c = &st.chains[0];
    *n = c->n;
    *epoch = c->epoch;
    *tail_last = c->n ? st.beats[c->m[c->n - 1].index].last : 0;
    db_status_free(&st);
    return true;
}

int
main(void)
{
    char ep[DB_EP_MAX];
    fx_start(&s_c, 1, 2, "--log-only");
    tap_atexit(s_cont);
    db_client_opts_t co = {.cluster = &s_c};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    for (int i = 0; i < 50; i++) {
        db_event_t e = {.kind = DB_K_note};
        util_id_t job;
        util_id_random(&job);
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        if (db_client_append(cl, &e))
            bail("append: %s", lux_errmsg());
    }
    is_int(db_client_sync(cl, 20000), 0, "50 events appended");

    uint32_t index, n = 0;
    uint64_t epoch = 0, tail_last = 0;
    pid_t pid = fx_pid_at(&s_c, 0, -1, &index);
    if (pid <= 0)
        bail("no tail");
    kill(s_stopped = pid, SIGSTOP);
    int64_t t0 = util_mono_ms();
    while (util_mono_ms() - t0 < 20000 && !(s_chain(&n, &epoch, &tail_last) && n == 1))
        usleep(20000);
    is_int(n, 1, "the hung tail (replica %u, pid %d) was removed: one member left", index,
           (int) pid);
    ok(tail_last >= 50, "the remaining tail reported seq %llu", (unsigned long long) tail_last);

    /* a JOIN in the removed replica's name, claiming nothing */
    zsock_t *s = net_connect(ZMQ_DEALER, db_cluster_master_ep(&s_c, ep, sizeof ep), NULL);
    uint8_t b[12];
    util_le32(b, index);
    util_le64(b + 4, 0);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_JOIN, 0, epoch)});
    zmsg_addmem(m, b, sizeof b);
    zmsg_send(&m, s);
    zpoller_t *p = zpoller_new(s, NULL);
    zmsg_t *r = zpoller_wait(p, 5000) == s ? zmsg_recv(s) : NULL;
    net_hdr_t h;
    int code = 0;
    char text[512] = "no answer";
    if (r && net_hdr_decode(&h, zmsg_first(r)) == 0 && h.type == NET_ERROR)
        net_error_decode(zmsg_next(r), &code, text, sizeof text);
    zmsg_destroy(&r);
    zpoller_destroy(&p);
    zsock_destroy(&s);
    char want[64];
    snprintf(want, sizeof want, "has seq %llu", (unsigned long long) tail_last);
    ok(code == LUX_EGAP && strstr(text, "at seq 0") && strstr(text, want),
       "a JOIN at seq 0 behind the tail's %llu is refused with EGAP (%d: %s)",
       (unsigned long long) tail_last, code, text);
    uint32_t n2 = 0;
    uint64_t epoch2 = 0, last2;
    bool got = s_chain(&n2, &epoch2, &last2);
    ok(got && n2 == 1 && epoch2 == epoch, "the chain is unchanged: %u member, epoch %llu", n2,
       (unsigned long long) epoch2);

    /* the real replica, continued, catches up and is admitted */
    s_cont();
    ok(fx_wait_chain(&s_c, 0, 2, 30000), "the continued replica rejoins by itself");
    is_int(db_client_sync(cl, 20000), 0, "the chain still acknowledges appends");
    db_client_destroy(&cl);
    return done_testing();
}

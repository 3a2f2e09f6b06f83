/* 9163-client-gap-backoff: a log client whose head refuses every batch
   with LUX_EGAP, for good, backs its resends off and logs a few lines, not
   a line and a resend per refusal; the usual gap (one batch lost, the
   head refuses those after it once) is still resent at once.

   Before, db_client.c resent everything in flight the moment an EGAP
   came (retry 0 ms) and logged every refusal: a head that expected an
   event the client no longer had in flight (t/5304 at 32 MiB, a replica's
   client_seen behind what it had acknowledged) got the client spinning,
   292,000 lines and 31 MB of supervisor.log in 25 s, which filled the
   disk the test had made small.

   A chain master and a head of one shard stand in this process (a thread
   that speaks the protocol: CONFIG to a CONFIG_REQ, APPEND_ACK or ERROR to
   an APPEND, doc/protocol.md), so that the head can answer as no real one
   would for long. The client logs at the info level into a file of its
   own.
   - gap for ever: 100 events in 10 batches, the client polled for 2 s;
     a sync times out, waiting rather than spinning while the resend
     waits, every event still in flight, the head got a bounded number of
     APPENDs (resends back off to ~1 s) and the log has a few lines;
   - then the head takes them again: the sync ends, and a line says how
     many refusals were not logged;
   - the usual gap, with a new client: the head drops the first batch and
     refuses the nine behind it; the sync ends within a bound far below
     the back-off's (the time is printed). (This test is a 9xxx number
     because the session that wrote it was given those.) */
#include "tap.h"
#include "db/db_chain.h"
#include "db/db_client.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_log.h"
#include "util/util_time.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_EVENTS 100
#define S_BATCH 10
#define S_EVER_MS 2000 /* how long the head refuses everything */
#define S_SYNC_MS 1000 /* then a sync's time-out */

enum { S_GAP_EVER, S_TAKE, S_GAP_ONCE, S_STOP };

typedef struct {
    db_cluster_t c;
    zsock_t *master, *pub, *head;
    char head_ep[DB_EP_MAX];
    atomic_int mode;
    atomic_int appends; /* APPENDs received */
    atomic_int egaps;   /* EGAPs sent */
    uint64_t seen;      /* newest event ID taken, as a head's client table */
    uint64_t seq;       /* the log's seq, for acknowledgements */
    bool dropped;       /* S_GAP_ONCE: the first batch was dropped */
} s_fake_t;

static void
s_config(s_fake_t *f, zframe_t *rid)
{
    db_chain_t chain = {.shard = 0, .epoch = 1, .n = 1};
    util_buf_t b;
    util_buf_init(&b);
    snprintf(chain.m[0].ep[DB_EP_APPEND], DB_EP_MAX, "%s", f->head_ep);
    db_chain_encode(&b, &f->c.id, &chain, 1);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_CONFIG, 0, 1)});
    zmsg_addmem(m, b.data, b.len);
    zmsg_send(&m, f->master);
    util_buf_free(&b);
}

static void
s_egap(s_fake_t *f, zframe_t *rid, uint64_t first)
{
    zmsg_t *m = net_error_msg(0, 1, LUX_EGAP, "shard 0: expected event %llu from this client, "
                              "got %llu", (unsigned long long) f->seen + 1,
                              (unsigned long long) first);
    net_error_req(m, first);
    zmsg_prepend(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_send(&m, f->head);
    atomic_fetch_add(&f->egaps, 1);
}

/* An APPEND: refused, dropped or taken as f->mode says. */
static void
s_append(s_fake_t *f, zframe_t *rid, zframe_t *body)
{
    net_batch_t in;
    int mode = atomic_load(&f->mode);
    atomic_fetch_add(&f->appends, 1);
    if (!body || net_batch_parse(&in, zframe_data(body), zframe_size(body)) || !in.count)
        return;
    net_batch_it_t it;
    uint64_t ignore;
    const uint8_t *rec;
    size_t len;
    uint8_t client[16];
    net_batch_iter(&it, &in);
    if (!net_batch_next(&it, &ignore, &rec, &len) || len < 14 + 24)
        return;
    memcpy(client, rec + 14, 16); /* DB_F_CLIENT is the first field */
    uint64_t first = in.first, last = in.first + in.count - 1;
    if (mode == S_GAP_EVER)
        return s_egap(f, rid, first);
    if (mode == S_GAP_ONCE && !f->dropped) {
        f->dropped = true; /* lost on the way */
        f->seen = first - 1;
        return;
    }
    if (first > f->seen + 1)
        return s_egap(f, rid, first);
    if (last > f->seen) {
        f->seq += last - f->seen;
        f->seen = last;
    }
    uint8_t b[32];
    memcpy(b, client, 16);
    util_le64(b + 16, f->seen);
    util_le64(b + 24, f->seq);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_APPEND_ACK, 0, 1)});
    zmsg_addmem(m, b, sizeof b);
    zmsg_send(&m, f->head);
}

static void *
s_serve(void *arg)
{
    s_fake_t *f = arg;
    while (atomic_load(&f->mode) != S_STOP) {
        zmq_pollitem_t it[2] = {{zsock_resolve(f->master), 0, ZMQ_POLLIN, 0},
                                {zsock_resolve(f->head), 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(it, 2, 20) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (!(it[i].revents & ZMQ_POLLIN))
                continue;
            zmsg_t *m = zmsg_recv(i ? f->head : f->master);
            zframe_t *rid = m ? zmsg_pop(m) : NULL, *hf = m ? zmsg_pop(m) : NULL;
            zframe_t *body = m ? zmsg_pop(m) : NULL;
            net_hdr_t h;
            if (rid && hf && net_hdr_decode(&h, hf) == 0) {
                if (i == 0 && h.type == NET_CONFIG_REQ)
                    s_config(f, rid);
                else if (i == 1 && h.type == NET_APPEND)
                    s_append(f, rid, body);
            }
            zframe_destroy(&rid);
            zframe_destroy(&hf);
            zframe_destroy(&body);
            zmsg_destroy(&m);
        }
    }
    return NULL;
}

static int
s_lines(const char *path, const char *with, char *last, size_t n)
{
    FILE *fp = fopen(path, "r");
    char line[2048];
    int k = 0;
    if (!fp)
        return -1;
    while (fgets(line, sizeof line, fp))
        if (!with || strstr(line, with)) {
            k++;
            if (last)
                snprintf(last, n, "%s", line);
        }
    fclose(fp);
    if (last && k)
        last[strcspn(last, "\n")] = '\0';
    return k;
}

/* CPU time of the calling thread, in ms. */
static int64_t
s_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static db_client_t *
s_client(s_fake_t *f)
{
    db_client_opts_t o = {.cluster = &f->c, .batch = S_BATCH, .timeout_ms = 20000};
    db_client_t *cl = db_client_new(&o);
    if (!cl)
        bail("client: %s", lux_errmsg());
    util_id_t job;
    util_id_random(&job);
    for (int i = 0; i < S_EVENTS; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        if (db_client_append(cl, &e))
            bail("append: %s", lux_errmsg());
    }
    return cl;
}

int
main(void)
{
    static s_fake_t f;
    char ep[DB_EP_MAX], logpath[600], last[2048];
    const char *dir = tap_tmpdir();
    pthread_t th;

    db_cluster_defaults(&f.c);
    util_id_random(&f.c.id);
    f.c.shards = 1;
    f.c.replicas = 1;
    snprintf(f.c.dir, sizeof f.c.dir, "%s", dir);
    snprintf(f.c.sock_dir, sizeof f.c.sock_dir, "%s", dir);
    snprintf(f.head_ep, sizeof f.head_ep, "ipc://%s/head", dir);
    f.master = zsock_new(ZMQ_ROUTER);
    f.head = zsock_new(ZMQ_ROUTER);
    if (!f.master || !f.head ||
        zsock_bind(f.master, "%s", db_cluster_master_ep(&f.c, ep, sizeof ep)) < 0 ||
        zsock_bind(f.head, "%s", f.head_ep) < 0)
        bail("cannot bind the fake master and head in %s", dir);
    f.pub = zsock_new_pub(db_cluster_master_pub(&f.c, ep, sizeof ep));
    if (!f.pub)
        bail("cannot bind the fake master's PUB");
    atomic_store(&f.mode, S_GAP_EVER);
    if (pthread_create(&th, NULL, s_serve, &f))
        bail("pthread_create");
    snprintf(logpath, sizeof logpath, "%s/client.log", dir);
    if (util_log_to_file(logpath))
        bail("log file: %s", lux_errmsg());
    util_log_level = UTIL_LOG_INFO;

    /* a head that refuses everything, the client polled as a daemon's
       loop polls it (db_client_sync polls a stale shard every 20 ms only) */
    db_client_t *cl = s_client(&f);
    int64_t t0 = util_mono_ms(), took;
    while ((took = util_mono_ms() - t0) < S_EVER_MS)
        db_client_poll(cl, 10);
    int appends = atomic_load(&f.appends), egaps = atomic_load(&f.egaps);
    int lines = s_lines(logpath, NULL, NULL, 0);
    int64_t cpu0 = s_cpu_ms();
    int rc = db_client_sync(cl, S_SYNC_MS);
    int64_t cpu = s_cpu_ms() - cpu0;
    is_int(rc, LUX_ETIMEDOUT, "then a sync of %d ms times out: %s", S_SYNC_MS,
           rc ? lux_errmsg() : "ok");
    ok(cpu < S_SYNC_MS / 4, "and waits, not spins: %lld ms of CPU in it, under %d",
       (long long) cpu, S_SYNC_MS / 4);
    ok(db_client_unacked(cl) == S_EVENTS && db_client_inflight(cl) == S_EVENTS,
       "all %d events are still in flight (%llu)", S_EVENTS,
       (unsigned long long) db_client_inflight(cl));
    ok(appends <= 20 * S_BATCH, "the head got %d APPENDs (%d refused) in %lld ms, at most %d: "
       "resends back off", appends, egaps, (long long) took, 20 * S_BATCH);
    ok(lines >= 1 && lines <= 5, "the client logged %d lines, 1 to 5", lines);
    is_int(s_lines(logpath, "expected event 1 from this client, got 1", NULL, 0) >= 1, 1,
           "the first refusal is logged with the head's words");

    /* the head takes them again */
    int refused = atomic_load(&f.egaps);
    atomic_store(&f.mode, S_TAKE);
    t0 = util_mono_ms();
    rc = db_client_sync(cl, 20000);
    took = util_mono_ms() - t0;
    is_int(rc, 0, "once the head takes them, the sync ends in %lld ms: %s", (long long) took,
           rc ? lux_errmsg() : "ok");
    int sum = s_lines(logpath, "more refusals", last, sizeof last);
    ok(sum >= 1, "a line says how many refusals were not logged (of %d): %s", refused,
       sum ? last : "none");
    db_client_destroy(&cl);

    /* the usual gap: the first batch lost, the nine behind it refused once */
    f.seen = 0;
    f.dropped = false;
    atomic_store(&f.mode, S_GAP_ONCE);
    int before = atomic_load(&f.egaps);
    cl = s_client(&f);
    t0 = util_mono_ms();
    rc = db_client_sync(cl, 20000);
    took = util_mono_ms() - t0;
    is_int(rc, 0, "a lost batch: the sync ends in %lld ms (%d refusals): %s", (long long) took,
           atomic_load(&f.egaps) - before, rc ? lux_errmsg() : "ok");
    ok(atomic_load(&f.egaps) > before && took < 900,
       "the batches refused behind it were resent without waiting on a back-off (%lld ms, "
       "under 900)", (long long) took);
    db_client_destroy(&cl);

    atomic_store(&f.mode, S_STOP);
    pthread_join(th, NULL);
    zsock_destroy(&f.master);
    zsock_destroy(&f.pub);
    zsock_destroy(&f.head);
    return done_testing();
}

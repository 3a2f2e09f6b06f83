/* 5002-garbage: garbage on every endpoint of a running head - random and
   truncated frames, bad magic, other versions, unknown types, every type
   with a garbage body, wrong epochs, forged FORWARDs, lying batch lengths,
   records that do not decode, out-of-order appends - and then check that
   every component stayed up (same pids), logged an error, lost nothing it
   had committed, and still serves appends, reads and subscriptions. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_sub.h"
#include "net/net_link.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static db_cluster_t s_c;
static uint64_t s_rng = 12345;

static uint32_t
s_rand(void)
{
    s_rng = s_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t) (s_rng >> 33);
}

static void
s_send(zsock_t *s, zmsg_t *m)
{
    zmsg_send(&m, s);
}

/* A batch of `count` records that frame correctly; `valid` decides whether
   the records themselves are real events (with a client ID and cseq). */
static void
s_batch(util_buf_t *b, uint64_t first, uint32_t count, bool valid, uint64_t cseq)
{
    util_buf_t rec;
    util_id_t client;
    util_buf_init(&rec);
    util_id_random(&client);
    net_batch_begin(b, first);
    for (uint32_t i = 0; i < count; i++) {
        rec.len = 0;
        if (valid) {
            db_event_t e = {.kind = DB_K_note, .client = client, .cseq = cseq + i};
            e.mask |= DB_F_CLIENT;
            db_event_set_info(&e, "forged");
            db_event_encode(&e, &rec);
        } else {
            for (int k = 0; k < 40; k++)
                util_buf_put_u8(&rec, (uint8_t) s_rand());
        }
        net_batch_add(b, rec.data, rec.len);
    }
    net_batch_end(b, count);
    util_buf_free(&rec);
}

/* A message of `frames` random frames of up to 299 bytes, the first often
   starting like a real header. */
static zmsg_t *
s_junk(int frames)
{
    uint8_t junk[300];
    zmsg_t *m = zmsg_new();
    for (int f = 0; f < frames; f++) {
        size_t n = s_rand() % sizeof junk;
        for (size_t k = 0; k < n; k++)
            junk[k] = (uint8_t) s_rand();
        if (f == 0 && n >= 3 && s_rand() % 2) { /* often a plausible start */
            junk[0] = NET_MAGIC;
            junk[1] = NET_VERSION;
            junk[2] = (uint8_t) (1 + s_rand() % (NET_TYPE_MAX - 1));
        }
        zmsg_addmem(m, junk, n);
    }
    return m;
}

/* Garbage on the local link beside an append endpoint: messages that
   frame correctly but say nothing sensible (answered with ERRORs, over
   the link), then bytes that break the framing, which must close the link.
   Returns how many of the four outcomes held: a link there, ERRORs come
   back, the bad stream is closed by the replica, a new link is taken. */
static int
s_link_garbage(const char *ep, uint64_t epoch)
{
    char path[DB_EP_MAX];
    int held = 0;
    net_link_t *l;
    if (net_link_path(ep, path, sizeof path) || !(l = net_link_connect(path)))
        return 0;
    held++;
    for (int i = 0; i < 200; i++) {
        zmsg_t *m = s_junk((int) (s_rand() % 4)); /* no frame at all, sometimes */
        net_link_send(l, &m);
    }
    util_buf_t b;
    util_buf_init(&b);
    s_batch(&b, 0, 3, false, 1); /* records that do not decode */
    zmsg_t *m = fx_msg(NET_APPEND, 0, epoch, b.data, b.len);
    net_link_send(l, &m);
    util_buf_free(&b);
    int errors = 0;
    zmsg_t *r;
    while ((r = net_link_recv(l, 1000))) {
        net_hdr_t h;
        errors += net_hdr_decode(&h, zmsg_first(r)) == 0 && h.type == NET_ERROR;
        zmsg_destroy(&r);
    }
    held += errors > 0;
    diag("%s: %d ERRORs over the link", path, errors);
    /* a frame longer than its message (then a message over the limit, for
       a replica that would read on) */
    uint8_t bad[16] = {8, 0, 0, 0, 200, 0, 0, 0, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0x7f};
    bool wrote = send(net_link_fd(l), bad, sizeof bad, MSG_NOSIGNAL) == (ssize_t) sizeof bad;
    while ((r = net_link_recv(l, 3000)))
        zmsg_destroy(&r);
    held += wrote && net_link_dead(l);
    if (!wrote || !net_link_dead(l))
        diag("%s: the broken stream was %s", path, wrote ? "not closed" : "not written");
    net_link_destroy(&l);
    if ((l = net_link_connect(path))) {
        m = fx_msg(NET_PING, 0, epoch, NULL, 0);
        net_link_send(l, &m);
        r = net_link_recv(l, 3000);
        net_hdr_t h;
        held += r && net_hdr_decode(&h, zmsg_first(r)) == 0 && h.type == NET_PONG;
        if (!r)
            diag("%s: no PONG on a new link: %s", path, lux_errmsg());
        zmsg_destroy(&r);
        net_link_destroy(&l);
    }
    return held;
}

/* Throw everything at one endpoint; returns the number of messages sent. */
static int
s_garbage(const char *ep, uint64_t epoch)
{
    zsock_t *s = net_connect(ZMQ_DEALER, ep, NULL);
    util_buf_t b;
    uint8_t junk[512];
    int sent = 0;
    if (!s)
        return 0;
    util_buf_init(&b);
    /* random multi-frame messages */
    for (int i = 0; i < 300; i++, sent++)
        s_send(s, s_junk(1 + (int) (s_rand() % 4)));
    /* truncated and bent headers */
    uint8_t h[NET_HDR_LEN + 4] = {0}; /* the 4 past the header: garbage, but defined */
    zframe_t *hf = net_hdr_frame(NET_READ, 0, epoch);
    memcpy(h, zframe_data(hf), NET_HDR_LEN);
    zframe_destroy(&hf);
    size_t cuts[] = {1, 5, 15, 17, 20};
    for (size_t i = 0; i < 5; i++, sent++) {
        zmsg_t *m = zmsg_new();
        zmsg_addmem(m, h, cuts[i]);
        s_send(s, m);
    }
    uint8_t bent[NET_HDR_LEN];
    memcpy(bent, h, NET_HDR_LEN);
    bent[0] = 0;                      /* bad magic */
    zmsg_t *m = zmsg_new();
    zmsg_addmem(m, bent, NET_HDR_LEN);
    s_send(s, m), sent++;
    memcpy(bent, h, NET_HDR_LEN);
    bent[1] = 2;                      /* another version */
    m = zmsg_new();
    zmsg_addmem(m, bent, NET_HDR_LEN);
    zmsg_addmem(m, "later", 5);
    s_send(s, m), sent++;
    for (int t = 0; t < 256; t += 51) { /* unknown types */
        memcpy(bent, h, NET_HDR_LEN);
        bent[2] = (uint8_t) (t == 0 ? 0 : 200 + t % 50);
        m = zmsg_new();
        zmsg_addmem(m, bent, NET_HDR_LEN);
        s_send(s, m), sent++;
    }
    /* every type, with no body, a garbage body, and at the wrong epoch */
    for (int t = 1; t < NET_TYPE_MAX; t++) {
        if (t == NET_STATUS_REQ || t == NET_CONFIG_REQ || t == NET_PING)
            continue; /* legitimate requests */
        size_t n = s_rand() % 64;
        for (size_t k = 0; k < n; k++)
            junk[k] = (uint8_t) s_rand();
        s_send(s, fx_msg(t, 0, epoch, NULL, 0)), sent++;
        s_send(s, fx_msg(t, 0, epoch, junk, n)), sent++;
        s_send(s, fx_msg(t, 0, epoch + 1000, junk, n)), sent++;
        s_send(s, fx_msg(t, 7777, epoch, junk, n)), sent++;
    }
    /* well-framed batches carrying lies */
    s_batch(&b, 1, 3, false, 0);
    util_le32(b.data + 8, 1000000); /* count says a million */
    s_send(s, fx_msg(NET_APPEND, 0, epoch, b.data, b.len)), sent++;
    s_send(s, fx_msg(NET_FORWARD, 0, epoch, b.data, b.len)), sent++;
    s_batch(&b, 1, 3, false, 0);
    util_le32(b.data + NET_BATCH_HDR, 0x7fffffff); /* a record that claims 2 GB */
    s_send(s, fx_msg(NET_APPEND, 0, epoch, b.data, b.len)), sent++;
    s_batch(&b, 1, 5, false, 0); /* framing fine, records garbage */
    s_send(s, fx_msg(NET_APPEND, 0, epoch, b.data, b.len)), sent++;
    s_send(s, fx_msg(NET_FORWARD, 0, epoch, b.data, b.len)), sent++;
    s_send(s, fx_msg(NET_PUBLISH, 0, epoch, b.data, b.len)), sent++;
    /* real-looking records: a forged FORWARD from a stranger, at the right
       and a wrong epoch; an APPEND that starts at cseq 5 (a gap) */
    s_batch(&b, 1, 5, true, 1);
    s_send(s, fx_msg(NET_FORWARD, 0, epoch, b.data, b.len)), sent++;
    s_send(s, fx_msg(NET_FORWARD, 0, epoch + 1, b.data, b.len)), sent++;
    s_batch(&b, 5, 5, true, 5);
    s_send(s, fx_msg(NET_APPEND, 0, epoch, b.data, b.len)), sent++;
    /* a HELLO from a replica that is not our predecessor, wrong epochs */
    uint8_t idx[4] = {9, 0, 0, 0};
    s_send(s, fx_msg(NET_HELLO, 0, epoch, idx, 4)), sent++;
    s_send(s, fx_msg(NET_HELLO, 0, epoch + 5, idx, 4)), sent++;
    /* READs: garbage sizes, wrong epoch, absurd ranges */
    uint8_t rd[24] = {0};
    util_le64(rd + 8, UINT64_MAX - 3);
    util_le32(rd + 16, 0xffffffffu);
    s_send(s, fx_msg(NET_READ, 0, epoch, rd, 24)), sent++;
    s_send(s, fx_msg(NET_READ, 0, epoch + 9, rd, 24)), sent++;
    s_send(s, fx_msg(NET_READ, 0, epoch, rd, 23)), sent++;
    /* then a PING: messages on one connection are handled in order, so
       its PONG proves that the endpoint has read all of the garbage (the
       answers before it are dropped here). Asked again each second: an
       endpoint that bounds what it queues for a peer (the read endpoint,
       DB_READ_HWM) may drop a PONG behind a burst of ERRORs. */
    bool pong = false;
    zpoller_t *p = zpoller_new(s, NULL);
    for (int64_t t0 = util_mono_ms(), ping = 0; !pong && util_mono_ms() - t0 < 30000;) {
        if (util_mono_ms() - ping >= 1000) {
            s_send(s, fx_msg(NET_PING, 0, epoch, NULL, 0));
            ping = util_mono_ms();
        }
        if (zpoller_wait(p, 200) != s)
            continue;
        zmsg_t *r = zmsg_recv(s);
        net_hdr_t rh;
        pong = r && net_hdr_decode(&rh, zmsg_first(r)) == 0 && rh.type == NET_PONG;
        zmsg_destroy(&r);
    }
    zpoller_destroy(&p);
    zsock_destroy(&s);
    util_buf_free(&b);
    if (!pong)
        diag("%s: no PONG after the garbage within 30 s", ep);
    return pong ? sent : -sent;
}

/* n events over both shards (each its own job: jobs pick the shard) */
static int
s_append(db_client_t *cl, int n)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        util_id_t job;
        util_id_random(&job);
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        db_event_set_info(&e, "before or after the garbage");
        if (db_client_append(cl, &e))
            return -1;
    }
    return db_client_sync(cl, 20000);
}

int
main(void)
{
    db_status_t st;
    pid_t before[16], after[16];
    char ep[DB_EP_MAX];

    fx_start(&s_c, 2, 3, NULL);
    db_client_opts_t co = {.cluster = &s_c};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    is_int(s_append(cl, 2000), 0, "2000 events appended and acknowledged");
    ok(db_client_linked(cl, 0) && db_client_linked(cl, 1),
       "the client reaches both heads by their local links");
    uint64_t acked[2] = {db_client_acked_seq(cl, 0), db_client_acked_seq(cl, 1)};
    int np = fx_pids(&s_c, before, 16);
    is_int(np, 7, "a supervisor and six replicas");
    if (db_master_status(&s_c, NULL, &st, 2000))
        bail("status: %s", lux_errmsg());

    int sent = s_garbage(db_cluster_master_ep(&s_c, ep, sizeof ep), 1);
    diag("%d bad messages to the chain master", sent);
    int endpoints = sent > 0;
    for (uint32_t i = 0; i < s_c.shards * s_c.replicas; i++) {
        uint64_t epoch = st.chains[st.beats[i].shard].epoch;
        for (int k = 0; k < DB_EP_N; k++) {
            if (k == DB_EP_PUB)
                continue; /* a PUB socket reads nothing */
            sent = s_garbage(st.beats[i].ep[k], epoch);
            endpoints += sent > 0;
        }
    }
    ok(endpoints == 1 + 6 * 3, "garbage sent to %d endpoints, each of which then answered a "
       "PING (it read all of it)", endpoints);
    int links = 0;
    for (uint32_t i = 0; i < s_c.shards * s_c.replicas; i++)
        links += s_link_garbage(st.beats[i].ep[DB_EP_APPEND],
                                st.chains[st.beats[i].shard].epoch) == 4;
    is_int(links, 6, "every replica's append link answered garbage with ERRORs, closed a "
           "broken stream and took the next link");
    db_status_free(&st);

    int np2 = fx_pids(&s_c, after, 16);
    bool same = np2 == np;
    for (int i = 0; same && i < np; i++)
        same = before[i] == after[i] && util_proc_alive(after[i]);
    ok(same, "every component is still up, none was restarted");
    ok(fx_wait_chain(&s_c, 0, 3, 5000) && fx_wait_chain(&s_c, 1, 3, 5000),
       "both chains are whole");

    /* the logs say what happened */
    int logged = 0;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t r = 0; r < 3; r++) {
            char path[700], rel[64];
            snprintf(rel, sizeof rel, "log/replica-%u-%u.log", s, r);
            char *text = util_read_file(db_cluster_path(&s_c, path, sizeof path, rel), NULL);
            logged += text && strstr(text, "dropped a bad message") != NULL;
            free(text);
        }
    char path[700];
    char *text = util_read_file(db_cluster_path(&s_c, path, sizeof path, "log/supervisor.log"), NULL);
    ok(text && strstr(text, "master: dropped a bad message"), "the chain master logged an error");
    free(text);
    is_int(logged, 6, "every replica logged an error");

    /* nothing lost, still serving */
    is_int(s_append(cl, 500), 0, "500 more events appended and acknowledged");
    for (uint32_t s = 0; s < 2; s++) {
        db_sub_t *sub = db_sub_new(&s_c, NULL, s, 0);
        uint64_t want = db_client_acked_seq(cl, s);
        fx_chain_t ck;
        fx_chain_init(&ck, &s_c, s);
        if (sub)
            fx_chain_follow(sub, &ck, want, 0, 60000, NULL, NULL); /* a bound */
        uint64_t got = ck.next - 1;
        int bad = ck.bad;
        ok(got == want && bad == 0 && want > acked[s],
           "shard %u: a new subscriber reads all %llu events, chained, the first %llu intact", s,
           (unsigned long long) want, (unsigned long long) acked[s]);
        if (got != want || bad)
            diag("it read up to seq %llu, %d bad%s%s", (unsigned long long) got, bad,
                 bad ? ": " : "", bad ? ck.why : "");
        db_sub_destroy(&sub);
    }
    setenv("LUX_NO_LINK", "1", 1);
    db_client_t *zc = db_client_new(&co);
    ok(zc && !db_client_linked(zc, 0) && !db_client_linked(zc, 1) && s_append(zc, 300) == 0,
       "with LUX_NO_LINK a client appends over ZeroMQ");
    db_client_destroy(&zc);
    unsetenv("LUX_NO_LINK");
    db_client_destroy(&cl);
    char out[4096];
    fx_stop(&s_c);
    is_int(fx_lux(out, sizeof out, NULL, 0, "audit --dir %s", s_c.dir), 0,
           "lux audit verifies every replica after the garbage");
    return done_testing();
}

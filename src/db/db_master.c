/*  db_master - chain master (see db_master.h).

    master.state (db_chain_load_state) is rewritten, atomically and
    fsync'd, on every change before anyone hears of it, and read at start;
    without it, every chain starts as 0..R-1 at epoch 1.
*/
#include "db_master.h"
#include "db_join.h"
#include "../net/net_pipe.h"
#include "../net/net_req.h"
#include "../net/net_wire.h"
#include "../util/util_complain.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"
#include "../util/util_stall.h"
#include "../util/util_time.h"

#include <unistd.h>

typedef struct {
    bool heard;       /* a heartbeat arrived since we started */
    int64_t seen_ms;  /* when */
    db_beat_t beat;   /* the last one */
    zframe_t *rid;    /* its routing ID, to push configurations */
} s_slot_t;

typedef struct {
    db_cluster_t cluster;
    net_sec_t *sec;
    zsock_t *pipe;
    zsock_t *router, *pub;
    db_chain_t *chains; /* one per shard */
    s_slot_t *slots;    /* shards x replicas */
    struct {            /* per shard: the seq its tail holds at for a joiner */
        uint64_t epoch; /* ...at this epoch (0: none known) */
        uint64_t seq;
    } *held;
    int64_t start_ms;         /* when its loop began: the start grace counts from here */
    util_stall_t stall;       /* s_on_timer's lateness: the time the master did not run */
    util_complain_t complain; /* garbage logs, at most once a second */
    util_buf_t buf;
    const char *join_gate;     /* LUX_TEST_JOIN_GATE, read once at start */
    bool join_gated;           /* ...and used: it holds one join only */
    bool seq_gated;            /* ...and its "seq-" point used (s_join_gate) */
    bool start_gated;          /* ...and its "start-" point used */
    char err[UTIL_ERRMSG_MAX]; /* why setup failed, for db_master_new */
} s_master_t;

static s_slot_t *
s_slot(s_master_t *self, uint32_t shard, uint32_t index)
{
    return &self->slots[shard * self->cluster.replicas + index];
}

static void
s_complain(s_master_t *self, const char *what)
{
    util_complain(&self->complain, "dropped a bad message: %s", what);
}

static int
s_save(s_master_t *self)
{
    int rc = db_chain_save_state(&self->cluster, self->chains);
    if (rc)
        log_error("cannot save the chain configuration: %s", lux_errmsg());
    return rc;
}

/* Fill endpoints we can know without a heartbeat (ipc ones). */
static void
s_fill_eps(s_master_t *self, db_chain_t *c)
{
    for (uint32_t k = 0; k < c->n; k++) {
        s_slot_t *sl = s_slot(self, c->shard, c->m[k].index);
        for (int e = 0; e < DB_EP_N; e++) {
            if (sl->heard)
                snprintf(c->m[k].ep[e], DB_EP_MAX, "%s", sl->beat.ep[e]);
            else if (!db_cluster_tcp(&self->cluster))
                db_cluster_replica_ep(&self->cluster, c->shard, c->m[k].index, e, c->m[k].ep[e],
                                      DB_EP_MAX);
        }
    }
}

static int
s_load(s_master_t *self)
{
    char path[PATH_MAX + 32];
    int rc = db_chain_load_state(&self->cluster, self->chains);
    if (rc == 0 && !util_exists(db_cluster_path(&self->cluster, path, sizeof path, "master.state")))
        rc = s_save(self);
    return rc;
}

/* Send chain c to one replica slot, or publish it. */
static void
s_send_config(s_master_t *self, zsock_t *sock, zframe_t *rid, const db_chain_t *c, uint32_t count)
{
    zmsg_t *m = zmsg_new();
    self->buf.len = 0;
    db_chain_encode(&self->buf, &self->cluster.id, c, count);
    if (rid)
        zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_CONFIG, count == 1 ? c->shard : NET_NO_SHARD,
                                                count == 1 ? c->epoch : 0)});
    zmsg_addmem(m, self->buf.data, self->buf.len);
    zmsg_send(&m, sock);
}

/* A chain changed: bump, save, push, publish. */
static void
s_changed(s_master_t *self, db_chain_t *c, const char *why)
{
    c->epoch++;
    s_fill_eps(self, c);
    s_save(self);
    char order[64] = "";
    size_t n = 0;
    for (uint32_t k = 0; k < c->n; k++)
        n += (size_t) snprintf(order + n, sizeof order - n, "%s%u", k ? "," : "", c->m[k].index);
    log_warn("shard %u: epoch %llu, chain [%s]: %s", c->shard, (unsigned long long) c->epoch,
             order, why);
    for (uint32_t i = 0; i < self->cluster.replicas; i++) {
        s_slot_t *sl = s_slot(self, c->shard, i);
        if (sl->rid)
            s_send_config(self, self->router, sl->rid, c, 1);
    }
    s_send_config(self, self->pub, NULL, c, 1);
}

/* Remove the member at pos. What the chain had committed then goes into
   master.state with it (db_out_t): the tail's last heartbeat, or the seq
   it holds at for a joiner when that is newer. Everything the tail
   committed had passed through every member, so the removed replica's
   file agrees with the chain up to there, whatever it was; past it, a
   head's events that were never forwarded may differ, and `lux audit`
   tells those (a note) from a fork at or below it (a problem). Not
   recorded when the tail was not heard since the master started: the
   audit then takes any fork of the file for a problem. */
static void
s_remove(s_master_t *self, db_chain_t *c, int pos, const char *why)
{
    char text[160];
    uint32_t index = c->m[pos].index;
    const s_slot_t *ts = s_slot(self, c->shard, c->m[c->n - 1].index);
    c->out[index].epoch = 0;
    if (ts->heard) {
        uint64_t at = ts->beat.last;
        if (self->held[c->shard].epoch == c->epoch && self->held[c->shard].seq > at)
            at = self->held[c->shard].seq;
        c->out[index].epoch = c->epoch + 1; /* s_changed bumps it */
        c->out[index].committed = at;
    }
    snprintf(text, sizeof text, "replica %u removed (%s)", c->m[pos].index, why);
    memmove(&c->m[pos], &c->m[pos + 1], (c->n - (uint32_t) pos - 1) * sizeof c->m[0]);
    c->n--;
    s_changed(self, c, text);
}

/* Answer an ERROR on the router (doc/protocol.md 5.4; no request ID). */
static void
s_refuse(s_master_t *self, zframe_t *rid, uint32_t shard, int code, const char *text)
{
    zmsg_t *e = net_error_msg(shard, 0, code, "%s", text);
    zmsg_prepend(e, &(zframe_t *) {zframe_dup(rid)});
    zmsg_send(&e, self->router);
}

/* The time the master did not run (util_stall.h: its loop stopped,
   paused or starved) taken off every heard replica's silence and off the
   start grace of those not heard yet, with a warning: their beats
   meanwhile wait unread in the router. Called by the timer (s_on_timer),
   and before a replica's silence is judged outside it (s_on_join_seq),
   since a stop can fall after zloop ran its timers and before it reads
   (t/1013). Returns now (util_mono_ms). */
static int64_t
s_not_run(s_master_t *self)
{
    int64_t now = util_mono_ms();
    int64_t away = util_stall_tick(&self->stall, now);
    if (away) {
        log_warn("the chain master did not run for %lld ms (stopped or starved): the "
                 "replicas' silence meanwhile is not counted", (long long) away);
        for (uint32_t i = 0; i < self->cluster.shards * self->cluster.replicas; i++)
            if (self->slots[i].heard)
                util_stall_credit(&self->slots[i].seen_ms, away, now);
        util_stall_credit(&self->start_ms, away, now);
    }
    return now;
}

static void
s_on_heartbeat(s_master_t *self, zframe_t *rid, zframe_t *body)
{
    /* the time the master did not run comes off the start grace before a
       first beat is judged by it: a stop can fall after zloop ran its
       timers and before it reads, as for JOIN_SEQ (t/6132) */
    int64_t now = s_not_run(self);
    db_beat_t beat;
    if (!body || db_beat_decode(&beat, zframe_data(body), zframe_size(body))) {
        char text[300];
        snprintf(text, sizeof text, "malformed HEARTBEAT: %s",
                 body ? lux_errmsg() : "no body");
        s_complain(self, text);
        s_refuse(self, rid, NET_NO_SHARD, LUX_EPROTO, text);
        return;
    }
    if (beat.shard >= self->cluster.shards || beat.index >= self->cluster.replicas) {
        s_complain(self, "HEARTBEAT from a replica this cluster does not have");
        return;
    }
    s_slot_t *sl = s_slot(self, beat.shard, beat.index);
    db_chain_t *c = &self->chains[beat.shard];
    int pos = db_chain_find(c, beat.index);
    bool eps_changed = sl->heard && memcmp(sl->beat.ep, beat.ep, sizeof beat.ep) != 0;
    /* A member that restarted lost what was in flight: it leaves and
       rejoins at the tail. We know it restarted when its pid changed; a
       replica we have not heard from since we started is one that is
       starting with us (a whole cluster's start, slow under load), unless
       we have run for longer than a silent replica is given (s_on_timer).
       "Run": start_ms is moved on by the time the master did not run
       (s_not_run, just above, and each timer), so a master stopped or
       starved at its start does not take the replicas that started with
       it for restarted ones when it reads their first beats (t/6132). */
    int64_t grace = self->cluster.dead_ms * 5 > 5000 ? self->cluster.dead_ms * 5 : 5000;
    bool restarted = beat.state == DB_RS_STARTING && beat.epoch == 0 &&
                     (sl->heard ? sl->beat.pid != beat.pid : now - self->start_ms > grace);
    if (!sl->heard)
        log_info("shard %u replica %u is up (pid %u, %s)", beat.shard, beat.index, beat.pid,
                 db_replica_state_name(beat.state));
    sl->heard = true;
    sl->seen_ms = now;
    sl->beat = beat;
    if (!sl->rid || !zframe_eq(sl->rid, rid)) {
        zframe_destroy(&sl->rid);
        sl->rid = zframe_dup(rid);
    }
    if (pos >= 0 && c->n > 1 && (beat.state == DB_RS_FAILED || restarted)) {
        /* it restarted (or failed): it rejoins at the tail once caught up */
        s_remove(self, c, pos, beat.state == DB_RS_FAILED ? "it failed" : "it restarted");
        return;
    }
    if (pos >= 0 && restarted) {
        /* its only replica restarted: a new epoch, so that nothing its
           previous process asked counts. A JOIN_SEQ of that process late
           on the wire would otherwise admit a joiner at a seq the new
           process never held at, while it acknowledges past it (found by
           the chain fixture, t/5012) */
        s_changed(self, c, "its only replica restarted");
        return;
    }
    if (pos >= 0 && (eps_changed || (db_cluster_tcp(&self->cluster) && !c->m[pos].ep[0][0]))) {
        s_changed(self, c, "endpoints changed");
        return;
    }
    if (beat.epoch != c->epoch || pos < 0)
        s_send_config(self, self->router, rid, c, 1);
}

static void
s_on_join(s_master_t *self, zframe_t *rid, const net_hdr_t *h, zframe_t *body)
{
    if (!body || zframe_size(body) != 12 || h->shard >= self->cluster.shards) {
        char text[200];
        snprintf(text, sizeof text, "malformed JOIN: %s",
                 h->shard >= self->cluster.shards ? "no such shard"
                                                  : "a body of 12 bytes expected");
        s_complain(self, text);
        s_refuse(self, rid, NET_NO_SHARD, LUX_EPROTO, text);
        return;
    }
    uint32_t index = util_rd32(zframe_data(body));
    uint64_t last = util_rd64(zframe_data(body) + 4);
    db_chain_t *c = &self->chains[h->shard];
    if (index >= self->cluster.replicas || !s_slot(self, h->shard, index)->heard) {
        s_complain(self, "JOIN from an unknown replica");
        return;
    }
    if (db_chain_find(c, index) < 0 && c->n < self->cluster.replicas && c->n > 0) {
        /* A joiner becomes the tail, whose log is by definition the
           committed one. A first check against the tail's last heartbeat
           sends a joiner that is plainly behind back to fetch; the join
           seq itself is fixed by the tail (s_on_join_seq). */
        const db_member_t *tail = &c->m[c->n - 1];
        const s_slot_t *ts = s_slot(self, h->shard, tail->index);
        /* a tail that holds serves reads up to the held seq only: that is
           the target then, not its last commit */
        uint64_t want = self->held[h->shard].epoch == c->epoch ? self->held[h->shard].seq
                                                                : ts->beat.last;
        if (!ts->heard || !ts->rid || last < want) {
            char text[200];
            if (ts->heard)
                snprintf(text, sizeof text, "shard %u: replica %u asked to join at seq %llu, but "
                         "the tail (replica %u) has seq %llu: catch up first", h->shard, index,
                         (unsigned long long) last, tail->index, (unsigned long long) want);
            else
                snprintf(text, sizeof text, "shard %u: replica %u asked to join at seq %llu, but "
                         "the tail (replica %u) has not reported its last seq yet", h->shard,
                         index, (unsigned long long) last, tail->index);
            log_info("%s", text);
            zmsg_t *e = net_error_msg(h->shard, c->epoch, LUX_EGAP, "%s", text);
            zmsg_prepend(e, &(zframe_t *) {zframe_dup(rid)});
            zmsg_send(&e, self->router);
            return;
        }
        /* Ask the tail to hold its acknowledgements and say at which seq:
           it answers JOIN_SEQ, and only that seq decides (doc/protocol.md
           8.4). The tail goes on acknowledging after its last heartbeat,
           so a join at the heartbeat's seq could lose acknowledged events
           if the old tail died before forwarding them. */
        uint8_t b[12];
        util_le32(b, index);
        util_le64(b + 4, last);
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &(zframe_t *) {zframe_dup(ts->rid)});
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_JOIN_HOLD, h->shard, c->epoch)});
        zmsg_addmem(m, b, sizeof b);
        zmsg_send(&m, self->router);
    } else {
        s_send_config(self, self->router, rid, c, 1);
    }
}

/* Test hook: LUX_TEST_JOIN_GATE=DIR makes the master stop at a point of
   a join, the first time after DIR/<P>armed exists: it creates
   DIR/<P>held and waits (up to 120 s) until DIR/<P>go exists, so that a
   test can act at that moment. The points P: "" about to admit a joiner
   (t/5010, t/5040); "seq-" a JOIN_SEQ just read, before it is judged
   (t/1013 stops the head's process there); "start-" the master's start,
   before its loop runs (t/6132: the replicas' first beats wait unread,
   as when the master is stopped at its start). The variable is read
   once, when the master starts. */
static void
s_join_gate(s_master_t *self, const char *point, uint32_t shard, uint32_t index, uint64_t at)
{
    const char *dir = self->join_gate;
    bool *gated = strcmp(point, "seq-") == 0     ? &self->seq_gated
                  : strcmp(point, "start-") == 0 ? &self->start_gated
                                                 : &self->join_gated;
    char path[PATH_MAX];
    if (!dir || !*dir || *gated)
        return;
    snprintf(path, sizeof path, "%s/%sarmed", dir, point);
    if (!util_exists(path))
        return;
    *gated = true;
    snprintf(path, sizeof path, "%s/%sheld", dir, point);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "shard %u replica %u seq %llu\n", shard, index, (unsigned long long) at);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/%sgo", dir, point);
    for (int64_t t0 = util_mono_ms(); util_mono_ms() - t0 < 120000 && !util_exists(path);)
        usleep(10000);
    unlink(path);
}

/* JOIN_SEQ from a tail holding for a joiner: admit the joiner when it has
   everything up to the held seq; send it back to fetch when it has not;
   release the tail (ERROR naming its token) when the joiner cannot join
   at this epoch. An answer at another epoch, or to a replica that is not
   the tail, is the current configuration. The joiner's silence is judged
   without the time the master did not run (s_not_run): before, a stop of
   the head between zloop's timers and this read refused a joiner that
   beat all along, "it fell silent" (t/1013; it asked again). */
static void
s_on_join_seq(s_master_t *self, zframe_t *rid, const net_hdr_t *h, zframe_t *body)
{
    char text[300];
    if (!body || zframe_size(body) != 32 || h->shard >= self->cluster.shards) {
        snprintf(text, sizeof text, "malformed JOIN_SEQ: %s",
                 h->shard >= self->cluster.shards ? "no such shard"
                                                  : "a body of 32 bytes expected");
        s_complain(self, text);
        s_refuse(self, rid, NET_NO_SHARD, LUX_EPROTO, text);
        return;
    }
    const uint8_t *p = zframe_data(body);
    uint32_t tail_index = util_rd32(p), index = util_rd32(p + 4);
    uint64_t last = util_rd64(p + 8), held = util_rd64(p + 16), token = util_rd64(p + 24);
    db_chain_t *c = &self->chains[h->shard];
    if (h->epoch != c->epoch || c->n == 0 || c->m[c->n - 1].index != tail_index) {
        s_send_config(self, self->router, rid, c, 1);
        return;
    }
    self->held[h->shard].epoch = c->epoch;
    self->held[h->shard].seq = held;
    s_join_gate(self, "seq-", h->shard, index, last);
    s_slot_t *js = index < self->cluster.replicas ? s_slot(self, h->shard, index) : NULL;
    const char *no = NULL;
    if (!js || !js->heard)
        no = "it is unknown to the master";
    else if (s_not_run(self) - js->seen_ms > self->cluster.dead_ms)
        no = "it fell silent";
    else if (db_chain_find(c, index) >= 0)
        no = "it is a member already";
    else if (c->n >= self->cluster.replicas)
        no = "the chain is whole";
    if (no) {
        snprintf(text, sizeof text, "shard %u: replica %u cannot join at epoch %llu: %s; the "
                 "tail (replica %u) stops holding at seq %llu", h->shard, index,
                 (unsigned long long) c->epoch, no, tail_index, (unsigned long long) held);
        log_info("%s", text);
        zmsg_t *e = net_error_msg(h->shard, c->epoch, LUX_ESTATE, "%s", text);
        net_error_req(e, token);
        self->held[h->shard].epoch = 0; /* the tail stops holding */
        zmsg_prepend(e, &(zframe_t *) {zframe_dup(rid)});
        zmsg_send(&e, self->router);
        return;
    }
    if (!db_join_admit(last, held)) {
        snprintf(text, sizeof text, "shard %u: replica %u asked to join at seq %llu, but the "
                 "tail (replica %u) holds at seq %llu: fetch up to it and ask again", h->shard,
                 index, (unsigned long long) last, tail_index, (unsigned long long) held);
        log_info("%s", text);
        if (js->rid) {
            zmsg_t *e = net_error_msg(h->shard, c->epoch, LUX_EGAP, "%s", text);
            zmsg_prepend(e, &(zframe_t *) {zframe_dup(js->rid)});
            zmsg_send(&e, self->router);
        }
        return;
    }
    s_join_gate(self, "", h->shard, index, last);
    char why[128];
    snprintf(why, sizeof why, "replica %u joined at the tail at seq %llu (the tail held at %llu)",
             index, (unsigned long long) last, (unsigned long long) held);
    c->m[c->n].index = index;
    c->n++;
    c->out[index].epoch = 0; /* a member again: its file holds the chain's */
    s_changed(self, c, why);
}

static void
s_on_status(s_master_t *self, zframe_t *rid)
{
    zmsg_t *m = zmsg_new();
    util_buf_t b;
    uint8_t pid[4];
    int64_t now = util_mono_ms();
    util_buf_init(&b);
    zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_STATUS_REP, NET_NO_SHARD, 0)});
    db_chain_encode(&b, &self->cluster.id, self->chains, self->cluster.shards);
    zmsg_addmem(m, b.data, b.len);
    b.len = 0;
    util_buf_put_u32(&b, self->cluster.shards * self->cluster.replicas);
    for (uint32_t i = 0; i < self->cluster.shards * self->cluster.replicas; i++) {
        s_slot_t *sl = &self->slots[i];
        util_buf_t one;
        util_buf_init(&one);
        if (sl->heard)
            db_beat_encode(&one, &sl->beat);
        util_buf_put_u64(&b, sl->heard ? (uint64_t) (now - sl->seen_ms) : UINT64_MAX);
        util_buf_put_blob(&b, one.data, one.len);
        util_buf_free(&one);
    }
    zmsg_addmem(m, b.data, b.len);
    util_le32(pid, (uint32_t) getpid());
    zmsg_addmem(m, pid, 4);
    zmsg_send(&m, self->router);
    util_buf_free(&b);
}

static int
s_on_router(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_master_t *self = arg;
    net_req_t r;
    (void) loop;
    int rc = net_req_recv(&r, sock, &self->complain, NULL, NET_NO_SHARD, 0);
    zframe_t *rid = r.rid, *body = r.body;
    net_hdr_t h = r.h;
    if (rc) {
        /* complained of and answered */
    } else if (h.type == NET_HEARTBEAT) {
        s_on_heartbeat(self, rid, body);
    } else if (h.type == NET_JOIN) {
        s_on_join(self, rid, &h, body);
    } else if (h.type == NET_JOIN_SEQ) {
        s_on_join_seq(self, rid, &h, body);
    } else if (h.type == NET_CONFIG_REQ) {
        if (h.shard < self->cluster.shards)
            s_send_config(self, sock, rid, &self->chains[h.shard], 1);
        else
            s_send_config(self, sock, rid, self->chains, self->cluster.shards);
    } else if (h.type == NET_STATUS_REQ) {
        s_on_status(self, rid);
    } else if (h.type == NET_PING) {
        zmsg_t *p = zmsg_new();
        zmsg_append(p, &(zframe_t *) {zframe_dup(rid)});
        zmsg_append(p, &(zframe_t *) {net_hdr_frame(NET_PONG, NET_NO_SHARD, 0)});
        zmsg_send(&p, sock);
    } else {
        char text[128];
        snprintf(text, sizeof text, "unexpected %s at the chain master", net_type_name(h.type));
        s_complain(self, text);
        net_req_refuse(sock, rid, NET_NO_SHARD, 0, LUX_EPROTO, 0, text);
    }
    net_req_done(&r);
    return 0;
}

/* Remove members that fell silent; a chain always keeps one. Silence is
   counted in the master's own running time: when this tick comes more
   than a heartbeat period late (the process stopped, its machine paused
   or starved), the time away is taken off every replica's silence (and
   off the start grace of those not heard yet), with a warning: their
   beats meanwhile wait unread in the router, and zloop runs a due timer
   before it reads. Before, the first tick after a stop longer than
   dead_ms removed every member but one of each chain (t/1012). A replica
   that died meanwhile is removed dead_ms after the master runs again.
   The rule is util_stall.h's, shared with the membership monitor. */
static int
s_on_timer(zloop_t *loop, int timer_id, void *arg)
{
    s_master_t *self = arg;
    int64_t now = s_not_run(self);
    int64_t grace = self->cluster.dead_ms * 5 > 5000 ? self->cluster.dead_ms * 5 : 5000;
    for (uint32_t s = 0; s < self->cluster.shards; s++) {
        db_chain_t *c = &self->chains[s];
        for (int k = 0; k < (int) c->n && c->n > 1; k++) {
            s_slot_t *sl = s_slot(self, s, c->m[k].index);
            bool dead = sl->heard ? now - sl->seen_ms > self->cluster.dead_ms
                                  : now - self->start_ms > grace;
            if (dead) {
                char why[64];
                snprintf(why, sizeof why, "silent for %lld ms",
                         (long long) (sl->heard ? now - sl->seen_ms : now - self->start_ms));
                s_remove(self, c, k, why);
                k--;
            }
        }
    }
    return 0;
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    s_master_t *self = arg;
    char ep[DB_EP_MAX];
    zloop_t *loop;

    self->pipe = pipe;
    util_log_name("master");
    util_buf_init(&self->buf);
    util_complain_init(&self->complain, UTIL_COMPLAIN_MS);
    /* s_on_timer runs every heartbeat; more than one late is a stall */
    util_stall_init(&self->stall, self->cluster.heartbeat_ms, self->cluster.heartbeat_ms);
    self->chains = calloc(self->cluster.shards, sizeof *self->chains);
    self->slots = calloc(self->cluster.shards * self->cluster.replicas, sizeof *self->slots);
    self->held = calloc(self->cluster.shards, sizeof *self->held);
    if (!self->chains || !self->slots || !self->held || s_load(self) ||
        !(self->router = net_bind(ZMQ_ROUTER,
                                  db_cluster_master_bind(&self->cluster, false, ep, sizeof ep),
                                  self->sec, NULL, 0)) ||
        !(self->pub = net_bind(ZMQ_PUB, db_cluster_master_bind(&self->cluster, true, ep, sizeof ep),
                               self->sec, NULL, 0))) {
        snprintf(self->err, sizeof self->err, "%s", lux_errmsg());
        zsock_signal(pipe, 1);
        goto out;
    }
    for (uint32_t s = 0; s < self->cluster.shards; s++)
        s_fill_eps(self, &self->chains[s]);
    zsock_signal(pipe, 0);
    /* the start grace (s_on_heartbeat, s_on_timer) and the stall's first
       tick count from here: before, the first tick only remembered its
       time (util_stall_tick answers 0 at a first call), so a stop of the
       master before its first timer was never taken off the grace, and
       the replicas that started with it were taken for restarted ones
       (their first beats) or removed as silent (t/6132) */
    self->start_ms = util_mono_ms();
    util_stall_tick(&self->stall, self->start_ms);
    s_join_gate(self, "start-", 0, 0, 0); /* test hook: the master held at its start */
    loop = zloop_new();
    zloop_reader(loop, pipe, net_pipe_on_term, self);
    zloop_reader(loop, self->router, s_on_router, self);
    zloop_timer(loop, (size_t) self->cluster.heartbeat_ms, 0, s_on_timer, self);
    zloop_start(loop);
    zloop_destroy(&loop);
    for (uint32_t i = 0; self->slots && i < self->cluster.shards * self->cluster.replicas; i++)
        zframe_destroy(&self->slots[i].rid);
    zsock_destroy(&self->router);
    zsock_destroy(&self->pub);
    free(self->chains);
    free(self->slots);
    free(self->held);
    util_buf_free(&self->buf);
    free(self);
    return;
out:
    zsock_destroy(&self->router);
    zsock_destroy(&self->pub);
    free(self->chains);
    free(self->slots);
    free(self->held);
    self->chains = NULL;
    self->slots = NULL;
    self->held = NULL;
    util_buf_free(&self->buf);
}

zactor_t *
db_master_new(const db_master_opts_t *o)
{
    s_master_t *self = calloc(1, sizeof *self);
    zactor_t *a;
    if (!self)
        return NULL;
    self->cluster = *o->cluster;
    self->sec = o->sec;
    self->join_gate = getenv("LUX_TEST_JOIN_GATE");
    a = zactor_new(s_actor, self);
    if (!a) {
        free(self);
    } else if (self->err[0]) {
        util_err(LUX_EIO, "chain master: %s", self->err);
        zactor_destroy(&a);
        free(self);
    }
    return a;
}

/* --- asking a master (clients of STATUS_REQ) ------------------------------------------ */

void
db_status_free(db_status_t *st)
{
    free(st->chains);
    free(st->beats);
    free(st->age_ms);
    memset(st, 0, sizeof *st);
}

int
db_master_status(const db_cluster_t *c, net_sec_t *sec, db_status_t *st, int timeout_ms)
{
    char ep[DB_EP_MAX];
    uint32_t nslots = c->shards * c->replicas, count;
    util_id_t id;
    int rc = LUX_ETIMEDOUT;
    zsock_t *s = net_connect(ZMQ_DEALER, db_cluster_master_ep(c, ep, sizeof ep), sec);
    if (!s)
        return LUX_EIO;
    memset(st, 0, sizeof *st);
    st->chains = calloc(c->shards, sizeof *st->chains);
    st->beats = calloc(nslots, sizeof *st->beats);
    st->age_ms = calloc(nslots, sizeof *st->age_ms);
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_STATUS_REQ, NET_NO_SHARD, 0)});
    zmsg_send(&m, s);
    zpoller_t *p = zpoller_new(s, NULL);
    if (zpoller_wait(p, timeout_ms) == s && (m = zmsg_recv(s))) {
        zframe_t *hf = zmsg_pop(m), *cf = zmsg_pop(m), *sf = zmsg_pop(m), *pf = zmsg_pop(m);
        net_hdr_t h;
        rc = LUX_EPROTO;
        if (net_hdr_decode(&h, hf) == 0 && h.type == NET_STATUS_REP && cf && sf && pf &&
            zframe_size(pf) == 4 &&
            db_chain_decode(zframe_data(cf), zframe_size(cf), &id, st->chains, c->shards,
                            &count) == 0 &&
            count == c->shards) {
            util_rd_t r;
            util_rd_init(&r, zframe_data(sf), zframe_size(sf));
            uint32_t n = util_rd_u32(&r);
            rc = n == nslots ? 0 : LUX_EPROTO;
            for (uint32_t i = 0; i < n && i < nslots && !rc; i++) {
                uint64_t age = util_rd_u64(&r);
                size_t len;
                const uint8_t *b = util_rd_blob(&r, &len);
                st->age_ms[i] = age == UINT64_MAX ? -1 : (int64_t) age;
                if (len && db_beat_decode(&st->beats[i], b, len))
                    rc = LUX_EPROTO;
            }
            st->master_pid = util_rd32(zframe_data(pf));
        }
        zframe_destroy(&hf);
        zframe_destroy(&cf);
        zframe_destroy(&sf);
        zframe_destroy(&pf);
        zmsg_destroy(&m);
    }
    zpoller_destroy(&p);
    zsock_destroy(&s);
    if (rc)
        db_status_free(st);
    if (rc == LUX_ETIMEDOUT)
        util_err(rc, "the chain master at %s did not answer within %d ms", ep, timeout_ms);
    else if (rc)
        util_err(rc, "the chain master sent a malformed status");
    return rc;
}


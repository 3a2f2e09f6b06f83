/*  db_replica - a chain replica's network thread: the actor, its loop and
    heartbeat, the chain configuration, and the helpers its parts send
    and fail with. What a replica does is in its parts (db_replica_int.h
    lists them): the pipeline, appends at the head, joining, local links.

    CONFIGURATION. The master pushes our shard's chain (CONFIG) on every
    change, and we ask for it (CONFIG_REQ) whenever a peer's epoch says we
    are behind. A new configuration places us: a member links to its
    successor (HELLO) or, as the tail, acknowledges what it committed; a
    replica not in the chain leaves what it was doing and joins.

    THE LOOP. The pipe, the append, chain and master sockets are polled by
    descriptor (net_raw); every other handler ends by reading their events
    (db_rep_settle), and the heartbeat marks them all, so a missed notice
    costs a beat, not a hang.

    ERRORS. Garbage on any socket is dropped with an ERROR reply where the
    socket can reply, logged at most once a second (util_complain), and
    changes nothing. A failed write stops the replica ("FAILED" on the
    pipe); its host exits, is restarted, and the replica rejoins.
*/
#include "db_replica_int.h"
#include "../net/net_pipe.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* --- small helpers ---------------------------------------------------------------- */

/* --- helpers for every part ------------------------------------------------------ */

void
db_rep_touch(db_rep_t *self, zsock_t *sock)
{
    if (self->raw)
        net_raw_touch(self->raw, sock);
}

int
db_rep_settle(db_rep_t *self, int rc)
{
    if (self->raw && net_raw_settle(self->raw) == -1)
        return -1;
    return rc;
}

void
db_rep_complain(db_rep_t *self, const char *endpoint, const char *what)
{
    util_complain(&self->complain, "%s endpoint: dropped a bad message: %s", endpoint, what);
}

/* ERROR, naming the request it answers (doc/protocol.md 5.4): an
   APPEND's first event ID, 0 for anything else */
void
db_rep_send_error(db_rep_t *self, zsock_t *sock, zframe_t **rid_p, int code, const char *text,
                  uint64_t req)
{
    zmsg_t *m = net_error_msg(self->shard, self->cfg.epoch, code, "%s", text);
    net_error_req(m, req);
    if (rid_p && *rid_p)
        zmsg_prepend(m, rid_p);
    db_rep_emit(self, sock, &m);
}

void
db_rep_ask_config(db_rep_t *self)
{
    db_rep_send(self, self->sk_master, NULL, NET_CONFIG_REQ, 0, NULL, 0, NULL, 0);
}

/* Send header + one body frame (+ an optional second) on sock, to rid when
   sock is a ROUTER. */
void
db_rep_send(db_rep_t *self, zsock_t *sock, zframe_t *rid, int type, uint64_t epoch, const void *body,
       size_t n, const void *body2, size_t n2)
{
    zmsg_t *m = zmsg_new();
    if (rid)
        zmsg_append(m, &(zframe_t *) {zframe_dup(rid)});
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, self->shard, epoch)});
    if (body)
        zmsg_addmem(m, body, n);
    if (body2)
        zmsg_addmem(m, body2, n2);
    db_rep_emit(self, sock, &m);
}

/* A message whose header names another shard than ours: ESHARD, so that
   a peer with a stale configuration (a tcp port now bound by a replica of
   another shard) asks the master again. */
void
db_rep_wrong_shard(db_rep_t *self, zsock_t *sock, zframe_t **rid_p, const net_hdr_t *h,
              const char *endpoint)
{
    char text[200];
    snprintf(text, sizeof text, "%s for shard %u at the %s endpoint of shard %u replica %u",
             net_type_name(h->type), h->shard, endpoint, self->shard, self->index);
    db_rep_complain(self, endpoint, text);
    db_rep_send_error(self, sock, rid_p, LUX_ESHARD, text, 0);
}

bool
db_rep_is_head(const db_rep_t *self)
{
    return self->state == DB_RS_CHAIN && self->pos == 0;
}

bool
db_rep_is_tail(const db_rep_t *self)
{
    return self->state == DB_RS_CHAIN && self->pos == (int) self->cfg.n - 1;
}

void
db_rep_fail(db_rep_t *self, int code, const char *text)
{
    if (self->state == DB_RS_FAILED)
        return;
    log_error("shard %u replica %u failed: %s (%s)", self->shard, self->index, text,
              lux_strerror(code));
    self->state = DB_RS_FAILED;
    snprintf(self->failed, sizeof self->failed, "%s", text);
    /* a full disk is the common cause, and SQLite says it vaguely ("database
       or disk is full"): ask the file system */
    struct statvfs vfs;
    bool full = strstr(text, "disk is full") ||
                (statvfs(self->db_path, &vfs) == 0 && vfs.f_bavail * vfs.f_frsize < (64u << 10));
    snprintf(self->cause, sizeof self->cause, "%s", full ? strerror(ENOSPC) : lux_strerror(code));
    atomic_store(&self->rstate.is_tail, 0);
    zstr_sendx(self->pipe, "FAILED", text, NULL);
    db_rep_touch(self, self->pipe);
}

/* --- configuration ---------------------------------------------------------------------- */

/* Leave the chain (we were removed while alive): forget what was in
   flight; what the tail did not commit will be truncated when we rejoin. */
static void
s_leave(db_rep_t *self)
{
    db_rep_waiters_drop(self);
    zframe_destroy(&self->pred_rid);
    db_rep_succ_close(self);
    atomic_store(&self->rstate.is_tail, 0);
}

static void
s_apply_config(db_rep_t *self, const db_chain_t *c)
{
    int pos = db_chain_find(c, self->index);
    bool was_member = self->state == DB_RS_CHAIN;
    bool same_tail = self->cfg.n && c->n &&
                     self->cfg.m[self->cfg.n - 1].index == c->m[c->n - 1].index &&
                     strcmp(self->cfg.m[self->cfg.n - 1].ep[DB_EP_READ],
                            c->m[c->n - 1].ep[DB_EP_READ]) == 0;

    if (self->state == DB_RS_FAILED || c->epoch < self->cfg.epoch ||
        (c->epoch == self->cfg.epoch && self->state != DB_RS_STARTING && self->cfg.n))
        return;
    log_info("shard %u: epoch %llu -> %llu, position %d of %u", self->shard,
             (unsigned long long) self->cfg.epoch, (unsigned long long) c->epoch, pos, c->n);
    bool was_tail = db_rep_is_tail(self);
    db_rep_hold_reset(self, c->epoch);
    self->cfg = *c;
    self->pos = pos;
    if (pos < 0) {
        if (was_member) {
            log_warn("shard %u: replica %u was removed from the chain at epoch %llu; rejoining",
                     self->shard, self->index, (unsigned long long) c->epoch);
            s_leave(self);
        }
        if (self->state != DB_RS_JOINING || !same_tail) {
            self->state = DB_RS_JOINING;
            self->join.phase = DB_J_IDLE;
            db_rep_join_start(self);
        }
        return;
    }
    db_rep_join_stop(self);
    self->state = DB_RS_CHAIN;
    zframe_destroy(&self->pred_rid); /* the predecessor says HELLO at this epoch */

    if (pos < (int) c->n - 1) {
        db_rep_succ_open(self, &c->m[pos + 1]);
        atomic_store(&self->rstate.is_tail, 0);
    } else {
        db_rep_succ_close(self);
        /* as the tail, everything committed here is committed; a tail
           that stays the tail publishes what it held back */
        if (!was_tail)
            self->pub_seq = self->commit_seq;
        atomic_store(&self->rstate.is_tail, 1);
        db_rep_tail_ack(self);
    }
    atomic_store(&self->rstate.epoch, c->epoch);
    if (pos == 0)
        db_rep_ack_clients(self);
}

static int
s_on_master(zloop_t *loop, zsock_t *sock, void *arg)
{
    db_rep_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *hf = msg ? zmsg_pop(msg) : NULL;
    zframe_t *body = msg ? zmsg_pop(msg) : NULL;
    net_hdr_t h;
    util_id_t cluster;
    uint32_t count = 0;

    if (!msg)
        return 0;
    if (net_hdr_decode(&h, hf)) {
        db_rep_complain(self, "master", lux_errmsg());
    } else if (h.type == NET_CONFIG && body) {
        /* the master sends just our shard's chain; a full CONFIG is fine too */
        size_t max = self->cluster.shards;
        db_chain_t *all = calloc(max, sizeof *all);
        if (all && db_chain_decode(zframe_data(body), zframe_size(body), &cluster, all,
                                   (uint32_t) max, &count) == 0 &&
            util_id_eq(&cluster, &self->cluster.id)) {
            for (uint32_t i = 0; i < count; i++)
                if (all[i].shard == self->shard)
                    s_apply_config(self, &all[i]);
        } else {
            db_rep_complain(self, "master", "bad CONFIG");
        }
        free(all);
    } else if (h.type == NET_JOIN_HOLD) {
        db_rep_on_join_hold(self, &h, body);
    } else if (h.type == NET_ERROR) {
        int code;
        char text[256];
        net_error_decode(body, &code, text, sizeof text);
        if (db_rep_join_error(self, &h, msg, code, text)) {
            /* an answer about a join */
        } else {
            log_warn("chain master: %s", text);
        }
    }
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

/* --- heartbeat, pipe ------------------------------------------------------------------- */

static int
s_on_beat(zloop_t *loop, int timer_id, void *arg)
{
    db_rep_t *self = arg;
    db_beat_t beat;
    int64_t now = util_mono_ms();

    memset(&beat, 0, sizeof beat);
    beat.shard = self->shard;
    beat.index = self->index;
    beat.pid = (uint32_t) getpid();
    beat.epoch = self->cfg.epoch;
    beat.last = self->commit_seq;
    beat.state = (uint8_t) self->state;
    for (int e = 0; e < DB_EP_N; e++)
        snprintf(beat.ep[e], DB_EP_MAX, "%s", self->ep[e]);
    snprintf(beat.path, sizeof beat.path, "%s", self->db_path);
    self->buf.len = 0;
    db_beat_encode(&self->buf, &beat);
    db_rep_send(self, self->sk_master, NULL, NET_HEARTBEAT, self->cfg.epoch, self->buf.data,
           self->buf.len, NULL, 0);
    if (self->state == DB_RS_FAILED)
        return 0; /* beats say so (lux status: failed, not silent); nothing more */

    if (self->state == DB_RS_CHAIN && self->sk_succ && !self->succ_synced &&
        now - self->hello_ms >= 3 * self->cluster.heartbeat_ms)
        db_rep_hello(self);
    db_rep_join_beat(self, now);
    if (db_rep_is_tail(self) && !self->hold.on && now - self->pub_beat_ms >= DB_REP_PUB_BEAT_MS) {
        uint8_t b[NET_BATCH_HDR];
        util_le64(b, self->commit_seq + 1);
        util_le32(b + 8, 0);
        db_rep_send(self, self->sk_pub, NULL, NET_PUBLISH, self->cfg.epoch, b, sizeof b, NULL, 0);
        self->pub_beat_ms = now;
    }
    return 0;
}


/* --- the handlers as the loop calls them ----------------------------------------------- */

/* The heartbeat; it also has every raw socket's events read. */
static int
s_on_beat_marked(zloop_t *loop, int timer_id, void *arg)
{
    db_rep_t *self = arg;
    if (self->raw)
        net_raw_touch_all(self->raw);
    return s_on_beat(loop, timer_id, arg);
}
DB_REP_SETTLING(s_on_beat_marked, int)

/* --- setup and teardown ------------------------------------------------------------------ */

static int
s_bind_all(db_rep_t *self)
{
    char ep[DB_EP_MAX];
    zsock_t **socks[DB_EP_N] = {&self->sk_append, &self->sk_chain, NULL, &self->sk_pub};
    int types[DB_EP_N] = {ZMQ_ROUTER, ZMQ_ROUTER, 0, ZMQ_PUB};
    for (int k = 0; k < DB_EP_N; k++) {
        if (!socks[k])
            continue;
        db_cluster_replica_ep(&self->cluster, self->shard, self->index, k, ep, sizeof ep);
        *socks[k] = net_bind(types[k], ep, self->sec, self->ep[k], DB_EP_MAX);
        if (!*socks[k])
            return LUX_EIO;
        net_hwm(*socks[k], k == DB_EP_PUB ? 10000 : 0);
    }
    return 0;
}

static int
s_setup(db_rep_t *self)
{
    char ep[DB_EP_MAX];
    db_store_opts_t so = {.path = self->db_path, .cluster = self->cluster.id,
                          .shard = self->shard, .sync_full = self->cluster.sync_full,
                          .external_checkpoint = true};
    db_store_t *store = db_store_open(&so);
    if (!store)
        return LUX_EIO;
    self->recv_seq = self->commit_seq = self->fwd_seq = self->pub_seq =
        db_store_last_seq(store);
    db_rep_set_ack(self, self->commit_seq);
    memcpy(self->recv_hash, db_store_last_hash(store), DB_HASH_LEN);
    self->store = store;
    db_store_watch_wal(store, &self->rstate.wal_pages);
    if (!(self->writer = db_writer_new(store)))
        return util_err(LUX_EIO, "cannot start the writer thread");
    so.reader = true;
    if (!(self->rstore = db_store_open(&so)))
        return LUX_EIO;
    /* without it, resent events would be taken as new: no start */
    int rc = db_rep_seen_load(self, self->rstore);
    if (rc)
        return util_err_ctx(rc, "%s: the table of clients' newest events", self->db_path);
    db_reader_opts_t ro = {.db_path = self->db_path, .cluster = &self->cluster.id,
                           .shard = self->shard, .sec = self->sec, .state = &self->rstate,
                           .bound = self->ep[DB_EP_READ], .bound_len = DB_EP_MAX};
    db_cluster_replica_ep(&self->cluster, self->shard, self->index, DB_EP_READ, ep, sizeof ep);
    ro.ep = ep;
    if (!(self->reader = db_reader_new(&ro)))
        return LUX_EIO;
    if (s_bind_all(self))
        return LUX_EIO;
    db_cluster_master_ep(&self->cluster, ep, sizeof ep);
    if (!(self->sk_master = net_connect(ZMQ_DEALER, ep, self->sec)))
        return LUX_EIO;
    /* the master may be down for a while (the chain serves on): a beat it
       cannot take is dropped, never waited on */
    zsock_set_sndtimeo(self->sk_master, 0);
    return 0;
}

static void
s_teardown(db_rep_t *self)
{
    s_leave(self);
    /* the writer commits what was queued before it stops, reading the
       pending batches: destroy it first, then free them */
    zactor_destroy(&self->writer);
    db_store_close(&self->store);
    db_rep_pipe_free(self);
    db_rep_append_free(self);
    zactor_destroy(&self->reader);
    for (int k = 0; k < DB_EP_N; k++)
        if (self->ep[k][0])
            net_forget(self->ep[k]);
    db_rep_links_close(self);
    zsock_destroy(&self->sk_append);
    zsock_destroy(&self->sk_chain);
    zsock_destroy(&self->sk_pub);
    zsock_destroy(&self->sk_master);
    zsock_destroy(&self->sk_tail);
    db_store_close(&self->rstore);
    util_buf_free(&self->buf);
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    db_rep_t *self = arg;
    self->pipe = pipe;
    util_log_name("replica %u.%u", self->shard, self->index);
    util_buf_init(&self->buf);
    self->pos = -1;
    self->link_fd = -1;
    util_complain_init(&self->complain, UTIL_COMPLAIN_MS);
    atomic_store(&self->rstate.upto, 0);
    if (s_setup(self)) {
        snprintf(self->db_path, sizeof self->db_path, "!%s", lux_errmsg());
        s_teardown(self);
        zsock_signal(pipe, 1);
        return;
    }
    zsock_signal(pipe, 0);
    self->loop = zloop_new();
    self->raw = net_raw_new(self->loop, self);
    int rc = self->raw ? 0 : LUX_ENOMEM;
    if (!rc && net_raw_add(self->raw, pipe, net_pipe_on_term) < 0)
        rc = LUX_ENOMEM;
    if (!rc && (self->raw_append = net_raw_add(self->raw, self->sk_append, db_rep_on_append)) < 0)
        rc = LUX_ENOMEM;
    if (!rc)
        db_rep_links_listen(self);
    if (!rc && net_raw_add(self->raw, self->sk_chain, db_rep_on_chain) < 0)
        rc = LUX_ENOMEM;
    if (!rc && net_raw_add(self->raw, self->sk_master, s_on_master) < 0)
        rc = LUX_ENOMEM;
    if (rc) {
        /* nothing polled: stop as a replica that cannot write does */
        db_rep_fail(self, rc, lux_errmsg());
        net_raw_destroy(&self->raw);
        zloop_destroy(&self->loop);
        s_teardown(self);
        free(self);
        return;
    }
    db_rep_writer_watch(self, true);
    zloop_timer(self->loop, (size_t) self->cluster.heartbeat_ms, 0, s_on_beat_marked_w, self);
    s_on_beat_marked_w(self->loop, 0, self);
    log_info("serving %s (last seq %llu)", self->db_path, (unsigned long long) self->commit_seq);
    zloop_start(self->loop);
    net_raw_destroy(&self->raw);
    zloop_destroy(&self->loop);
    s_teardown(self);
    free(self);
}

const char *const db_replica_restart_hooks[] = {"LUX_TEST_REPLICA_HOLD", "LUX_TEST_APPEND_GATE",
                                                 "LUX_TEST_CKPT_OFF", NULL};

/* A test hook (t/5020): with LUX_TEST_REPLICA_HOLD=DIR, a replica does not
   start while the file DIR/replica-S-I exists, as one whose machine is not
   back yet: its process runs (so its supervisor starts no other) and
   nothing of it beats. A stop (SIGTERM) ends the wait. */
static void
s_test_hold(const db_replica_opts_t *o)
{
    const char *dir = getenv("LUX_TEST_REPLICA_HOLD");
    char path[PATH_MAX];
    if (!dir || !*dir)
        return;
    snprintf(path, sizeof path, "%s/replica-%u-%u", dir, o->shard, o->index);
    if (util_exists(path))
        log_info("LUX_TEST_REPLICA_HOLD: waiting while %s exists", path);
    while (util_exists(path) && !zsys_interrupted)
        usleep(10000);
}

zactor_t *
db_replica_new(const db_replica_opts_t *o)
{
    db_rep_t *self = calloc(1, sizeof *self);
    zactor_t *a;
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    self->cluster = *o->cluster;
    self->shard = o->shard;
    self->index = o->index;
    self->sec = o->sec;
    db_cluster_replica_db(&self->cluster, o->shard, o->index, self->db_path,
                          sizeof self->db_path);
    const char *gate = getenv("LUX_TEST_APPEND_GATE"); /* read once: see s_append_gate */
    snprintf(self->append_gate, sizeof self->append_gate, "%s", gate ? gate : "");
    /* test hook: LUX_TEST_TAKE_FAIL=INDEX:SEQ (db_rep_take_batch, and s_append at the
       head: t/README) */
    const char *tf = getenv("LUX_TEST_TAKE_FAIL");
    unsigned ti;
    unsigned long long ts;
    if (tf && sscanf(tf, "%u:%llu", &ti, &ts) == 2 && ti == o->index)
        self->take_fail_seq = ts;
    s_test_hold(o);
    /* On success the actor owns self and frees it when it stops. On a
       failed setup it signals and returns without freeing, leaving the
       message in db_path for us. */
    a = zactor_new(s_actor, self);
    if (!a) {
        free(self);
        util_err(LUX_ENOMEM, "cannot start a thread");
    } else if (self->db_path[0] == '!') {
        util_err(LUX_EIO, "shard %u replica %u: %s", o->shard, o->index, self->db_path + 1);
        zactor_destroy(&a);
        free(self);
    }
    return a;
}

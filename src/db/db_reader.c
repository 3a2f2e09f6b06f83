/*  db_reader - read-serving and checkpointing thread of a replica (see
    db_reader.h). Garbage on the read socket is answered with an ERROR and
    logged at most once a second; it never stops the thread. */
#include "db_reader.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

typedef struct {
    zsock_t *pipe;
    zsock_t *sock;          /* ROUTER, the read endpoint */
    db_store_t *store;      /* reader-mode connection */
    db_reader_state_t *state;
    uint32_t shard;
    util_buf_t buf;         /* reply batch */
    int64_t last_complaint; /* ms, to rate-limit garbage logs */
} s_reader_t;

static void
s_complain(s_reader_t *self, const char *what)
{
    int64_t now = util_mono_ms();
    if (now - self->last_complaint >= 1000) {
        log_error("read endpoint: dropped a bad message: %s", what);
        self->last_complaint = now;
    }
}

/* Answer an ERROR to the requester; takes *rid_p. */
static void
s_error(s_reader_t *self, zframe_t **rid_p, int code, const char *text)
{
    zmsg_t *m = net_error_msg(self->shard, atomic_load(&self->state->epoch), code, "%s", text);
    zmsg_prepend(m, rid_p);
    zmsg_send(&m, self->sock);
}

static int
s_on_read(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_reader_t *self = arg;
    zmsg_t *msg = zmsg_recv(sock);
    zframe_t *rid, *hf, *body;
    net_hdr_t h;
    char text[256];

    if (!msg)
        return 0;
    rid = zmsg_pop(msg);
    hf = zmsg_pop(msg);
    body = zmsg_pop(msg);
    if (net_hdr_decode(&h, hf)) {
        snprintf(text, sizeof text, "%s", lux_errmsg());
        s_complain(self, text);
        if (rid)
            s_error(self, &rid, LUX_EPROTO, text);
        goto done;
    }
    if (h.type == NET_PING) {
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &rid);
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_PONG, self->shard,
                                                    atomic_load(&self->state->epoch))});
        zmsg_send(&m, sock);
        goto done;
    }
    if (h.type != NET_READ || !body || zframe_size(body) != 24) {
        snprintf(text, sizeof text, "expected READ of 24 bytes, got %s with %zu bytes",
                 net_type_name(h.type), body ? zframe_size(body) : 0);
        s_complain(self, text);
        s_error(self, &rid, LUX_EPROTO, text);
        goto done;
    }
    uint64_t epoch = atomic_load(&self->state->epoch);
    if (h.shard != self->shard || h.epoch != epoch || !atomic_load(&self->state->is_tail)) {
        snprintf(text, sizeof text, "shard %u: READ for shard %u epoch %llu refused: %s epoch %llu",
                 self->shard, h.shard, (unsigned long long) h.epoch,
                 atomic_load(&self->state->is_tail) ? "this tail is at" : "not the tail at",
                 (unsigned long long) epoch);
        s_error(self, &rid, h.epoch != epoch ? LUX_EEPOCH : LUX_ESTATE, text);
        goto done;
    }
    const uint8_t *p = zframe_data(body);
    uint64_t req = util_rd64(p), from = util_rd64(p + 8);
    uint32_t max = util_rd32(p + 16), max_bytes = util_rd32(p + 20), count = 0;
    if (max > DB_READ_MAX)
        max = DB_READ_MAX;
    if (max_bytes > DB_READ_MAX_BYTES || max_bytes == 0)
        max_bytes = DB_READ_MAX_BYTES;
    int rc = db_store_refresh(self->store);
    if (!rc) {
        net_batch_begin(&self->buf, from ? from : 1);
        if (from && from <= db_store_last_seq(self->store))
            rc = db_store_read(self->store, from, max, max_bytes, &self->buf, &count);
        net_batch_end(&self->buf, count);
    }
    if (rc || self->buf.oom) {
        log_error("READ from %llu: %s", (unsigned long long) from, lux_errmsg());
        s_error(self, &rid, rc ? rc : LUX_ENOMEM, lux_errmsg());
        goto done;
    }
    uint8_t rep[16];
    util_le64(rep, req);
    util_le64(rep + 8, db_store_last_seq(self->store));
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &rid);
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_READ_REP, self->shard, epoch)});
    zmsg_addmem(m, rep, sizeof rep);
    zmsg_addmem(m, self->buf.data, self->buf.len);
    zmsg_send(&m, sock);
    if (self->buf.cap > (16u << 20)) { /* do not keep a huge buffer around */
        util_buf_free(&self->buf);
    }
done:
    zframe_destroy(&rid);
    zframe_destroy(&hf);
    zframe_destroy(&body);
    zmsg_destroy(&msg);
    return 0;
}

static int
s_on_timer(zloop_t *loop, int timer_id, void *arg)
{
    s_reader_t *self = arg;
    if (db_store_checkpoint(self->store))
        log_warn("%s", lux_errmsg());
    return 0;
}

static int
s_on_pipe(zloop_t *loop, zsock_t *pipe, void *arg)
{
    zmsg_t *m = zmsg_recv(pipe);
    char *cmd = m ? zmsg_popstr(m) : NULL;
    int stop = !cmd || strcmp(cmd, "$TERM") == 0;
    free(cmd);
    zmsg_destroy(&m);
    return stop ? -1 : 0;
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    db_reader_opts_t *o = arg;
    s_reader_t self = {.pipe = pipe, .state = o->state, .shard = o->shard};
    db_store_opts_t so = {.path = o->db_path, .cluster = *o->cluster, .shard = o->shard,
                          .reader = true};
    zloop_t *loop = NULL;

    util_log_name("reader %u", o->shard);
    util_buf_init(&self.buf);
    self.store = db_store_open(&so);
    if (self.store)
        self.sock = net_bind(ZMQ_ROUTER, o->ep, o->sec, o->bound, o->bound_len);
    if (!self.store || !self.sock) {
        /* error messages are per thread: hand ours to the owner in the
           bound buffer, which it reads once zactor_new returns */
        snprintf(o->bound, o->bound_len, "!%s", lux_errmsg());
        zsock_signal(pipe, 1);
        goto out;
    }
    net_hwm(self.sock, 0);
    zsock_signal(pipe, 0);
    loop = zloop_new();
    zloop_reader(loop, pipe, s_on_pipe, &self);
    zloop_reader(loop, self.sock, s_on_read, &self);
    zloop_timer(loop, 250, 0, s_on_timer, &self);
    zloop_start(loop);
out:
    zloop_destroy(&loop);
    zsock_destroy(&self.sock);
    db_store_close(&self.store);
    util_buf_free(&self.buf);
}

zactor_t *
db_reader_new(db_reader_opts_t *o)
{
    zactor_t *a = zactor_new(s_actor, o);
    if (!a)
        return NULL;
    /* zactor_new waited for the signal; a failure left "!message" */
    if (o->bound[0] == '!') {
        util_err(LUX_EIO, "%s", o->bound + 1);
        zactor_destroy(&a);
        return NULL;
    }
    return a;
}

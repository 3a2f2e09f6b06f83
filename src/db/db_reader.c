/*  db_reader - read-serving and checkpointing thread of a replica (see
    db_reader.h).

    Reading is SQLite-bound (about 1 us per event: stepping the row and
    some sixty column calls), so the reader thread only checks requests and
    relays answers; DB_READ_WORKERS worker threads, each with a connection
    of its own, do the reading. A subscriber keeps three READs in flight, so
    two workers read its next two chunks at once and the third waits for
    the first worker done, which need not wait for the subscriber. A worker gets a job
    (pointer) and gives it back filled; jobs wait in a queue when every
    worker is busy.

    Garbage on the read socket is answered with an ERROR and logged at most
    once a second; it never stops the thread.
*/
#include "db_reader.h"
#include "../net/net_pipe.h"
#include "../net/net_req.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdlib.h>
#include <unistd.h>

#define DB_READ_WORKERS 2

typedef struct s_job {
    struct s_job *next;
    zframe_t *rid;   /* the requester */
    uint64_t req;    /* its request ID */
    uint64_t from;
    uint32_t max, max_bytes;
    uint64_t epoch;  /* the epoch the request was served at */
    int rc;          /* set by the worker */
    char err[256];
    uint64_t last;   /* the tail's last seq, set by the worker */
    db_reader_state_t *state; /* the replica's: the worker checks it after reading */
    uint32_t shard;
    const char *gate; /* LUX_TEST_READ_GATE, read once by the reader */
    util_buf_t buf;  /* the batch, filled by the worker */
} s_job_t;

typedef struct {
    zactor_t *actor;
    s_job_t *job; /* the job it has, or NULL */
} s_worker_t;

typedef struct {
    zsock_t *pipe;
    zsock_t *sock;          /* ROUTER, the read endpoint */
    db_store_t *store;      /* for checkpoints */
    db_reader_state_t *state;
    uint32_t shard;
    const char *gate;       /* LUX_TEST_READ_GATE, read once at start */
    bool ckpt_off;          /* LUX_TEST_CKPT_OFF: no checkpoint (t/2102) */
    s_worker_t workers[DB_READ_WORKERS];
    s_job_t *queue, *queue_last;
    util_complain_t complain; /* garbage logged at most once a second */
    int64_t ckpt_ms;        /* when the last checkpoint ran */
    uint64_t full_at;       /* the WAL's size after the last whole FULL checkpoint */
    int64_t full_ms;        /* ...and when it ran */
} s_reader_t;

/* --- workers ------------------------------------------------------------------------- */

/* Test hook: LUX_TEST_READ_GATE=DIR makes a worker, given a READ asking
   for exactly N events (N written in DIR/armed), remove DIR/armed, create
   DIR/held and wait (up to 120 s) until DIR/go exists before it reads,
   so that a test can change the chain between a READ's arrival and its
   reading (t/5040). The variable is read once, when the reader starts,
   not on each READ. */
static void
s_read_gate(const char *dir, uint32_t max)
{
    char path[PATH_MAX];
    if (!dir || !*dir)
        return;
    snprintf(path, sizeof path, "%s/armed", dir);
    FILE *f = fopen(path, "r");
    unsigned long n = 0;
    if (!f)
        return;
    bool match = fscanf(f, "%lu", &n) == 1 && n == max;
    fclose(f);
    if (!match || unlink(path))
        return; /* not ours, or another worker took it */
    snprintf(path, sizeof path, "%s/held", dir);
    if ((f = fopen(path, "w")))
        fclose(f);
    snprintf(path, sizeof path, "%s/go", dir);
    for (int64_t t0 = util_mono_ms(); util_mono_ms() - t0 < 120000 && !util_exists(path);)
        usleep(10000);
    unlink(path);
}

/* What a job may serve, checked after the worker read the file's last
   seq, not when the READ arrived: only what the tail acknowledged
   (state->upto, its ack_seq: the writer commits before the replica hears
   of it, and a hold for a joiner keeps ack_seq at the held seq), and a
   READ whose epoch ended meanwhile, or at a replica that is no longer
   the tail, is refused. Taken at arrival, the
   bound let a READ serve events committed during a hold that the tail
   truncated when the master removed it: a subscriber saw a history that
   never was (issue 26). upto is loaded first: the replica ends a hold at
   a new epoch only after it stopped being the tail at the old one
   (db_rep_hold_reset). */
static int
s_bound(s_job_t *job)
{
    uint64_t upto = atomic_load(&job->state->upto);
    uint64_t epoch = atomic_load(&job->state->epoch);
    if (epoch != job->epoch)
        return util_err(LUX_EEPOCH, "shard %u: READ at epoch %llu refused: the epoch became "
                        "%llu while it waited", job->shard, (unsigned long long) job->epoch,
                        (unsigned long long) epoch);
    if (!atomic_load(&job->state->is_tail))
        return util_err(LUX_ESTATE, "shard %u: READ at epoch %llu refused: this replica "
                        "stopped being the tail while it waited", job->shard,
                        (unsigned long long) job->epoch);
    if (job->last > upto)
        job->last = upto; /* committed, not yet acknowledged */
    return 0;
}

static void
s_worker(zsock_t *pipe, void *arg)
{
    db_store_opts_t *so = arg;
    db_store_t *store = db_store_open(so);
    zsock_signal(pipe, store ? 0 : 1);
    while (store) {
        zframe_t *f = zframe_recv(pipe);
        if (!f || zframe_size(f) != sizeof(s_job_t *)) {
            zframe_destroy(&f); /* $TERM */
            break;
        }
        s_job_t *job;
        memcpy(&job, zframe_data(f), sizeof job);
        zframe_destroy(&f);
        uint32_t count = 0;
        s_read_gate(job->gate, job->max);
        job->rc = db_store_refresh(store);
        job->last = db_store_last_seq(store);
        if (!job->rc)
            job->rc = s_bound(job);
        if (job->from <= job->last && job->last - job->from + 1 < job->max)
            job->max = (uint32_t) (job->last - job->from + 1);
        net_batch_begin(&job->buf, job->from);
        if (!job->rc && job->from <= job->last)
            job->rc = db_store_read(store, job->from, job->max, job->max_bytes, &job->buf, &count);
        net_batch_end(&job->buf, count);
        if (!job->rc && job->buf.oom)
            job->rc = util_err(LUX_ENOMEM, "out of memory reading from seq %llu",
                               (unsigned long long) job->from);
        if (job->rc)
            snprintf(job->err, sizeof job->err, "%s", lux_errmsg());
        zframe_t *back = zframe_new(&job, sizeof job);
        zframe_send(&back, pipe, 0);
    }
    db_store_close(&store);
}

static void
s_job_free(s_job_t *job)
{
    zframe_destroy(&job->rid);
    util_buf_free(&job->buf);
    free(job);
}

/* Give queued jobs to idle workers. */
static void
s_dispatch(s_reader_t *self)
{
    for (int w = 0; w < DB_READ_WORKERS && self->queue; w++) {
        if (self->workers[w].job)
            continue;
        s_job_t *job = self->queue;
        self->queue = job->next;
        if (!self->queue)
            self->queue_last = NULL;
        job->next = NULL;
        zframe_t *f = zframe_new(&job, sizeof job);
        zframe_send(&f, self->workers[w].actor, 0);
        self->workers[w].job = job;
    }
}

/* --- the read socket --------------------------------------------------------------------- */

static void
s_complain(s_reader_t *self, const char *what)
{
    util_complain(&self->complain, "read endpoint: dropped a bad message: %s", what);
}

/* Answer an ERROR to the requester, naming its request (the READ's
   request ID, 0 when it had none); takes *rid_p. */
static void
s_error(s_reader_t *self, zframe_t **rid_p, int code, const char *text, uint64_t req)
{
    zmsg_t *m = net_error_msg(self->shard, atomic_load(&self->state->epoch), code, "%s", text);
    net_error_req(m, req);
    zmsg_prepend(m, rid_p);
    zmsg_send(&m, self->sock);
}

static int
s_on_read(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_reader_t *self = arg;
    net_req_t r;
    char text[256];

    /* garbage: complained of and answered (EPROTO, or ENOSYS for another
       protocol version) */
    if (net_req_recv(&r, sock, &self->complain, "read endpoint", self->shard,
                     atomic_load(&self->state->epoch)))
        goto done;
    zframe_t *body = r.body;
    const net_hdr_t h = r.h;
    /* the request ID, for the ERROR that may answer it */
    uint64_t req = body && zframe_size(body) >= 8 ? util_rd64(zframe_data(body)) : 0;
    if (h.type == NET_PING) {
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &r.rid);
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_PONG, self->shard,
                                                    atomic_load(&self->state->epoch))});
        zmsg_send(&m, sock);
        goto done;
    }
    if (h.type != NET_READ || !body || zframe_size(body) != 24) {
        snprintf(text, sizeof text, "expected READ of 24 bytes, got %s with %zu bytes",
                 net_type_name(h.type), body ? zframe_size(body) : 0);
        s_complain(self, text);
        s_error(self, &r.rid, LUX_EPROTO, text, h.type == NET_READ ? req : 0);
        goto done;
    }
    if (h.shard != self->shard) {
        /* a stale configuration (a tcp port now bound by another shard's
           replica) or a bug: either way, ask the master */
        snprintf(text, sizeof text, "READ for shard %u at the read endpoint of shard %u",
                 h.shard, self->shard);
        s_complain(self, text);
        s_error(self, &r.rid, LUX_ESHARD, text, req);
        goto done;
    }
    uint64_t epoch = atomic_load(&self->state->epoch);
    if (h.epoch != epoch || !atomic_load(&self->state->is_tail)) {
        snprintf(text, sizeof text, "shard %u: READ at epoch %llu refused: %s epoch %llu",
                 self->shard, (unsigned long long) h.epoch,
                 atomic_load(&self->state->is_tail) ? "this tail is at" : "not the tail at",
                 (unsigned long long) epoch);
        s_error(self, &r.rid, h.epoch != epoch ? LUX_EEPOCH : LUX_ESTATE, text, req);
        goto done;
    }
    const uint8_t *p = zframe_data(body);
    if (util_rd64(p + 8) == 0) {
        /* there is no record 0: the chain starts at the genesis hash,
           which a reader computes (doc/protocol.md 7) */
        snprintf(text, sizeof text, "shard %u: READ from seq 0: seqs start at 1 (the hash "
                 "before seq 1 is the genesis, computed, not read)", self->shard);
        s_error(self, &r.rid, LUX_EINVAL, text, req);
        goto done;
    }
    s_job_t *job = calloc(1, sizeof *job);
    if (!job) {
        s_error(self, &r.rid, LUX_ENOMEM, "out of memory", req);
        goto done;
    }
    job->rid = r.rid;
    r.rid = NULL;
    job->req = util_rd64(p);
    job->from = util_rd64(p + 8);
    job->max = util_rd32(p + 16);
    job->max_bytes = util_rd32(p + 20);
    job->epoch = epoch;
    job->state = self->state;
    job->shard = self->shard;
    job->gate = self->gate;
    /* 0 in either limit asks for the tail's own limit */
    if (job->max > DB_READ_MAX || job->max == 0)
        job->max = DB_READ_MAX;
    if (job->max_bytes > DB_READ_MAX_BYTES || job->max_bytes == 0)
        job->max_bytes = DB_READ_MAX_BYTES;
    util_buf_init(&job->buf);
    if (self->queue_last)
        self->queue_last->next = job;
    else
        self->queue = job;
    self->queue_last = job;
    s_dispatch(self);
done:
    net_req_done(&r);
    return 0;
}

/* A worker gave a job back: answer it. */
static int
s_on_worker(zloop_t *loop, zsock_t *sock, void *arg)
{
    s_reader_t *self = arg;
    zframe_t *f = zframe_recv(sock);
    s_job_t *job = NULL;
    if (f && zframe_size(f) == sizeof job)
        memcpy(&job, zframe_data(f), sizeof job);
    zframe_destroy(&f);
    for (int w = 0; w < DB_READ_WORKERS; w++)
        if ((void *) self->workers[w].actor == (void *) sock)
            self->workers[w].job = NULL;
    if (!job)
        return 0;
    if (job->rc) {
        if (job->rc == LUX_EEPOCH || job->rc == LUX_ESTATE)
            log_info("READ from %llu: %s", (unsigned long long) job->from, job->err);
        else
            log_error("READ from %llu: %s", (unsigned long long) job->from, job->err);
        s_error(self, &job->rid, job->rc, job->err, job->req);
    } else {
        uint8_t rep[16];
        util_le64(rep, job->req);
        util_le64(rep + 8, job->last);
        zmsg_t *m = zmsg_new();
        zmsg_append(m, &job->rid);
        zmsg_append(m, &(zframe_t *) {net_hdr_frame(NET_READ_REP, self->shard, job->epoch)});
        zmsg_addmem(m, rep, sizeof rep);
        zmsg_addmem(m, job->buf.data, job->buf.len);
        zmsg_send(&m, self->sock);
    }
    s_job_free(job);
    s_dispatch(self);
    return 0;
}

/* Frames in the writer's WAL after its last commit that a checkpoint
   which copied `copied` of them left. */
static int64_t
s_left(s_reader_t *self, int copied)
{
    int64_t n = (int64_t) atomic_load(&self->state->wal_pages) - copied;
    return n > 0 ? n : 0;
}

static int
s_on_timer(zloop_t *loop, int timer_id, void *arg)
{
    s_reader_t *self = arg;
    uint64_t pages = atomic_load(&self->state->wal_pages);
    int64_t now = util_mono_ms();
    if (self->ckpt_off)
        return 0; /* test hook: as a thread that never gets a CPU */
    if (pages >= DB_CKPT_PAGES || (pages > 0 && now - self->ckpt_ms >= 1000)) {
        /* the bulk without holding the writer up; again while many frames
           came in meanwhile; then, when the WAL is long, the last few with
           the writer held off (DB_CKPT_WRAP). Under a load that writes
           frames faster than a few passes copy them, the writer is not
           held up: the WAL grows until the load eases. */
        int copied = 0, rc = db_store_checkpoint(self->store, false, &copied);
        for (int i = 0; rc >= 0 && s_left(self, copied) > DB_CKPT_WRAP && i < 4; i++)
            rc = db_store_checkpoint(self->store, false, &copied);
        if (pages < self->full_at)
            self->full_at = 0; /* the WAL started again */
        if (rc >= 0 && pages >= DB_CKPT_PAGES && s_left(self, copied) <= DB_CKPT_WRAP &&
            (!self->full_at || now - self->full_ms >= DB_CKPT_FULL_MS)) {
            rc = db_store_checkpoint(self->store, true, NULL);
            if (rc == 0) { /* it held the writer and copied all: unless a
                              reader stays in the WAL, it starts again */
                self->full_at = atomic_load(&self->state->wal_pages);
                self->full_ms = now;
            }
        }
        if (rc < 0)
            log_warn("%s", lux_errmsg());
        atomic_store(&self->state->wal_pages, 0);
        self->ckpt_ms = now;
    }
    return 0;
}

static void
s_actor(zsock_t *pipe, void *arg)
{
    db_reader_opts_t *o = arg;
    s_reader_t self = {.pipe = pipe, .state = o->state, .shard = o->shard,
                       .gate = getenv("LUX_TEST_READ_GATE"),
                       .ckpt_off = getenv("LUX_TEST_CKPT_OFF") != NULL};
    util_complain_init(&self.complain, UTIL_COMPLAIN_MS);
    db_store_opts_t so = {.path = o->db_path, .cluster = *o->cluster, .shard = o->shard,
                          .reader = true};
    db_store_opts_t wo = so;
    zloop_t *loop = NULL;
    bool ok = true;

    util_log_name("reader %u", o->shard);
    self.store = db_store_open(&so);
    ok = self.store != NULL;
    wo.reader = false;
    wo.readonly = true;
    for (int w = 0; ok && w < DB_READ_WORKERS; w++) {
        self.workers[w].actor = zactor_new(s_worker, &wo);
        ok = self.workers[w].actor != NULL;
    }
    if (ok)
        self.sock = net_bind_hwm(ZMQ_ROUTER, o->ep, o->sec, o->bound, o->bound_len,
                                 DB_READ_HWM, 0);
    if (!ok || !self.sock) {
        /* error messages are per thread: hand ours to the owner in the
           bound buffer, which it reads once zactor_new returns */
        snprintf(o->bound, o->bound_len, "!%s", lux_errmsg());
        zsock_signal(pipe, 1);
        goto out;
    }
    /* requests queue without a limit (small); answers do not: a peer that
       sends READs and does not read the answers had up to ZeroMQ's default
       of 1000 queued here (100 unread READs of 8 MiB took a tail to
       880 MB). Past DB_READ_HWM queued for one peer (set at bind, above),
       ROUTER drops them: that peer asks again (db_sub does after a wait) */
    zsock_signal(pipe, 0);
    loop = zloop_new();
    zloop_reader(loop, pipe, net_pipe_on_term, &self);
    zloop_reader(loop, self.sock, s_on_read, &self);
    for (int w = 0; w < DB_READ_WORKERS; w++)
        zloop_reader(loop, (zsock_t *) self.workers[w].actor, s_on_worker, &self);
    zloop_timer(loop, 50, 0, s_on_timer, &self);
    zloop_start(loop);
out:
    zloop_destroy(&loop);
    for (int w = 0; w < DB_READ_WORKERS; w++) {
        /* destroy waits for the worker; a job it had is never answered */
        zactor_destroy(&self.workers[w].actor);
        if (self.workers[w].job)
            s_job_free(self.workers[w].job);
    }
    while (self.queue) {
        s_job_t *j = self.queue;
        self.queue = j->next;
        s_job_free(j);
    }
    zsock_destroy(&self.sock);
    db_store_close(&self.store);
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

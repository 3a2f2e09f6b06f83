/*  db_writer - group-committing writer thread of a replica.

    Messages on the actor's pipe are one frame each:
        owner -> writer:  'W' + pointer to a net_batch_t   (9 bytes)
                          'T' + u64 after                   (9 bytes)
        writer -> owner:  letter + u64 seq + i32 code + text
    and "$TERM" from zactor_destroy, told apart by its length.

    A write error is final: the writer reports it and refuses further
    writes, and the replica fails over (a replica whose disk is full must
    not keep a hole in its chain). Batches queued before $TERM are
    committed before the thread ends, so nothing handed over is lost.

    The reader's thread copies the WAL back (db_reader.c). When it gets
    no CPU for long, the WAL grows as the commits come: 81 MB under a
    parallel `make check`, and a replica on a small disk filled it with
    room to spare for its events (t/5304). So once the WAL passes
    DB_WAL_CAP frames, the writer copies it back itself, after the
    commit's acknowledgement, as a passive checkpoint of its own
    connection: no frame arrives while it copies, so it copies them all
    unless a reader is on an older snapshot, and its next transaction
    starts the WAL again. It stalls appends only on a machine where the
    reader's thread fell that far behind: a bound, with backpressure,
    instead of a disk that fills. The replica's thread, which commits
    small batches itself while this one is idle (db_rep_submit), hands
    every batch here once the WAL is that long, so the copy runs on this
    thread only. */
#include "db_writer.h"
#include "db_reader.h"
#include "../net/net_wire.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    zsock_t *pipe;
    db_store_t *store;
    bool broken;      /* a write failed: refuse everything */
    const char *gate; /* LUX_TEST_COMMIT_GATE, read once at start */
    uint64_t cap_at;  /* the WAL's frames at the last copy past the cap */
    uint64_t capped;  /* copies past the cap, for the log */
} s_writer_t;

/* The WAL past DB_WAL_CAP frames: copy it back now (see the top). Again
   only after DB_CKPT_WRAP more frames, when a reader kept it from
   starting again. */
static void
s_cap_wal(s_writer_t *self)
{
    uint64_t frames = db_store_wal_frames(self->store);
    if (frames < self->cap_at)
        self->cap_at = 0; /* it started again */
    if (frames < DB_WAL_CAP || frames < self->cap_at + DB_CKPT_WRAP)
        return;
    int copied = 0;
    int64_t t0 = util_mono_ms();
    int rc = db_store_checkpoint(self->store, false, &copied);
    self->cap_at = frames;
    if (rc < 0)
        log_warn("the WAL past %d frames: %s", DB_WAL_CAP, lux_errmsg());
    else if (self->capped++ % 64 == 0)
        log_info("the WAL reached %llu frames (the reader's copies fell behind): the writer "
                 "copied back %d in %lld ms (%llu times so far)", (unsigned long long) frames,
                 copied, (long long) (util_mono_ms() - t0), (unsigned long long) self->capped);
}

/* Test hook: LUX_TEST_COMMIT_GATE=DIR makes the writer of the replica
   whose file's path ends with the text of DIR/armed, once it
   committed a transaction, remove DIR/armed, write "FROM TO" (the seqs
   the transaction committed) to DIR/held and wait (up to 120 s) until
   DIR/go exists before it tells the replica, so that a test can read the
   file in the gap between a commit and its acknowledgement (t/5017). */
static void
s_commit_gate(s_writer_t *self, uint64_t from, uint64_t to)
{
    char path[PATH_MAX], name[PATH_MAX] = "";
    if (!self->gate || !*self->gate)
        return;
    snprintf(path, sizeof path, "%s/armed", self->gate);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    bool read = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    const char *mine = db_store_path(self->store);
    size_t n = strlen(name), m = strlen(mine);
    if (!read || !n || n > m || strcmp(mine + m - n, name) || unlink(path))
        return; /* another replica's, or taken */
    snprintf(path, sizeof path, "%s/held", self->gate);
    if ((f = fopen(path, "w"))) {
        fprintf(f, "%llu %llu\n", (unsigned long long) from, (unsigned long long) to);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/go", self->gate);
    for (int64_t t0 = util_mono_ms(); util_mono_ms() - t0 < 120000 && !util_exists(path);)
        usleep(10000);
    unlink(path);
}

int
db_writer_put(db_store_t *store, const net_batch_t *b)
{
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t n;
    int rc;
    net_batch_iter(&it, b);
    while (net_batch_next(&it, &seq, &rec, &n))
        if ((rc = db_store_put(store, seq, rec, n)))
            return rc;
    return 0;
}

static void
s_reply(s_writer_t *self, char cmd, uint64_t seq, int code, const char *text)
{
    size_t n = strlen(text);
    zframe_t *f = zframe_new(NULL, 13 + n);
    uint8_t *p = zframe_data(f);
    p[0] = (uint8_t) cmd;
    util_le64(p + 1, seq);
    util_le32(p + 9, (uint32_t) code);
    memcpy(p + 13, text, n);
    zframe_send(&f, self->pipe, 0);
}

static void
s_ask(zactor_t *w, char cmd, const void *arg, size_t n)
{
    zframe_t *f = zframe_new(NULL, 1 + n);
    zframe_data(f)[0] = (uint8_t) cmd;
    memcpy(zframe_data(f) + 1, arg, n);
    zframe_send(&f, w, 0);
}

void
db_writer_write(zactor_t *w, const net_batch_t *b)
{
    s_ask(w, 'W', &b, sizeof b);
}

void
db_writer_truncate(zactor_t *w, uint64_t after)
{
    s_ask(w, 'T', &after, sizeof after);
}

char
db_writer_reply(zactor_t *w, uint64_t *seq, int *code, char *text, size_t n)
{
    zframe_t *f = zframe_recv(w);
    char cmd = 0;
    if (f && zframe_size(f) >= 13) {
        const uint8_t *p = zframe_data(f);
        size_t len = zframe_size(f) - 13;
        cmd = (char) p[0];
        *seq = util_rd64(p + 1);
        *code = (int32_t) util_rd32(p + 9);
        if (len >= n)
            len = n - 1;
        memcpy(text, p + 13, len);
        text[len] = '\0';
    }
    zframe_destroy(&f);
    return cmd;
}

static void
s_truncate(s_writer_t *self, uint64_t after)
{
    int rc = db_store_truncate(self->store, after);
    s_reply(self, 'T', db_store_last_seq(self->store), rc, rc ? lux_errmsg() : "");
}

/* Messages from the owner are pictures whose first frame is one byte, so
   $TERM (a string frame of 5 bytes) is told apart by its size. */
static void
s_loop(zsock_t *pipe, void *arg)
{
    s_writer_t self = {.pipe = pipe, .store = arg, .gate = getenv("LUX_TEST_COMMIT_GATE")};
    util_log_name("writer %u", db_store_shard(self.store));
    zsock_signal(pipe, 0);

    for (;;) {
        zframe_t *f = zframe_recv(pipe);
        uint32_t events = 0;
        bool open = false, stop = false;
        int rc = 0;
        uint64_t trunc = UINT64_MAX, before = db_store_last_seq(self.store);

        while (f) {
            size_t n = zframe_size(f);
            const uint8_t *p = zframe_data(f);
            if (n == 1 + sizeof(void *) && p[0] == 'W') {
                const net_batch_t *b;
                memcpy(&b, p + 1, sizeof b);
                if (self.broken)
                    rc = LUX_ESTATE;
                else {
                    if (!open && !(rc = db_store_begin(self.store)))
                        open = true;
                    if (!rc)
                        rc = db_writer_put(self.store, b);
                    events += b->count;
                }
            } else if (n == 9 && p[0] == 'T') {
                memcpy(&trunc, p + 1, 8);
            } else {
                stop = true; /* $TERM */
            }
            zframe_destroy(&f);
            if (stop || rc || trunc != UINT64_MAX || events >= DB_WRITER_GROUP)
                break;
            if (!(zsock_events(pipe) & ZMQ_POLLIN))
                break;
            f = zframe_recv(pipe);
        }
        if (open) {
            if (!rc)
                rc = db_store_commit(self.store);
            if (rc) {
                db_store_rollback(self.store);
                if (!self.broken)
                    log_error("%s", lux_errmsg());
                self.broken = true;
                s_reply(&self, 'E', db_store_last_seq(self.store), rc, lux_errmsg());
            } else {
                s_commit_gate(&self, before + 1, db_store_last_seq(self.store));
                s_reply(&self, 'C', db_store_last_seq(self.store), 0, "");
                s_cap_wal(&self);
            }
        } else if (rc) {
            s_reply(&self, 'E', db_store_last_seq(self.store), rc, "writer is stopped");
        }
        if (trunc != UINT64_MAX)
            s_truncate(&self, trunc);
        if (stop)
            break;
    }
}

zactor_t *
db_writer_new(db_store_t *store)
{
    return zactor_new(s_loop, store);
}

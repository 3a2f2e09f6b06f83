/*  exec_spill - LZ4 frames on disk, streamed in 4 MiB blocks.

    Format: one LZ4 frame (lz4_Frame_format.md, liblz4's lz4frame.h):
    magic 0x184D2204; a header with the independent-blocks, content-size
    and content-checksum flags, the 4 MiB block size, the 8-byte content
    size and a header checksum; blocks of at most 4 MiB of content, each
    compressed or, when compressing gains nothing, stored raw; the end mark
    (a zero block size); the XXH32 of the content. Objects of 0 bytes have
    no content-size field (the format reads 0 there as "unknown").

    Blocks are independent and as large as LZ4 frames allow, so that each
    4 MiB of the source is compressed straight from the caller's buffer and
    decompressed straight into the caller's buffer, without staging copies
    (only the last, partial block of a read goes through liblz4's buffer).

    Reading checks, besides what liblz4 checks (header checksum, block
    sizes, content checksum, content size): that the frame has a content
    checksum at all, that it decodes to exactly n bytes, and that nothing
    follows it.
*/
#include "exec_spill.h"
#include "../util/util_err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lz4frame.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_BLOCK ((size_t) 4 << 20) /* content per block: LZ4F_max4MB */
#define S_READ ((size_t) 1 << 20)  /* file bytes per read() */
#define S_MAGIC 0x184D2204u        /* of an LZ4 frame, little-endian */

/* A failed system call on path: LUX_EFULL for a full disk, LUX_ENOTFOUND
   for a missing file when reading, else LUX_EIO. */
static int
s_io_err(const char *path, const char *what, int e, bool reading)
{
    int code = e == ENOSPC || e == EDQUOT ? LUX_EFULL
               : e == ENOENT && reading   ? LUX_ENOTFOUND
                                          : LUX_EIO;
    return util_err(code, "spill %s: %s: %s", path, what, strerror(e));
}

static int
s_write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t) w;
    }
    return 0;
}

/* Read up to n bytes, fewer only at the end of the file; the count or -1. */
static ssize_t
s_read_full(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t) r;
    }
    return (ssize_t) got;
}

/* ------------------------------------------------------------------------
   Writing */

/* The tests' hooks (exec_spill.h): the environment is read once, not on
   every write. */
static const char *s_gates[EXEC_GATES];
static pthread_once_t s_gates_once = PTHREAD_ONCE_INIT;

static void
s_gates_read(void)
{
    s_gates[EXEC_GATE_SPILL] = getenv("LUX_TEST_SPILL_GATE");
    s_gates[EXEC_GATE_BLOB] = getenv("LUX_TEST_BLOB_GATE");
    s_gates[EXEC_GATE_LOCATE] = getenv("LUX_TEST_LOCATE_GATE");
}

void
exec_test_gate(int which)
{
    pthread_once(&s_gates_once, s_gates_read);
    const char *gate = s_gates[which];
    char waiting[PATH_MAX];
    if (!gate || !*gate || snprintf(waiting, sizeof waiting, "%s.waiting", gate) >= PATH_MAX)
        return;
    FILE *f = fopen(waiting, "w");
    if (f)
        fclose(f);
    for (int i = 0; i < 12000 && access(gate, F_OK) != 0; i++)
        usleep(10000);
}

void
exec_test_gate_passed(int which, const char *what)
{
    pthread_once(&s_gates_once, s_gates_read);
    const char *gate = s_gates[which];
    char done[PATH_MAX];
    if (!gate || !*gate || snprintf(done, sizeof done, "%s.done", gate) >= PATH_MAX)
        return;
    int fd = open(done, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    dprintf(fd, "%s\n", what);
    close(fd);
}

int
exec_spill_write(const char *path, const void *data, size_t n)
{
    char tmp[PATH_MAX];
    LZ4F_cctx *cctx = NULL;
    uint8_t *out = NULL;
    int fd = -1, rc = 0;
    const uint8_t *src = data;

    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int) sizeof tmp)
        return util_err(LUX_EINVAL, "spill %s: path too long", path);
    exec_test_gate(EXEC_GATE_SPILL);

    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max4MB;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.contentSize = n;
    prefs.autoFlush = 1;
    LZ4F_compressOptions_t copts = {.stableSrc = 1};

    /* room for the header, one block, the end mark and the checksum */
    size_t cap = LZ4F_compressBound(S_BLOCK, &prefs) + LZ4F_HEADER_SIZE_MAX;
    if (LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)) || !(out = malloc(cap))) {
        rc = util_err(LUX_ENOMEM, "spill %s: out of memory", path);
        goto done;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = s_io_err(tmp, "create", errno, false);
        goto done;
    }

    size_t len = LZ4F_compressBegin(cctx, out, cap, &prefs);
    for (size_t pos = 0;; pos += S_BLOCK) {
        if (LZ4F_isError(len)) {
            rc = util_err(LUX_EIO, "spill %s: lz4: %s", path, LZ4F_getErrorName(len));
            goto done;
        }
        if (len && s_write_all(fd, out, len) < 0) {
            rc = s_io_err(tmp, "write", errno, false);
            goto done;
        }
        if (pos >= n)
            break;
        size_t k = n - pos < S_BLOCK ? n - pos : S_BLOCK;
        len = LZ4F_compressUpdate(cctx, out, cap, src + pos, k, &copts);
    }
    len = LZ4F_compressEnd(cctx, out, cap, NULL);
    if (LZ4F_isError(len)) {
        rc = util_err(LUX_EIO, "spill %s: lz4: %s", path, LZ4F_getErrorName(len));
        goto done;
    }
    if (s_write_all(fd, out, len) < 0) {
        rc = s_io_err(tmp, "write", errno, false);
        goto done;
    }
    if (fsync(fd) < 0) {
        rc = s_io_err(tmp, "fsync", errno, false);
        goto done;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = s_io_err(tmp, "close", errno, false);
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) < 0)
        rc = s_io_err(path, "rename", errno, false);

done:
    if (fd >= 0)
        close(fd);
    if (rc)
        unlink(tmp);
    free(out);
    LZ4F_freeCompressionContext(cctx);
    return rc;
}

/* ------------------------------------------------------------------------
   Reading */

typedef struct {
    const char *path;    /* for messages */
    int fd;              /* the file */
    LZ4F_dctx *dctx;     /* decompression state */
    uint8_t *in;         /* S_READ bytes read ahead */
    size_t inpos, inlen; /* consumed and valid bytes of in */
    bool eof;            /* the last read returned short */
    LZ4F_frameInfo_t fi; /* from the header */
} s_reader_t;

static void
s_reader_close(s_reader_t *r)
{
    if (r->fd >= 0)
        close(r->fd);
    free(r->in);
    LZ4F_freeDecompressionContext(r->dctx);
}

/* Read more of the file into in (after what is left); 0 or LUX_EIO. */
static int
s_fill(s_reader_t *r)
{
    memmove(r->in, r->in + r->inpos, r->inlen - r->inpos);
    r->inlen -= r->inpos;
    r->inpos = 0;
    size_t want = S_READ - r->inlen;
    ssize_t got = s_read_full(r->fd, r->in + r->inlen, want);
    if (got < 0)
        return s_io_err(r->path, "read", errno, true);
    r->inlen += (size_t) got;
    r->eof = (size_t) got < want;
    return 0;
}

/* Open path and decode the frame header into r->fi; 0 or an error. */
static int
s_reader_open(s_reader_t *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return s_io_err(path, "open", errno, true);
    if (LZ4F_isError(LZ4F_createDecompressionContext(&r->dctx, LZ4F_VERSION)) ||
        !(r->in = malloc(S_READ)))
        return util_err(LUX_ENOMEM, "spill %s: out of memory", path);
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    int rc = s_fill(r);
    if (rc)
        return rc;
    if (r->inlen < LZ4F_HEADER_SIZE_MIN)
        return util_err(LUX_ECORRUPT, "spill %s: truncated: %zu bytes, no frame header", path,
                        r->inlen);
    uint32_t magic = (uint32_t) r->in[0] | (uint32_t) r->in[1] << 8 | (uint32_t) r->in[2] << 16 |
                     (uint32_t) r->in[3] << 24;
    if (magic != S_MAGIC)
        return util_err(LUX_ECORRUPT, "spill %s: not an LZ4 frame (magic %08x)", path, magic);
    size_t sn = r->inlen;
    size_t ret = LZ4F_getFrameInfo(r->dctx, &r->fi, r->in, &sn);
    if (LZ4F_isError(ret))
        return util_err(LUX_ECORRUPT, "spill %s: bad frame header: %s", path,
                        LZ4F_getErrorName(ret));
    r->inpos = sn;
    if (r->fi.contentChecksumFlag != LZ4F_contentChecksumEnabled)
        return util_err(LUX_ECORRUPT, "spill %s: the frame has no content checksum", path);
    return 0;
}

int
exec_spill_read(const char *path, void *dst, size_t n)
{
    s_reader_t r;
    uint8_t dummy;
    uint8_t *out = dst ? dst : &dummy;
    size_t done = 0;
    int rc = s_reader_open(&r, path);
    if (rc)
        goto out;
    if (r.fi.contentSize != 0 && r.fi.contentSize != n) {
        rc = util_err(LUX_ECORRUPT, "spill %s: holds %llu bytes, not %zu", path,
                      (unsigned long long) r.fi.contentSize, n);
        goto out;
    }

    LZ4F_decompressOptions_t dopts = {.stableDst = 1};
    for (;;) {
        size_t dn = n - done, sn = r.inlen - r.inpos;
        size_t ret = LZ4F_decompress(r.dctx, out + done, &dn, r.in + r.inpos, &sn, &dopts);
        if (LZ4F_isError(ret)) {
            rc = util_err(LUX_ECORRUPT, "spill %s: damaged after %zu bytes: %s", path, done,
                          LZ4F_getErrorName(ret));
            goto out;
        }
        done += dn;
        r.inpos += sn;
        if (ret == 0) /* the frame ended, checksum verified */
            break;
        if (dn == 0 && sn == 0 && r.inpos < r.inlen) {
            /* liblz4 holds output that does not fit in dst */
            rc = util_err(LUX_ECORRUPT, "spill %s: holds more than %zu bytes", path, n);
            goto out;
        }
        if (r.inpos == r.inlen) {
            if (r.eof) {
                rc = util_err(LUX_ECORRUPT, "spill %s: truncated after %zu of %zu bytes", path,
                              done, n);
                goto out;
            }
            if ((rc = s_fill(&r)))
                goto out;
        }
    }
    if (done != n) {
        rc = util_err(LUX_ECORRUPT, "spill %s: holds %zu bytes, not %zu", path, done, n);
        goto out;
    }
    if (r.inpos == r.inlen && !r.eof && (rc = s_fill(&r)))
        goto out;
    if (r.inpos < r.inlen)
        rc = util_err(LUX_ECORRUPT, "spill %s: bytes after the end of the frame", path);
out:
    s_reader_close(&r);
    return rc;
}

int64_t
exec_spill_size(const char *path)
{
    s_reader_t r;
    int64_t rc = s_reader_open(&r, path);
    if (rc == 0) {
        rc = (int64_t) r.fi.contentSize;
        if (rc < 0)
            rc = util_err(LUX_ECORRUPT, "spill %s: content size %llu is too large", path,
                          (unsigned long long) r.fi.contentSize);
    }
    s_reader_close(&r);
    /* no content size: only written for empty objects; check it is one */
    if (rc == 0 && exec_spill_read(path, NULL, 0) < 0)
        rc = util_err(LUX_ECORRUPT, "spill %s: no content size in the frame header", path);
    return rc;
}

/* ------------------------------------------------------------------------
   The writer thread */

typedef struct s_job {
    struct s_job *next;
    char *path;
    const void *data;
    size_t n;
    void *arg;
    int rc;
    char msg[UTIL_ERRMSG_MAX];
} s_job_t;

struct exec_spill_writer_t {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    s_job_t *todo, *todo_last; /* to write, oldest first */
    s_job_t *done, *done_last; /* written, failed or cancelled, oldest first */
    bool stop;
    s_job_t *busy;  /* the job being written (the first of todo), or NULL */
    bool ended;     /* the thread is about to return */
    bool abandoned; /* the stop waited no longer: the thread frees what is left */
    void (*abandon)(void *arg); /* ... the arg of its write, once it ends */
};

static void
s_writer_free(exec_spill_writer_t *self)
{
    pthread_mutex_destroy(&self->mu);
    pthread_cond_destroy(&self->cv);
    free(self);
}

static void
s_push(s_job_t **head, s_job_t **last, s_job_t *j)
{
    j->next = NULL;
    if (*last)
        (*last)->next = j;
    else
        *head = j;
    *last = j;
}

static void *
s_writer(void *arg)
{
    exec_spill_writer_t *self = arg;
    pthread_mutex_lock(&self->mu);
    for (;;) {
        while (!self->todo && !self->stop)
            pthread_cond_wait(&self->cv, &self->mu);
        if (self->stop)
            break; /* the ones not started are cancelled by the stop */
        s_job_t *j = self->busy = self->todo;
        pthread_mutex_unlock(&self->mu);
        j->rc = exec_spill_write(j->path, j->data, j->n);
        if (j->rc)
            snprintf(j->msg, sizeof j->msg, "%s", lux_errmsg());
        pthread_mutex_lock(&self->mu);
        self->busy = NULL;
        if (self->abandoned) {
            /* the node stopped without it (a disk that hung for longer
               than the stop waits): nobody is left to hand it to */
            pthread_mutex_unlock(&self->mu);
            if (self->abandon)
                self->abandon(j->arg);
            exec_test_gate_passed(EXEC_GATE_SPILL, j->path);
            free(j->path);
            free(j);
            s_writer_free(self);
            return NULL;
        }
        self->todo = j->next;
        if (!self->todo)
            self->todo_last = NULL;
        /* once on the done list and the lock let go, j is the node's, who
           may free it at once (t/3181): the hook's line (a test waits for
           the hand-over) is of a copy of its path */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s", j->path);
        s_push(&self->done, &self->done_last, j);
        pthread_mutex_unlock(&self->mu);
        exec_test_gate_passed(EXEC_GATE_SPILL, path);
        pthread_mutex_lock(&self->mu);
    }
    self->ended = true;
    pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
    return NULL;
}

exec_spill_writer_t *
exec_spill_writer_new(void)
{
    exec_spill_writer_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "spill writer: out of memory");
        return NULL;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the stop's wait has an end */
    pthread_mutex_init(&self->mu, NULL);
    pthread_cond_init(&self->cv, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&self->thread, NULL, s_writer, self);
    if (e) {
        util_err(LUX_EIO, "spill writer: cannot start its thread: %s", strerror(e));
        pthread_mutex_destroy(&self->mu);
        pthread_cond_destroy(&self->cv);
        free(self);
        return NULL;
    }
    return self;
}

/* fn(ctx, arg, rc, message) for each job of list, freeing them: how many. */
static int
s_hand_back(s_job_t *list, void (*fn)(void *ctx, void *arg, int rc, const char *msg), void *ctx)
{
    int count = 0;
    while (list) {
        s_job_t *j = list;
        list = j->next;
        fn(ctx, j->arg, j->rc, j->rc ? j->msg : "");
        free(j->path);
        free(j);
        count++;
    }
    return count;
}

int
exec_spill_writer_destroy(exec_spill_writer_t **self_p,
                          void (*fn)(void *ctx, void *arg, int rc, const char *msg), void *ctx,
                          int wait_ms, void (*abandon)(void *arg))
{
    exec_spill_writer_t *self = *self_p;
    int rc = 0;
    if (!self)
        return 0;
    *self_p = NULL;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += wait_ms / 1000;
    end.tv_nsec += (long) (wait_ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&self->mu);
    self->stop = true;
    pthread_cond_broadcast(&self->cv);
    while (!self->ended && pthread_cond_timedwait(&self->cv, &self->mu, &end) != ETIMEDOUT)
        ;
    s_job_t *stuck = self->ended ? NULL : self->busy;
    if (stuck) {
        /* a write that does not end (a hung disk): the stop does not wait
           for ever. The thread keeps that job (the first of todo) and,
           when the write ends, if ever, frees it and the writer (abandon
           lets the caller's arg go); nothing else here is touched by it,
           and nothing of self by this function after the unlock. */
        self->abandoned = true;
        self->abandon = abandon;
        self->todo = stuck->next;
        stuck->next = NULL;
        rc = util_err(LUX_ETIMEDOUT, "spill %s: its write had not ended after %d ms (a hung "
                      "disk?): left to its thread", stuck->path, wait_ms);
    }
    s_job_t *todo = self->todo, *done = self->done, *done_last = self->done_last;
    self->todo = self->todo_last = self->done = self->done_last = NULL;
    pthread_mutex_unlock(&self->mu);
    if (stuck) {
        pthread_detach(self->thread);
    } else {
        pthread_join(self->thread, NULL); /* ended, or about to (between two jobs) */
        s_writer_free(self);
    }
    /* the ones never started go back cancelled, after those done */
    while (todo) {
        s_job_t *j = todo;
        todo = j->next;
        j->rc = LUX_ECANCELLED;
        snprintf(j->msg, sizeof j->msg, "spill %s: not written, the node is stopping", j->path);
        s_push(&done, &done_last, j);
    }
    s_hand_back(done, fn, ctx);
    return rc;
}

int
exec_spill_writer_queue(exec_spill_writer_t *self, const char *path, const void *data,
                        size_t n, void *arg)
{
    s_job_t *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        return util_err(LUX_ENOMEM, "spill %s: out of memory", path);
    }
    j->data = data;
    j->n = n;
    j->arg = arg;
    pthread_mutex_lock(&self->mu);
    s_push(&self->todo, &self->todo_last, j);
    pthread_cond_signal(&self->cv);
    pthread_mutex_unlock(&self->mu);
    return 0;
}

int
exec_spill_writer_done(exec_spill_writer_t *self,
                       void (*fn)(void *ctx, void *arg, int rc, const char *msg), void *ctx)
{
    pthread_mutex_lock(&self->mu);
    s_job_t *list = self->done;
    self->done = self->done_last = NULL;
    pthread_mutex_unlock(&self->mu);
    return s_hand_back(list, fn, ctx);
}

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

/* A test's hook (t/3135): with LUX_TEST_SPILL_GATE=PATH, a spill's write
   first makes PATH.waiting and then waits until PATH exists (at most 120
   s), so that a test can hold a spill in progress and see what the node
   does meanwhile. The environment is read once, not on every write. */
static const char *s_gate;
static pthread_once_t s_gate_once = PTHREAD_ONCE_INIT;

static void
s_gate_read(void)
{
    s_gate = getenv("LUX_TEST_SPILL_GATE");
}

static void
s_test_gate(void)
{
    pthread_once(&s_gate_once, s_gate_read);
    char waiting[PATH_MAX];
    if (!s_gate || !*s_gate ||
        snprintf(waiting, sizeof waiting, "%s.waiting", s_gate) >= (int) sizeof waiting)
        return;
    FILE *f = fopen(waiting, "w");
    if (f)
        fclose(f);
    for (int i = 0; i < 12000 && access(s_gate, F_OK) != 0; i++)
        usleep(10000);
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
    s_test_gate();

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

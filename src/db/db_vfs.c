/*  db_vfs - the log writer's WAL writes, one system call per commit.

    SQLite writes a WAL frame as two pwrite calls, its 24-byte header and
    its page, so a commit of three pages (an event, its task and actor
    index entries) costs six. perf of a replica under one actor called at
    a time showed those writes at a fifth of its time. This VFS wraps the
    default one and, for WAL files only, gathers contiguous writes in a
    buffer that goes to the file in one write:
      - when the frame that commits a transaction is complete (its header
        names the database size; the page after it ends the commit),
        before SQLite publishes the frames in the WAL index, so no reader
        can see a frame that is not in the file;
      - before any read, sync, truncate, size, file control or close of
        the file, and when the buffer is full or a write is elsewhere.
    A write that lands inside the buffer (SQLite rewriting a frame of the
    transaction it is writing) is copied into it. A process that dies
    with bytes in the buffer dies before its transaction committed, as
    if it had died between the writes. A failed write reports SQLite's
    own error (disk full, I/O) on the call that flushed.

    Other files, and every other method, are the default VFS's own.
*/
#include "db_vfs.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define S_CAP (64u << 10) /* bytes gathered at most: the unix VFS writes at most
                            128 KiB - 1 in one call (its seekAndWrite) */
#define S_FRAME_HDR 24   /* a WAL frame's header */
#define S_WAL_HDR 32     /* the WAL file's header */

typedef struct {
    sqlite3_file base; /* pMethods: s_methods */
    sqlite3_file *real;
    unsigned char *buf;
    size_t len;
    sqlite3_int64 off;        /* file offset of buf[0] */
    sqlite3_int64 commit_end; /* > 0: flush once the buffer reaches it */
    int page;                 /* the WAL's page size, once known */
} s_file_t;

static sqlite3_vfs s_vfs;
static sqlite3_vfs *s_base;
static sqlite3_io_methods s_methods;

static unsigned
s_be32(const unsigned char *p)
{
    return (unsigned) p[0] << 24 | (unsigned) p[1] << 16 | (unsigned) p[2] << 8 | p[3];
}

static int
s_flush(s_file_t *f)
{
    if (!f->len)
        return SQLITE_OK;
    int rc = f->real->pMethods->xWrite(f->real, f->buf, (int) f->len, f->off);
    f->off += (sqlite3_int64) f->len;
    f->len = 0;
    return rc;
}

/* The page size, from the WAL header (ours or the file's). */
static int
s_page(s_file_t *f)
{
    unsigned char h[12];
    if (f->page)
        return f->page;
    if (f->len >= 12 && f->off == 0)
        memcpy(h, f->buf, 12);
    else if (f->real->pMethods->xRead(f->real, h, 12, 0) != SQLITE_OK)
        return 0;
    unsigned p = s_be32(h + 8);
    if (p == 1)
        p = 65536; /* how the format writes 64 KiB */
    if (p >= 512 && p <= 65536 && (p & (p - 1)) == 0)
        f->page = (int) p;
    return f->page;
}

static int
s_write(sqlite3_file *file, const void *data, int amt, sqlite3_int64 ofst)
{
    s_file_t *f = (s_file_t *) file;
    int rc;
    if (amt <= 0)
        return SQLITE_OK;
    if (f->len && ofst >= f->off && ofst + amt <= f->off + (sqlite3_int64) f->len) {
        memcpy(f->buf + (ofst - f->off), data, (size_t) amt); /* a frame rewritten */
        return SQLITE_OK;
    }
    if (!f->len || ofst != f->off + (sqlite3_int64) f->len || f->len + (size_t) amt > S_CAP) {
        if ((rc = s_flush(f)))
            return rc;
        if ((size_t) amt > S_CAP)
            return f->real->pMethods->xWrite(f->real, data, amt, ofst);
        f->off = ofst;
    }
    if (!f->buf && !(f->buf = malloc(S_CAP)))
        return f->real->pMethods->xWrite(f->real, data, amt, ofst);
    memcpy(f->buf + f->len, data, (size_t) amt);
    f->len += (size_t) amt;
    if (ofst == 0 && amt >= S_WAL_HDR) {
        f->page = 0; /* a new WAL header: read the size again */
        f->commit_end = 0;
    }
    if (amt == S_FRAME_HDR && ofst >= S_WAL_HDR && s_be32((const unsigned char *) data + 4) != 0) {
        int page = s_page(f);
        if (!page)
            return s_flush(f); /* cannot tell where it ends: no gathering */
        f->commit_end = ofst + S_FRAME_HDR + page;
    }
    if (f->commit_end && f->off + (sqlite3_int64) f->len >= f->commit_end) {
        f->commit_end = 0; /* the commit is whole (a sync may have split it) */
        return s_flush(f);
    }
    return SQLITE_OK;
}

static int
s_close(sqlite3_file *file)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    int rc2 = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    free(f->buf);
    f->buf = NULL;
    return rc ? rc : rc2;
}

static int
s_read(sqlite3_file *file, void *data, int amt, sqlite3_int64 ofst)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    return rc ? rc : f->real->pMethods->xRead(f->real, data, amt, ofst);
}

static int
s_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    return rc ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int
s_sync(sqlite3_file *file, int flags)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    return rc ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int
s_size(sqlite3_file *file, sqlite3_int64 *size)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    return rc ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int
s_lock(sqlite3_file *file, int lock)
{
    s_file_t *f = (s_file_t *) file;
    return f->real->pMethods->xLock(f->real, lock);
}

static int
s_unlock(sqlite3_file *file, int lock)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    int rc2 = f->real->pMethods->xUnlock(f->real, lock);
    return rc ? rc : rc2;
}

static int
s_reserved(sqlite3_file *file, int *out)
{
    s_file_t *f = (s_file_t *) file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int
s_control(sqlite3_file *file, int op, void *arg)
{
    s_file_t *f = (s_file_t *) file;
    int rc = s_flush(f);
    return rc ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int
s_sector(sqlite3_file *file)
{
    s_file_t *f = (s_file_t *) file;
    return f->real->pMethods->xSectorSize(f->real);
}

static int
s_device(sqlite3_file *file)
{
    s_file_t *f = (s_file_t *) file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int
s_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    (void) vfs;
    if (!(flags & SQLITE_OPEN_WAL))
        return s_base->xOpen(s_base, name, file, flags, out_flags); /* the default's own */
    s_file_t *f = (s_file_t *) file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *) (f + 1);
    int rc = s_base->xOpen(s_base, name, f->real, flags, out_flags);
    if (rc != SQLITE_OK) {
        if (f->real->pMethods)
            f->real->pMethods->xClose(f->real);
        f->base.pMethods = NULL;
        return rc;
    }
    f->base.pMethods = &s_methods;
    return SQLITE_OK;
}

/* The VFS's own methods: base's (db_vfs_wrap). */
static int
s_delete(sqlite3_vfs *v, const char *n, int sync)
{
    return db_vfs_base(v)->xDelete(db_vfs_base(v), n, sync);
}
static int
s_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
    return db_vfs_base(v)->xAccess(db_vfs_base(v), n, flags, out);
}
static int
s_full(sqlite3_vfs *v, const char *n, int len, char *out)
{
    return db_vfs_base(v)->xFullPathname(db_vfs_base(v), n, len, out);
}
static int
s_random(sqlite3_vfs *v, int n, char *out)
{
    return db_vfs_base(v)->xRandomness(db_vfs_base(v), n, out);
}
static int
s_sleep(sqlite3_vfs *v, int us)
{
    return db_vfs_base(v)->xSleep(db_vfs_base(v), us);
}
static int
s_time(sqlite3_vfs *v, double *out)
{
    return db_vfs_base(v)->xCurrentTime(db_vfs_base(v), out);
}
static int
s_error(sqlite3_vfs *v, int n, char *out)
{
    sqlite3_vfs *b = db_vfs_base(v);
    return b->xGetLastError ? b->xGetLastError(b, n, out) : 0;
}
static void *
s_dlopen(sqlite3_vfs *v, const char *n)
{
    return db_vfs_base(v)->xDlOpen(db_vfs_base(v), n);
}
static void
s_dlerror(sqlite3_vfs *v, int n, char *out)
{
    db_vfs_base(v)->xDlError(db_vfs_base(v), n, out);
}
static void (*s_dlsym(sqlite3_vfs *v, void *h, const char *n))(void)
{
    return db_vfs_base(v)->xDlSym(db_vfs_base(v), h, n);
}
static void
s_dlclose(sqlite3_vfs *v, void *h)
{
    db_vfs_base(v)->xDlClose(db_vfs_base(v), h);
}
static int
s_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    return db_vfs_base(v)->xCurrentTimeInt64(db_vfs_base(v), out);
}

void
db_vfs_wrap(sqlite3_vfs *out, sqlite3_vfs *base, const char *name, int szfile,
            int (*xopen)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *),
            int (*xdelete)(sqlite3_vfs *, const char *, int))
{
    *out = (sqlite3_vfs) {
        .iVersion = 2,
        .szOsFile = szfile + base->szOsFile,
        .mxPathname = base->mxPathname,
        .zName = name,
        .pAppData = base,
        .xOpen = xopen,
        .xDelete = xdelete ? xdelete : s_delete,
        .xAccess = s_access,
        .xFullPathname = s_full,
        .xDlOpen = s_dlopen,
        .xDlError = s_dlerror,
        .xDlSym = s_dlsym,
        .xDlClose = s_dlclose,
        .xRandomness = s_random,
        .xSleep = s_sleep,
        .xCurrentTime = s_time,
        .xGetLastError = s_error,
        .xCurrentTimeInt64 = s_time64,
    };
    if (base->iVersion < 2 || !base->xCurrentTimeInt64)
        out->iVersion = 1;
}

int
db_vfs_register(void)
{
    if (sqlite3_vfs_find(DB_VFS_NAME))
        return SQLITE_OK;
    if (!(s_base = sqlite3_vfs_find(NULL)))
        return SQLITE_ERROR;
    s_methods = (sqlite3_io_methods) {
        .iVersion = 1, /* a WAL file is not mapped and has no shared memory */
        .xClose = s_close,
        .xRead = s_read,
        .xWrite = s_write,
        .xTruncate = s_truncate,
        .xSync = s_sync,
        .xFileSize = s_size,
        .xLock = s_lock,
        .xUnlock = s_unlock,
        .xCheckReservedLock = s_reserved,
        .xFileControl = s_control,
        .xSectorSize = s_sector,
        .xDeviceCharacteristics = s_device,
    };
    db_vfs_wrap(&s_vfs, s_base, DB_VFS_NAME, (int) sizeof(s_file_t), s_open, NULL);
    return sqlite3_vfs_register(&s_vfs, 0);
}

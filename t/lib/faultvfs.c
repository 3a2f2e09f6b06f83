/*  faultvfs - failing writes for tests (see faultvfs.h). Every method of
    the files it opens passes to the wrapped VFS's file; only xWrite,
    xSync and xTruncate (and xDelete of the VFS) count and fail. */
#include "faultvfs.h"

#include <sqlite3.h>
#include <string.h>

#include "db/db_vfs.h"

typedef struct {
    sqlite3_file base;  /* pMethods: s_methods */
    sqlite3_file *real; /* the wrapped VFS's file, right after this struct */
} s_file_t;

static sqlite3_vfs s_vfs, *s_base;
static sqlite3_io_methods s_methods;
static long s_left;  /* > 0: calls until the fault; 0: disarmed */
static bool s_dead;  /* the fault fired: everything fails until disarmed */
static bool s_fired; /* the fault fired (s_dead, or the one call of arm_once) */
static bool s_once;  /* armed by faultvfs_arm_once: only the k-th call fails */
static bool s_reads; /* armed by faultvfs_arm_once with reads: reads count too */
static long s_ops;

/* false: fail this call */
static bool
s_pass(void)
{
    if (s_dead)
        return false;
    s_ops++;
    if (s_left > 0 && --s_left == 0) {
        s_fired = true;
        s_dead = !s_once;
        return false;
    }
    return true;
}

#define REAL(f) (((s_file_t *) (f))->real)
#define M(f) (REAL(f)->pMethods)

static int
s_close(sqlite3_file *f)
{
    int rc = M(f) ? M(f)->xClose(REAL(f)) : SQLITE_OK;
    f->pMethods = NULL;
    return rc;
}
static int
s_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
    if (s_reads && !s_pass())
        return SQLITE_IOERR_READ;
    return M(f)->xRead(REAL(f), p, n, off);
}
static int
s_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
    return s_pass() ? M(f)->xWrite(REAL(f), p, n, off) : SQLITE_IOERR_WRITE;
}
static int
s_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return s_pass() ? M(f)->xTruncate(REAL(f), size) : SQLITE_IOERR_TRUNCATE;
}
static int
s_sync(sqlite3_file *f, int flags)
{
    return s_pass() ? M(f)->xSync(REAL(f), flags) : SQLITE_IOERR_FSYNC;
}
static int
s_size(sqlite3_file *f, sqlite3_int64 *out)
{
    return M(f)->xFileSize(REAL(f), out);
}
static int
s_lock(sqlite3_file *f, int l)
{
    return M(f)->xLock(REAL(f), l);
}
static int
s_unlock(sqlite3_file *f, int l)
{
    return M(f)->xUnlock(REAL(f), l);
}
static int
s_reserved(sqlite3_file *f, int *out)
{
    return M(f)->xCheckReservedLock(REAL(f), out);
}
static int
s_control(sqlite3_file *f, int op, void *arg)
{
    return M(f)->xFileControl(REAL(f), op, arg);
}
static int
s_sector(sqlite3_file *f)
{
    return M(f)->xSectorSize(REAL(f));
}
static int
s_device(sqlite3_file *f)
{
    return M(f)->xDeviceCharacteristics(REAL(f));
}
static int
s_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **pp)
{
    return M(f)->iVersion >= 2 ? M(f)->xShmMap(REAL(f), pg, sz, extend, pp) : SQLITE_IOERR;
}
static int
s_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    return M(f)->iVersion >= 2 ? M(f)->xShmLock(REAL(f), off, n, flags) : SQLITE_IOERR;
}
static void
s_shm_barrier(sqlite3_file *f)
{
    if (M(f)->iVersion >= 2)
        M(f)->xShmBarrier(REAL(f));
}
static int
s_shm_unmap(sqlite3_file *f, int del)
{
    return M(f)->iVersion >= 2 ? M(f)->xShmUnmap(REAL(f), del) : SQLITE_OK;
}
static int
s_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
    if (M(f)->iVersion >= 3)
        return M(f)->xFetch(REAL(f), off, n, pp);
    *pp = NULL;
    return SQLITE_OK;
}
static int
s_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    return M(f)->iVersion >= 3 ? M(f)->xUnfetch(REAL(f), off, p) : SQLITE_OK;
}

static int
s_open(sqlite3_vfs *v, const char *name, sqlite3_file *file, int flags, int *out)
{
    (void) v;
    s_file_t *f = (s_file_t *) file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *) (f + 1);
    int rc = s_base->xOpen(s_base, name, f->real, flags, out);
    if (rc != SQLITE_OK) {
        if (f->real->pMethods)
            f->real->pMethods->xClose(f->real);
        file->pMethods = NULL;
        return rc;
    }
    file->pMethods = &s_methods;
    return SQLITE_OK;
}
static int
s_delete(sqlite3_vfs *v, const char *n, int sync)
{
    (void) v;
    return s_pass() ? s_base->xDelete(s_base, n, sync) : SQLITE_IOERR_DELETE;
}
int
faultvfs_install(void)
{
    if (s_base)
        return SQLITE_OK;
    if (!(s_base = sqlite3_vfs_find(NULL)))
        return SQLITE_ERROR;
    s_methods = (sqlite3_io_methods) {
        .iVersion = 3,
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
        .xShmMap = s_shm_map,
        .xShmLock = s_shm_lock,
        .xShmBarrier = s_shm_barrier,
        .xShmUnmap = s_shm_unmap,
        .xFetch = s_fetch,
        .xUnfetch = s_unfetch,
    };
    db_vfs_wrap(&s_vfs, s_base, "lux-test-fault", (int) sizeof(s_file_t), s_open, s_delete);
    return sqlite3_vfs_register(&s_vfs, 1);
}

void
faultvfs_arm(long k)
{
    s_left = k > 0 ? k : 1;
    s_dead = s_fired = s_once = s_reads = false;
    s_ops = 0;
}

void
faultvfs_arm_once(long k, bool reads)
{
    faultvfs_arm(k);
    s_once = true;
    s_reads = reads;
}

bool
faultvfs_fired(void)
{
    return s_fired;
}

bool
faultvfs_disarm(void)
{
    bool fired = s_fired;
    s_left = 0;
    s_dead = s_fired = s_once = s_reads = false;
    return fired;
}

long
faultvfs_ops(void)
{
    return s_ops;
}

/*  exec_arena - a POSIX shared-memory file, mapped, with an allocator on
    the creator's side.

    Creating is shm_open(O_CREAT | O_EXCL, 0600), fchmod to 0600 whatever
    the umask, ftruncate (sparse: no page is allocated), mmap MAP_SHARED,
    close; the mapping keeps the file open. Any failure after shm_open
    unlinks the name again, so a failed create leaves nothing behind.
    Opening is shm_open without O_CREAT, fstat for the size, mmap.

    Prefaulting uses madvise(MADV_POPULATE_WRITE or _READ) (Linux 5.14);
    where the kernel does not know it (EINVAL), it touches one byte per
    page instead: an atomic add of 0 for a writable mapping, which writes
    without changing what another process may be writing there, and a read
    for a read-only one. The fallback cannot tell a full /dev/shm from
    success: the toucher gets SIGBUS, as any writer would.

    Errors name the arena: "arena /lux-node-1f3a: ...".
*/
#include "exec_arena.h"
#include "exec_alloc.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define S_SHM_DIR "/dev/shm"

struct exec_arena_t {
    char name[NAME_MAX + 1]; /* "/name", as given to shm_open */
    uint8_t *base;           /* the mapping */
    size_t size;             /* its length, a multiple of the page size */
    size_t store;            /* [0, store) the store, [store, size) the spare region */
    bool writable;           /* mapped PROT_WRITE */
    pid_t creator;           /* pid that created it, or 0 when opened */
    exec_alloc_t *alloc;     /* the allocator; NULL when opened */
    exec_alloc_t *spare;     /* the spare region's, its offsets from store; or NULL */
    uint8_t *ready;          /* exec_arena_ready: a bit per S_CHUNK populated here */
    pthread_t warm;          /* exec_arena_warm_start's thread, when warming */
    bool warming;
    atomic_bool warm_stop;
    atomic_bool warm_done;   /* the thread has warmed all of the store */
};

#define S_CHUNK ((size_t) 64 << 10)

/* The files of the arenas this process created and has not destroyed, for
   exec_arena_unlink_all (a signal handler reads them: written before they
   are marked used, cleared before the file goes). */
#define S_LIVE_MAX 8
static char s_live_path[S_LIVE_MAX][sizeof S_SHM_DIR + NAME_MAX + 1];
static volatile sig_atomic_t s_live_used[S_LIVE_MAX];

static void
s_live_add(const char *nm)
{
    for (int i = 0; i < S_LIVE_MAX; i++) {
        if (s_live_used[i])
            continue;
        snprintf(s_live_path[i], sizeof s_live_path[i], S_SHM_DIR "%s", nm);
        s_live_used[i] = 1;
        return;
    }
}

static void
s_live_del(const char *nm)
{
    char path[sizeof S_SHM_DIR + NAME_MAX + 1];
    snprintf(path, sizeof path, S_SHM_DIR "%s", nm);
    for (int i = 0; i < S_LIVE_MAX; i++)
        if (s_live_used[i] && strcmp(s_live_path[i], path) == 0)
            s_live_used[i] = 0;
}

void
exec_arena_unlink_all(void)
{
    for (int i = 0; i < S_LIVE_MAX; i++)
        if (s_live_used[i])
            unlink(s_live_path[i]); /* async-signal-safe, unlike shm_unlink */
}

int
exec_arena_sweep(const char *prefix)
{
    DIR *d = opendir(S_SHM_DIR);
    struct dirent *e;
    size_t n = strlen(prefix);
    int removed = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, prefix, n) != 0)
            continue;
        errno = 0;
        long pid = strtol(e->d_name + n, &end, 10);
        if (errno || end == e->d_name + n || *end != '-' || pid <= 0 || pid == getpid())
            continue; /* not a name of ours with a pid in it (an older form) */
        if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
            continue; /* alive (or not ours to ask): in use */
        char path[sizeof S_SHM_DIR + NAME_MAX + 1];
        snprintf(path, sizeof path, S_SHM_DIR "/%s", e->d_name);
        if (unlink(path) == 0) {
            removed++;
            log_info("arena: removed %s, left by process %ld, which is gone", path, pid);
        }
    }
    closedir(d);
    return removed;
}

/* Turn a caller's name into shm_open's "/name" in out; 0 or LUX_EINVAL. */
static int
s_shm_name(const char *name, char *out)
{
    if (!name)
        return util_err(LUX_EINVAL, "arena: no name");
    const char *bare = name[0] == '/' ? name + 1 : name;
    size_t n = strlen(bare);
    if (n == 0 || strchr(bare, '/') || strcmp(bare, ".") == 0 || strcmp(bare, "..") == 0)
        return util_err(LUX_EINVAL, "arena '%s': a name is one path component", name);
    if (n + 1 > NAME_MAX)
        return util_err(LUX_EINVAL, "arena '%s': name longer than %d bytes", name, NAME_MAX - 1);
    out[0] = '/';
    memcpy(out + 1, bare, n + 1);
    return 0;
}

static int
s_errno_code(int e)
{
    switch (e) {
    case ENOENT:
        return LUX_ENOTFOUND;
    case EEXIST:
        return LUX_EEXIST;
    case EACCES:
    case EPERM:
        return LUX_EAUTH;
    case ENOMEM:
        return LUX_ENOMEM;
    case ENOSPC:
        return LUX_EFULL;
    case EINVAL:
    case ENAMETOOLONG:
        return LUX_EINVAL;
    }
    return LUX_EIO;
}

static size_t
s_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (size_t) pg : 4096;
}

exec_arena_t *
exec_arena_create(const char *name, size_t size)
{
    return exec_arena_create_spare(name, size, 0);
}

exec_arena_t *
exec_arena_create_spare(const char *name, size_t size, size_t spare)
{
    char nm[NAME_MAX + 1];
    struct statvfs vfs;
    size_t pg = s_page();
    int fd, e;

    if (s_shm_name(name, nm))
        return NULL;
    if (size == 0 || size > SIZE_MAX / 4 || spare > SIZE_MAX / 4 ||
        size + spare > (size_t) INT64_MAX / 2) {
        util_err(LUX_EINVAL, "arena %s: cannot have %zu bytes (and %zu spare)", nm, size, spare);
        return NULL;
    }
    size = (size + pg - 1) / pg * pg;
    spare = (spare + pg - 1) / pg * pg;
    if (statvfs(S_SHM_DIR, &vfs) == 0 && (uint64_t) vfs.f_bavail * vfs.f_frsize < size) {
        util_err(LUX_EFULL, "arena %s: %zu bytes, but " S_SHM_DIR " has %llu free", nm, size,
                 (unsigned long long) vfs.f_bavail * vfs.f_frsize);
        return NULL;
    }
    exec_arena_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "arena %s: out of memory", nm);
        return NULL;
    }
    memcpy(self->name, nm, sizeof nm);
    self->alloc = exec_alloc_new(size);
    if (!self->alloc || (spare && !(self->spare = exec_alloc_new(spare)))) {
        util_err_ctx(LUX_ENOMEM, "arena %s", nm);
        exec_alloc_destroy(&self->alloc);
        free(self);
        return NULL;
    }

    fd = shm_open(nm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        e = errno;
        if (e == EEXIST)
            util_err(LUX_EEXIST,
                     "arena %s: " S_SHM_DIR "%s exists (a live node manager's, or left by one "
                     "that was killed)",
                     nm, nm);
        else
            util_err(s_errno_code(e), "arena %s: shm_open: %s", nm, strerror(e));
        exec_alloc_destroy(&self->alloc);
        exec_alloc_destroy(&self->spare);
        free(self);
        return NULL;
    }
    if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t) (size + spare)) < 0) {
        e = errno;
        util_err(s_errno_code(e), "arena %s: sizing to %zu bytes: %s", nm, size + spare,
                 strerror(e));
        goto fail;
    }
    self->base = mmap(NULL, size + spare, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (self->base == MAP_FAILED) {
        e = errno;
        self->base = NULL;
        util_err(s_errno_code(e), "arena %s: mmap of %zu bytes: %s", nm, size + spare,
                 strerror(e));
        goto fail;
    }
    close(fd);
    self->size = size + spare;
    self->store = size;
    self->writable = true;
    self->creator = getpid();
    s_live_add(nm);
    log_debug("arena %s: created, %zu bytes", nm, size);
    return self;

fail:
    close(fd);
    shm_unlink(nm);
    exec_alloc_destroy(&self->alloc);
    exec_alloc_destroy(&self->spare);
    free(self);
    return NULL;
}

exec_arena_t *
exec_arena_open(const char *name, bool writable)
{
    char nm[NAME_MAX + 1];
    struct stat st;
    int fd, e;

    if (s_shm_name(name, nm))
        return NULL;
    fd = shm_open(nm, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
    if (fd < 0) {
        e = errno;
        util_err(s_errno_code(e), "arena %s: %s", nm, strerror(e));
        return NULL;
    }
    if (fstat(fd, &st) < 0) {
        e = errno;
        util_err(LUX_EIO, "arena %s: fstat: %s", nm, strerror(e));
        close(fd);
        return NULL;
    }
    /* a creator between shm_open and ftruncate shows size 0 */
    if (st.st_size <= 0 || (uint64_t) st.st_size > SIZE_MAX) {
        util_err(LUX_ESTATE, "arena %s: size %lld (still being created?)", nm,
                 (long long) st.st_size);
        close(fd);
        return NULL;
    }
    exec_arena_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "arena %s: out of memory", nm);
        close(fd);
        return NULL;
    }
    memcpy(self->name, nm, sizeof nm);
    self->size = self->store = (size_t) st.st_size;
    self->writable = writable;
    self->base =
        mmap(NULL, self->size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    e = errno;
    close(fd);
    if (self->base == MAP_FAILED) {
        util_err(s_errno_code(e), "arena %s: mmap of %zu bytes: %s", nm, self->size, strerror(e));
        free(self);
        return NULL;
    }
    return self;
}

void
exec_arena_destroy(exec_arena_t **self_p)
{
    exec_arena_t *self = *self_p;
    if (!self)
        return;
    if (self->warming) { /* a chunk at most (2 MiB) */
        atomic_store(&self->warm_stop, true);
        pthread_join(self->warm, NULL);
    }
    if (self->base)
        munmap(self->base, self->size);
    if (self->creator && self->creator == getpid()) {
        s_live_del(self->name);
        if (shm_unlink(self->name) < 0)
            log_warn("arena %s: unlink: %s", self->name, strerror(errno));
        else
            log_debug("arena %s: removed", self->name);
    }
    exec_alloc_destroy(&self->alloc);
    exec_alloc_destroy(&self->spare);
    free(self->ready);
    free(self);
    *self_p = NULL;
}

uint8_t *
exec_arena_base(exec_arena_t *self)
{
    return self->base;
}

size_t
exec_arena_size(exec_arena_t *self)
{
    return self->size;
}

const char *
exec_arena_name(exec_arena_t *self)
{
    return self->name;
}

void
exec_arena_set_store(exec_arena_t *self, uint64_t store)
{
    if (!self->alloc && store < self->size)
        self->store = (size_t) store;
}

int
exec_arena_prefault(exec_arena_t *self, uint64_t off, size_t n)
{
    size_t pg = s_page();
    if (off > self->size || n > self->size - off)
        return util_err(LUX_EINVAL, "arena %s: prefault of %zu bytes at %llu: beyond %zu",
                        self->name, n, (unsigned long long) off, self->size);
    if (n == 0)
        return 0;
    size_t start = (size_t) off / pg * pg;
    size_t end = ((size_t) off + n + pg - 1) / pg * pg;
    uint8_t *p = self->base + start;
    int advice = self->writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;

    for (;;) {
        if (madvise(p, end - start, advice) == 0)
            return 0;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EINVAL) /* a kernel before 5.14: touch the pages */
            break;
        if (e == EFAULT || e == ENOSPC)
            return util_err(LUX_EFULL,
                            "arena %s: prefault of %zu bytes at %zu: " S_SHM_DIR " is full",
                            self->name, end - start, start);
        return util_err(s_errno_code(e), "arena %s: prefault of %zu bytes at %zu: %s", self->name,
                        end - start, start, strerror(e));
    }
    for (size_t i = start; i < end; i += pg) {
        if (self->writable)
            __atomic_fetch_add(self->base + i, 0, __ATOMIC_RELAXED);
        else
            (void) *(volatile uint8_t *) (self->base + i);
    }
    return 0;
}

static bool
s_is_ready(const exec_arena_t *self, size_t chunk)
{
    return self->ready[chunk / 8] >> (chunk % 8) & 1;
}

int
exec_arena_ready(exec_arena_t *self, uint64_t off, size_t n)
{
    if (off > self->size || n > self->size - off)
        return util_err(LUX_EINVAL, "arena %s: %zu bytes at %llu: beyond %zu", self->name, n,
                        (unsigned long long) off, self->size);
    if (n == 0)
        return 0;
    if (!self->ready && !(self->ready = calloc((self->size / S_CHUNK + 8) / 8, 1)))
        return util_err(LUX_ENOMEM, "arena %s: out of memory", self->name);
    size_t c = (size_t) off / S_CHUNK, last = ((size_t) off + n - 1) / S_CHUNK;
    while (c <= last) {
        if (s_is_ready(self, c)) {
            c++;
            continue;
        }
        size_t e = c; /* a run of chunks not populated yet: one call */
        while (e < last && !s_is_ready(self, e + 1))
            e++;
        size_t start = c * S_CHUNK, end = (e + 1) * S_CHUNK;
        int rc = exec_arena_prefault(self, start, (end < self->size ? end : self->size) - start);
        if (rc)
            return rc;
        /* the spare region's pages go back when its blocks are freed:
           what is ready there now may not be next time */
        for (; c <= e; c++)
            if ((c + 1) * S_CHUNK <= self->store)
                self->ready[c / 8] |= (uint8_t) (1u << (c % 8));
    }
    return 0;
}

/* ------------------------------------------------------------------------
   The creator's allocator */

static int
s_not_owner(exec_arena_t *self, const char *what)
{
    return util_err(LUX_ESTATE, "arena %s: %s: only the creator allocates", self->name, what);
}

int
exec_arena_alloc(exec_arena_t *self, size_t n, uint64_t *off)
{
    if (!self->alloc)
        return s_not_owner(self, "alloc");
    int rc = exec_alloc_reserve(self->alloc, n, off);
    if (rc)
        util_err_ctx(rc, "arena %s", self->name);
    return rc;
}

int
exec_arena_alloc_spare(exec_arena_t *self, size_t n, uint64_t *off)
{
    if (!self->alloc)
        return s_not_owner(self, "alloc");
    if (!self->spare)
        return util_err(LUX_EFULL, "arena %s: no spare region", self->name);
    int rc = exec_alloc_reserve(self->spare, n, off);
    if (rc)
        return util_err_ctx(rc, "arena %s: spare region", self->name);
    *off += self->store;
    return 0;
}

/* Give back the whole pages of the spare block [off, off + n): the file
   holds no page for it afterwards, in any process. */
static void
s_spare_punch(exec_arena_t *self, uint64_t off, uint64_t n)
{
    size_t pg = s_page();
    size_t start = ((size_t) off + pg - 1) / pg * pg, end = (size_t) (off + n) / pg * pg;
    if (end > start && madvise(self->base + start, end - start, MADV_REMOVE) < 0)
        log_warn("arena %s: giving back %zu bytes at %zu: %s (they stay in the file)",
                 self->name, end - start, start, strerror(errno));
}

int
exec_arena_free(exec_arena_t *self, uint64_t off)
{
    if (!self->alloc)
        return s_not_owner(self, "free");
    int rc;
    if (self->spare && off >= self->store) {
        uint64_t n = exec_alloc_block(self->spare, off - self->store);
        if ((rc = exec_alloc_release(self->spare, off - self->store)) == 0)
            s_spare_punch(self, off, n);
    } else {
        rc = exec_alloc_release(self->alloc, off);
    }
    if (rc) {
        util_err_ctx(rc, "arena %s", self->name);
        log_warn("%s (ignored)", util_errmsg());
    }
    return rc;
}

size_t
exec_arena_used(exec_arena_t *self)
{
    return (self->alloc ? (size_t) exec_alloc_used(self->alloc) : 0) + exec_arena_spare_used(self);
}

size_t
exec_arena_spare_used(exec_arena_t *self)
{
    return self->spare ? (size_t) exec_alloc_used(self->spare) : 0;
}

size_t
exec_arena_largest_free(exec_arena_t *self)
{
    return self->alloc ? (size_t) exec_alloc_largest_free(self->alloc) : 0;
}

int
exec_arena_check(exec_arena_t *self)
{
    if (!self->alloc)
        return s_not_owner(self, "check");
    int rc = exec_alloc_check(self->alloc);
    if (!rc && self->spare)
        rc = exec_alloc_check(self->spare);
    if (rc)
        util_err_ctx(rc, "arena %s", self->name);
    return rc;
}

/* ------------------------------------------------------------------------
   Warming the store (exec_arena_warm_start) */

#define S_WARM_STEP ((size_t) 2 << 20)

static void *
s_warm(void *arg)
{
    exec_arena_t *self = arg;
    setpriority(PRIO_PROCESS, (id_t) gettid(), 19); /* this thread only: the loop comes first */
    size_t pg = s_page(), off = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (; off < self->store && !atomic_load_explicit(&self->warm_stop, memory_order_relaxed);
         off += S_WARM_STEP) {
        size_t n = self->store - off < S_WARM_STEP ? self->store - off : S_WARM_STEP;
        if (madvise(self->base + off, n, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) {
            log_warn("arena %s: warming stopped at %zu of %zu MiB: %s", self->name, off >> 20,
                     self->store >> 20, errno == EFAULT || errno == ENOSPC
                                            ? S_SHM_DIR " is full" : strerror(errno));
            return NULL;
        }
        /* a write to each page through this mapping: what costs here is
           the first write, populated or not (doc/benchmarks.md); adding 0
           atomically leaves any byte another process writes as it is */
        for (size_t i = off; i < off + n; i += pg)
            __atomic_fetch_add(self->base + i, 0, __ATOMIC_RELAXED);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    log_info("arena %s: store warm: %zu MiB in %.1f s (%.1f s of CPU)%s", self->name, off >> 20,
             (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9,
             util_thread_cpu_ns() / 1e9, off < self->store ? ", stopped" : "");
    if (off >= self->store)
        atomic_store(&self->warm_done, true);
    return NULL;
}

int
exec_arena_warm_start(exec_arena_t *self)
{
    if (!self->alloc)
        return s_not_owner(self, "warm");
    if (self->warming)
        return 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&self->warm, NULL, s_warm, self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc)
        return util_err(LUX_EIO, "arena %s: a thread to warm it: %s", self->name, strerror(rc));
    self->warming = true;
    return 0;
}

bool
exec_arena_warmed(exec_arena_t *self)
{
    return atomic_load(&self->warm_done);
}

/* 3001-exec-arena: the object store's shared memory. The allocator against
   a model under a long random run (no overlap, alignment, exact used bytes,
   full coalescing), full and fragmented arenas, bad frees, a million small
   blocks and a few multi-GB ones; then the file: another process writing
   into a block by name, a read-only mapping, name clashes, mode, unlink.

   No czmq here: the child processes are forked (and exec'd) freely. */
#include "tap.h"
#include "exec/exec_arena.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_log.h"
#include "util/util_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t) 1 << 20)
#define GiB ((size_t) 1 << 30)

static pid_t s_pid;
static char s_names[16][64];
static int s_nnames;
static uint64_t s_rng = 0x9e3779b97f4a7c15ULL;
#define s_rand() tap_rand(&s_rng)

/* A fresh arena name, removed at exit if a failing test left it. */
static const char *
s_name(void)
{
    if (s_nnames == 16)
        bail("too many arena names");
    snprintf(s_names[s_nnames], sizeof s_names[0], "lux-t3001-%d-%d", (int) s_pid, s_nnames);
    return s_names[s_nnames++];
}

static void
s_cleanup(void)
{
    if (getpid() != s_pid)
        return;
    for (int i = 0; i < s_nnames; i++) {
        char nm[80];
        snprintf(nm, sizeof nm, "/%s", s_names[i]);
        shm_unlink(nm);
    }
}

static bool
s_shm_exists(const char *name)
{
    char p[128];
    struct stat st;
    snprintf(p, sizeof p, "/dev/shm/%s", name);
    return stat(p, &st) == 0;
}

/* ------------------------------------------------------------------------
   The model: one byte per 64-byte unit, 1 where a live block is. */

typedef struct {
    uint64_t off, size; /* as allocated, size rounded up to 64 */
    uint64_t tag;       /* written at both ends of the block */
} s_live_t;

static uint64_t
s_round(uint64_t n)
{
    return (n + 63) & ~(uint64_t) 63;
}

/* The longest run of free units, in bytes. */
static uint64_t
s_longest_hole(const uint8_t *units, size_t nunits)
{
    size_t best = 0, run = 0;
    for (size_t i = 0; i < nunits; i++) {
        run = units[i] ? 0 : run + 1;
        if (run > best)
            best = run;
    }
    return (uint64_t) best * 64;
}

/* A size from tiny to large: mostly small, some up to 1 MiB, a few up to
   the given max. */
static uint64_t
s_size(uint64_t max)
{
    uint64_t r = s_rand() % 100;
    if (r < 60)
        return 1 + s_rand() % 256;
    if (r < 85)
        return 1 + s_rand() % 65536;
    if (r < 98)
        return 1 + s_rand() % MiB;
    return 1 + s_rand() % max;
}

static void
s_model_run(void)
{
    const size_t size = 64 * MiB, nunits = size / 64;
    exec_arena_t *a = exec_arena_create(s_name(), size);
    if (!a)
        bail("create: %s", util_errmsg());
    uint8_t *base = exec_arena_base(a);
    uint8_t *units = calloc(nunits, 1);
    size_t cap = 1 << 16, nlive = 0;
    s_live_t *live = malloc(cap * sizeof *live);
    uint64_t used = 0;
    int bad_align = 0, overlap = 0, bad_used = 0, bad_tag = 0, bad_check = 0;
    int fulls = 0, bad_full = 0, bad_largest = 0, recovered = 0, other = 0;
    bool last_full = false;
    const int steps = 200000;

    for (int step = 0; step < steps; step++) {
        /* allocate more often while less than 70% is used */
        bool alloc = nlive == 0 || s_rand() % 100 < (used < size / 10 * 7 ? 60 : 40);
        if (alloc && nlive < cap) {
            uint64_t n = s_size(16 * MiB), off;
            int rc = exec_arena_alloc(a, n, &off);
            if (rc == LUX_EFULL) {
                fulls++;
                last_full = true;
                if (s_longest_hole(units, nunits) >= s_round(n))
                    bad_full++;
                continue;
            }
            if (rc) {
                other++;
                continue;
            }
            if (last_full)
                recovered++;
            last_full = false;
            uint64_t sz = s_round(n);
            if (off % 64)
                bad_align++;
            if (off + sz > size || memchr(units + off / 64, 1, sz / 64))
                overlap++;
            else
                memset(units + off / 64, 1, sz / 64);
            uint64_t tag = s_rand();
            memcpy(base + off, &tag, 8);
            memcpy(base + off + sz - 8, &tag, 8);
            live[nlive++] = (s_live_t){off, sz, tag};
            used += sz;
        } else {
            size_t k = (size_t) (s_rand() % nlive);
            s_live_t b = live[k];
            live[k] = live[--nlive];
            if (memcmp(base + b.off, &b.tag, 8) || memcmp(base + b.off + b.size - 8, &b.tag, 8))
                bad_tag++;
            if (exec_arena_free(a, b.off))
                other++;
            memset(units + b.off / 64, 0, b.size / 64);
            used -= b.size;
        }
        if (exec_arena_used(a) != used)
            bad_used++;
        if (step % 5000 == 0) {
            if (exec_arena_check(a)) {
                if (!bad_check++)
                    diag("step %d: %s", step, util_errmsg());
            }
            if (exec_arena_largest_free(a) != s_longest_hole(units, nunits))
                bad_largest++;
        }
    }
    diag("model: %d steps, %zu live, %d full, %d recoveries", steps, nlive, fulls, recovered);
    is_int(bad_align, 0, "every block 64-byte aligned");
    is_int(overlap, 0, "no two live blocks overlap");
    is_int(bad_tag, 0, "no block's bytes were overwritten by another's");
    is_int(bad_used, 0, "used bytes exact after every step");
    is_int(bad_check, 0, "invariants hold (list, tree, hash) every 5000 steps");
    is_int(bad_largest, 0, "largest free block is the model's longest hole");
    ok(fulls > 0 && bad_full == 0, "LUX_EFULL only when no hole fits (%d times)", fulls);
    ok(recovered > 0, "allocations succeed again after frees (%d times)", recovered);
    is_int(other, 0, "no other errors");

    while (nlive > 0) {
        size_t k = (size_t) (s_rand() % nlive);
        exec_arena_free(a, live[k].off);
        live[k] = live[--nlive];
    }
    ok(exec_arena_used(a) == 0 && exec_arena_largest_free(a) == size,
       "all freed: one free block of the whole arena");
    is_int(exec_arena_check(a), 0, "invariants hold when empty");
    exec_arena_destroy(&a);
    free(units);
    free(live);
}

/* ------------------------------------------------------------------------
   Full, fragmented, bad input */

static void
s_full_and_fragments(void)
{
    exec_arena_t *a = exec_arena_create(s_name(), MiB);
    uint64_t off[16], x;
    int n;

    for (n = 0; n < 16; n++)
        if (exec_arena_alloc(a, 64 * 1024, &off[n]))
            break;
    is_int(n, 16, "a 1 MiB arena holds 16 blocks of 64 KiB");
    is_int(exec_arena_alloc(a, 1, &x), LUX_EFULL, "then it is full");
    ok(strstr(util_errmsg(), exec_arena_name(a)) != NULL, "naming the arena: %s", util_errmsg());
    exec_arena_free(a, off[5]);
    is_int(exec_arena_alloc(a, 64 * 1024, &x), 0, "a free makes room again");
    is_int((int64_t) x, (int64_t) off[5], "in the freed block");

    for (int i = 0; i < 16; i += 2)
        exec_arena_free(a, off[i]);
    is_int((int64_t) exec_arena_largest_free(a), 64 * 1024, "every other freed: 64 KiB holes");
    is_int((int64_t) exec_arena_used(a), 8 * 64 * 1024, "and half used");
    is_int(exec_arena_alloc(a, 64 * 1024 + 1, &x), LUX_EFULL,
           "a block bigger than any hole does not fit");
    exec_arena_free(a, off[1]);
    is_int((int64_t) exec_arena_largest_free(a), 3 * 64 * 1024,
           "freeing a block between two holes merges the three");
    is_int(exec_arena_alloc(a, 128 * 1024, &x), 0, "now it fits");
    is_int((int64_t) x, (int64_t) off[0], "where the merged hole starts");
    is_int(exec_arena_check(a), 0, "invariants hold");

    /* best fit: a 64 KiB request goes to a 64 KiB hole, not the big one */
    exec_arena_free(a, off[3]); /* off[2..4] merge: 192 KiB */
    is_int(exec_arena_alloc(a, 60000, &x), 0, "a 60000-byte block");
    ok(x != off[2], "is not placed in the 192 KiB hole (best fit)");

    /* sizes at the edges */
    is_int(exec_arena_alloc(a, 0, &x), LUX_EINVAL, "0 bytes: LUX_EINVAL");
    is_int(exec_arena_alloc(a, MiB + 1, &x), LUX_EINVAL, "more than the arena: LUX_EINVAL");
    exec_arena_destroy(&a);

    a = exec_arena_create(s_name(), MiB);
    is_int(exec_arena_alloc(a, MiB, &x), 0, "the whole arena in one block");
    is_int(exec_arena_alloc(a, 1, &x), LUX_EFULL, "then nothing more");
    exec_arena_free(a, 0);
    is_int(exec_arena_alloc(a, 1, &x), 0, "1 byte");
    is_int((int64_t) exec_arena_used(a), 64, "counts as 64");

    /* bad frees change nothing and say why */
    uint64_t used = exec_arena_used(a);
    is_int(exec_arena_free(a, 12345), LUX_EINVAL, "a misaligned free is refused");
    ok(strstr(util_errmsg(), "misaligned") != NULL, "saying so: %s", util_errmsg());
    is_int(exec_arena_free(a, 64 * MiB), LUX_EINVAL, "a free beyond the end is refused");
    ok(strstr(util_errmsg(), "beyond the end") != NULL, "saying so: %s", util_errmsg());
    is_int(exec_arena_free(a, 4096), LUX_EINVAL, "a free of free space is refused");
    is_int(exec_arena_free(a, UINT64_MAX), LUX_EINVAL, "so is offset 2^64-1");
    exec_arena_alloc(a, 1000, &x);
    is_int(exec_arena_free(a, x + 64), LUX_EINVAL, "and one inside a block");
    ok(strstr(util_errmsg(), "not the start of a live block") != NULL, "saying so: %s",
       util_errmsg());
    exec_arena_free(a, x);
    is_int(exec_arena_free(a, x), LUX_EINVAL, "a double free is refused");
    ok(exec_arena_used(a) == used && exec_arena_check(a) == 0, "and nothing changed");
    exec_arena_destroy(&a);
}

/* ------------------------------------------------------------------------
   Many blocks, and huge ones */

static void
s_million(void)
{
    const size_t n = 1000000;
    exec_arena_t *a = exec_arena_create(s_name(), 256 * MiB);
    uint64_t *off = malloc(n * sizeof *off);
    int errs = 0;

    int64_t t0 = util_mono_ns();
    for (size_t i = 0; i < n; i++)
        errs += exec_arena_alloc(a, 100, &off[i]) != 0;
    int64_t t1 = util_mono_ns();
    is_int(errs, 0, "a million 100-byte blocks");
    is_int((int64_t) exec_arena_used(a), (int64_t) n * 128, "using 128 bytes each");
    is_int(exec_arena_check(a), 0, "invariants hold with a million blocks");
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t) (s_rand() % (i + 1));
        uint64_t t = off[i];
        off[i] = off[j];
        off[j] = t;
    }
    int64_t t2 = util_mono_ns();
    for (size_t i = 0; i < n; i++)
        errs += exec_arena_free(a, off[i]) != 0;
    int64_t t3 = util_mono_ns();
    is_int(errs, 0, "freed in random order");
    ok(exec_arena_used(a) == 0 && exec_arena_largest_free(a) == exec_arena_size(a),
       "back to one free block");
    diag("a million allocs in %.0f ms, frees in random order in %.0f ms", (t1 - t0) / 1e6,
         (t3 - t2) / 1e6);
    exec_arena_destroy(&a);
    free(off);

    /* a few multi-GB blocks among small ones in a sparse 8 GiB arena */
    a = exec_arena_create(s_name(), 8 * GiB);
    if (!a) {
        skip(util_errmsg());
        return;
    }
    uint64_t big[3], small[3];
    errs = 0;
    for (int i = 0; i < 3; i++) {
        errs += exec_arena_alloc(a, 100, &small[i]) != 0;
        errs += exec_arena_alloc(a, 2 * GiB + 100, &big[i]) != 0;
    }
    ok(errs == 0 && exec_arena_used(a) == 3 * (2 * GiB + 128) + 3 * 128,
       "three 2 GiB blocks among small ones in 8 GiB");
    uint64_t x;
    is_int(exec_arena_alloc(a, 2 * GiB, &x), LUX_EFULL, "a fourth does not fit");
    uint8_t *p = exec_arena_base(a) + big[2] + GiB;
    is_int(exec_arena_prefault(a, big[2] + GiB, MiB), 0, "prefault 1 MiB in the middle");
    p[0] = 1;
    p[MiB - 1] = 2;
    ok(p[0] == 1 && p[MiB - 1] == 2, "and write there");
    for (int i = 0; i < 3; i++) {
        exec_arena_free(a, big[i]);
        exec_arena_free(a, small[i]);
    }
    ok(exec_arena_largest_free(a) == 8 * GiB && exec_arena_check(a) == 0,
       "all merged back into one 8 GiB block");
    exec_arena_destroy(&a);
}

/* ------------------------------------------------------------------------
   The file, and other processes */

/* Child mode: open the arena by name, write a pattern into the block. */
static int
s_child_write(const char *name, const char *offs, const char *ns)
{
    exec_arena_t *a = exec_arena_open(name, true);
    if (!a) {
        fprintf(stderr, "# child: %s\n", util_errmsg());
        return 2;
    }
    uint64_t off = strtoull(offs, NULL, 10);
    size_t n = strtoull(ns, NULL, 10);
    if (off + n > exec_arena_size(a))
        return 3;
    for (size_t i = 0; i < n; i++)
        exec_arena_base(a)[off + i] = (uint8_t) (i * 7 + 1);
    exec_arena_destroy(&a);
    return 0;
}

/* Is the mapping that starts at p shown in /proc/self/maps with perms? */
static bool
s_maps_perms(const void *p, const char *perms)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;
    unsigned long lo, hi;
    char got[8];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, got) == 3 && lo == (unsigned long) p) {
            found = strcmp(got, perms) == 0;
            if (!found)
                diag("mapping at %p: %s", p, got);
        }
    if (f)
        fclose(f);
    return found;
}

static void
s_processes(const char *self_exe)
{
    const char *name = s_name();
    exec_arena_t *a = exec_arena_create(name, 4 * MiB);
    uint64_t off;
    const size_t n = 100000;
    char offs[32], ns[32];

    ok(a != NULL && s_shm_exists(name), "created /dev/shm/%s", name);
    struct stat st;
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "with mode 0600 (umask was 0277)");
    exec_arena_alloc(a, 1000, &off); /* so the block is not at 0 */
    is_int(exec_arena_alloc(a, n, &off), 0, "a block for the child");

    /* another process (fork + exec of this test) writes into it by name */
    snprintf(offs, sizeof offs, "%llu", (unsigned long long) off);
    snprintf(ns, sizeof ns, "%zu", n);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self_exe, self_exe, "--child-write", name, offs, ns, (char *) NULL);
        _exit(127);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child opened it and wrote (status %d)",
       status);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += exec_arena_base(a)[off + i] != (uint8_t) (i * 7 + 1);
    is_int((int64_t) wrong, 0, "the parent sees the child's %zu bytes in place", n);

    /* a forked child holding the creator's handle does not unlink */
    pid = fork();
    if (pid == 0) {
        exec_arena_destroy(&a);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    ok(s_shm_exists(name), "a forked child's destroy leaves the file");

    /* read-only */
    exec_arena_t *ro = exec_arena_open(name, false);
    ok(ro != NULL, "opened read-only");
    ok(ro && exec_arena_size(ro) == 4 * MiB, "its size from the file");
    ok(ro && memcmp(exec_arena_base(ro) + off, exec_arena_base(a) + off, n) == 0,
       "reads the same bytes");
    ok(ro && s_maps_perms(exec_arena_base(ro), "r--s"), "mapped r--s (shared, no write)");
    ok(ro && mprotect(exec_arena_base(ro), 4096, PROT_READ | PROT_WRITE) < 0 && errno == EACCES,
       "and cannot be made writable (mprotect: EACCES)");
    ok(ro && exec_arena_prefault(ro, 0, 4 * MiB) == 0, "prefault of a read-only mapping");
    uint64_t x;
    is_int(exec_arena_alloc(ro, 64, &x), LUX_ESTATE, "only the creator allocates");
    is_int(exec_arena_free(ro, off), LUX_ESTATE, "and frees");
    exec_arena_destroy(&ro);
    ok(s_shm_exists(name), "an opener's destroy leaves the file");

    exec_arena_t *rw = exec_arena_open(name, true);
    ok(rw && s_maps_perms(exec_arena_base(rw), "rw-s"), "opened read-write: rw-s");
    exec_arena_destroy(&rw);

    /* names */
    exec_arena_t *b = exec_arena_create(name, MiB);
    ok(b == NULL, "creating an existing name is refused");
    ok(strstr(util_errmsg(), name) && strstr(util_errmsg(), "exists"), "saying so: %s",
       util_errmsg());
    char slashed[80];
    snprintf(slashed, sizeof slashed, "/%s", name);
    ok(exec_arena_create(slashed, MiB) == NULL, "also with a leading /");
    ok(exec_arena_create("a/b", MiB) == NULL && exec_arena_create("", MiB) == NULL &&
           exec_arena_create("/", MiB) == NULL,
       "names with a / inside, or empty, are refused");
    ok(exec_arena_create(s_name(), 0) == NULL, "size 0 is refused");
    ok(exec_arena_create(s_name(), (size_t) 1 << 50) == NULL &&
           strstr(util_errmsg(), "/dev/shm has"),
       "more than /dev/shm holds is refused: %s", util_errmsg());

    /* prefault ranges */
    is_int(exec_arena_prefault(a, 0, 4 * MiB), 0, "prefault the whole arena");
    is_int(exec_arena_prefault(a, 4 * MiB - 1, 2), LUX_EINVAL, "prefault past the end refused");
    is_int(exec_arena_prefault(a, UINT64_MAX, 1), LUX_EINVAL, "prefault at 2^64-1 refused");

    /* ready: the 64 KiB chunks a range touches, populated once; an arena
       whose size is not a whole number of chunks */
    exec_arena_t *r = exec_arena_create(s_name(), 200 * 1024);
    unsigned char vec[64];
    ok(r && exec_arena_ready(r, 70000, 10) == 0, "ready 10 bytes in the second chunk");
    ok(r && mincore(exec_arena_base(r) + 65536, 65536, vec) == 0 && vec[0] & 1 && vec[15] & 1,
       "its chunk is populated here");
    ok(r && mincore(exec_arena_base(r) + 131072, 4096, vec) == 0 && !(vec[0] & 1),
       "the next is not");
    ok(r && exec_arena_ready(r, 65536, 65536) == 0 && exec_arena_ready(r, 190000, 14800) == 0,
       "ready again, and up to the end of a last chunk shorter than the others");
    is_int(r ? exec_arena_ready(r, 190000, 14801) : -1, LUX_EINVAL, "ready past the end refused");
    exec_arena_destroy(&r);

    exec_arena_t *keep = exec_arena_open(name, false);
    exec_arena_destroy(&a);
    ok(a == NULL && !s_shm_exists(name), "the creator's destroy removes the file");
    wrong = 0;
    for (size_t i = 0; keep && i < n; i++)
        wrong += exec_arena_base(keep)[off + i] != (uint8_t) (i * 7 + 1);
    ok(keep && wrong == 0, "a process that still maps it reads on");
    exec_arena_destroy(&keep);
    exec_arena_destroy(&a);
    ok(exec_arena_open(name, false) == NULL, "then opening it fails");
    ok(strstr(util_errmsg(), name) != NULL, "naming it: %s", util_errmsg());
}

int
main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--child-write") == 0)
        return s_child_write(argv[2], argv[3], argv[4]);

    s_pid = getpid();
    util_log_level = tap_verbose() ? UTIL_LOG_DEBUG : UTIL_LOG_ERROR;
    tap_atexit(s_cleanup);
    umask(0277);

    s_model_run();
    s_full_and_fragments();
    s_million();
    /* the path, not /proc/self/exe, which under valgrind is valgrind */
    char exe[4096];
    if (util_self_exe(exe, sizeof exe))
        bail("%s", util_errmsg());
    s_processes(exe);
    return done_testing();
}

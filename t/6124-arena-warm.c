/* 6124-arena-warm: a node's store warmed on a thread of its own
   (exec_arena_warm_start, LUX_STORE_WARM=1; doc/DESIGN.md 7.3):
   - every page of the store comes to be in the file (its blocks in
     /dev/shm) and mapped here (this process's RssShmem), the spare
     region not;
   - bytes written into the store while it warms, by this thread, stay
     as written (the warming adds 0 atomically);
   - destroying an arena while its warming runs stops it (no thread left
     touching an unmapped store). */
#include "tap.h"
#include "exec/exec_arena.h"
#include "lux.h"
#include "util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORE (64u << 20)

/* A field of /proc/self/status, in KiB. */
static long
s_status_kb(const char *key)
{
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = strtol(line + strlen(key), NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static int
s_threads(void)
{
    long n = s_status_kb("Threads:");
    return (int) n;
}

int
main(void)
{
    char name[64], path[96];
    snprintf(name, sizeof name, "lux-6124-%d", (int) getpid());
    snprintf(path, sizeof path, "/dev/shm/%s", name);
    exec_arena_t *a = exec_arena_create_spare(name, STORE, STORE);
    if (!a)
        bail("arena: %s", lux_errmsg());
    uint8_t *base = exec_arena_base(a);
    long shmem0 = s_status_kb("RssShmem:");
    struct stat st;
    ok(stat(path, &st) == 0 && st.st_blocks * 512 < STORE / 8,
       "a new store is sparse (%lld bytes in the file)", (long long) st.st_blocks * 512);
    ok(!exec_arena_warmed(a), "and not warm");
    int threads = s_threads();
    is_int(exec_arena_warm_start(a), 0, "warming starts");
    is_int(s_threads(), threads + 1, "on a thread of its own");
    /* written while it warms: every 64 KiB, a pattern */
    for (size_t off = 0; off < STORE; off += 65536)
        memset(base + off, (int) (off >> 16) | 1, 4096);
    int64_t end = util_mono_ms() + 300000;
    while (!exec_arena_warmed(a) && util_mono_ms() < end)
        usleep(20000);
    ok(exec_arena_warmed(a), "it says the store is warm");
    ok(stat(path, &st) == 0 && st.st_blocks * 512 >= STORE && st.st_blocks * 512 < 2 * STORE,
       "every page of the store is in the file, the spare region's not (%lld bytes)",
       (long long) st.st_blocks * 512);
    long shmem = s_status_kb("RssShmem:");
    ok(shmem - shmem0 >= (long) (STORE >> 10) - 1024,
       "and mapped here (RssShmem %ld KiB, %ld before)", shmem, shmem0);
    int kept = 0;
    for (size_t off = 0; off < STORE; off += 65536) {
        uint8_t want = (uint8_t) ((off >> 16) | 1);
        size_t i = 0;
        while (i < 4096 && base[off + i] == want)
            i++;
        kept += i == 4096;
    }
    is_int(kept, (int) (STORE / 65536), "the bytes written while it warmed are as written");
    int64_t t0 = util_mono_ms();
    exec_arena_destroy(&a);
    is_int(s_threads(), threads, "destroyed: its thread is gone (%lld ms)",
           (long long) (util_mono_ms() - t0));

    /* stopped in the middle: a store of 1 GiB destroyed at once */
    snprintf(name, sizeof name, "lux-6124b-%d", (int) getpid());
    exec_arena_t *b = exec_arena_create(name, (size_t) 1 << 30);
    if (!b)
        bail("arena of 1 GiB: %s", lux_errmsg());
    is_int(exec_arena_warm_start(b), 0, "a store of 1 GiB warming");
    usleep(50000);
    t0 = util_mono_ms();
    bool warm = exec_arena_warmed(b);
    exec_arena_destroy(&b);
    ok(!warm && s_threads() == threads, "destroyed before it is warm: stopped, its thread gone "
       "(%lld ms)", (long long) (util_mono_ms() - t0));
    return done_testing();
}

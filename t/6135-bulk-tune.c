/* 6135-bulk-tune: the bulk path's tuning knobs (exec_bulk_job.h,
   lux(1) ENVIRONMENT), read when a bulk part is made.
   - LUX_BULK_LOOP=gmac at both ends: integrity-only pulls are tagged and
     checked on the loops' threads: whole, the fingerprint right, and no
     pool thread starts (before, the pool's threads did it); sealed pulls
     at the same ends still go to the pool (its threads start);
   - LUX_BULK_LOOP=open: a puller opens every record in its loop; a chunk
     altered after sealing (LUX_TEST_BULK_FLIP) fails the pull naming
     "authentication", nothing after it counted;
   - LUX_BULK_SNDBUF and LUX_BULK_RCVBUF of 64 KiB: pulls whole;
   - values it cannot read (LUX_BULK_LOOP=sideways, LUX_BULK_SNDBUF=-1):
     said in the log, the defaults kept, pulls whole. */
#include "tap.h"
#include "exec/exec_bulk.h"
#include "lib/bulkfx.h"
#include "lux.h"
#include "util/util_fp.h"
#include "util/util_time.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_MAX (6u << 20)

static uint8_t *s_src, *s_dst;

static uint64_t s_rng = 0x9e3779b97f4a7c15ull;

static uint64_t
s_rand(void)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return s_rng;
}

/* One pull of size bytes (compressible when squeeze) with chunk-byte
   chunks under cipher: whether it ended whole, by its records. */
static bool
s_pull(exec_bulk_t *src, exec_bulk_t *pul, int port, uint64_t size, bool squeeze,
       uint32_t chunk, int cipher)
{
    for (uint64_t k = 0; k < size; k++)
        s_src[k] = squeeze ? (uint8_t) (k / 4096 % 13) : (uint8_t) s_rand();
    bulkfx.src[0] = s_src;
    return bulkfx_pull_whole(src, pul, port, s_dst, size, chunk, cipher);
}

static int
s_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* A source on a free port and a puller, made with the environment as it
   is now (each with 2 pool threads). */
static void
s_pair(const exec_bulk_fns_t *fns, exec_bulk_t **src, exec_bulk_t **pul, int *port)
{
    *port = bulkfx_free_port();
    setenv("LUX_BULK_THREADS", "2", 1);
    *src = exec_bulk_new("127.0.0.1", *port, NULL, fns, NULL);
    *pul = exec_bulk_new(NULL, 0, NULL, fns, NULL);
    if (!*src || !*pul || exec_bulk_port(*src) != *port)
        bail("a source on 127.0.0.1:%d and a puller: %s", *port, lux_errmsg());
}

int
main(void)
{
    if (!(s_src = malloc(S_MAX)) || !(s_dst = malloc(S_MAX)))
        bail("out of memory");
    exec_bulk_t *src, *pul;
    int port;
    uint64_t n = (5u << 20) + 4321;
    int sealed = exec_bulk_cipher_here();

    if (exec_bulk_gmac_here()) {
        setenv("LUX_BULK_LOOP", "gmac", 1);
        s_pair(&bulkfx_fns, &src, &pul, &port);
        int before = s_threads();
        ok(s_pull(src, pul, port, n, false, 65536, EXEC_BULK_GMAC) && bulkfx_fp_is(0, s_src, n),
           "LUX_BULK_LOOP=gmac: an integrity-only pull is whole, its fingerprint right");
        is_int(s_threads(), before, "and no pool thread started at either end: tagged and "
               "checked on the loops' thread");
        ok(s_pull(src, pul, port, n, false, 65536, sealed) && bulkfx_fp_is(0, s_src, n),
           "a sealed pull between the same ends is whole");
        is_int(s_threads(), before + 4, "and was sealed and opened on the pools' threads (2 "
               "each)");
        exec_bulk_destroy(&pul);
        exec_bulk_destroy(&src);
    } else {
        for (int i = 0; i < 4; i++)
            skip("integrity only is not here (no AES-NI or no libcrypto)");
    }

    char flip[64];
    snprintf(flip, sizeof flip, "/tmp/lux-6135-flip-%d", (int) getpid());
    setenv("LUX_TEST_BULK_FLIP", flip, 1);
    setenv("LUX_BULK_LOOP", "open", 1);
    s_pair(&bulkfx_fns, &src, &pul, &port);
    unsetenv("LUX_TEST_BULK_FLIP");
    ok(s_pull(src, pul, port, n, true, 65536, sealed) && bulkfx_fp_is(0, s_src, n),
       "LUX_BULK_LOOP=open: a compressible pull opened in the puller's loop is whole");
    FILE *f = fopen(flip, "w");
    if (!f)
        bail("cannot make %s", flip);
    fclose(f);
    bool whole = s_pull(src, pul, port, n, false, 65536, sealed);
    ok(!whole && bulkfx.rc[0] == LUX_ECORRUPT && strstr(lux_errmsg(), "authentication") &&
       strstr(lux_errmsg(), "offset 65536"),
       "a chunk altered after sealing fails it, naming authentication and offset 65536");
    ok(!bulkfx.have_fp[0], "and hands over no fingerprint");
    int after = 0;
    for (uint64_t off = 2 * 65536; off + 65536 <= n; off += 65536)
        after += memcmp(s_src + off, s_dst + off, 65536) == 0;
    is_int(after, 0, "no chunk after it was opened into the block");
    unlink(flip);
    exec_bulk_destroy(&pul);
    exec_bulk_destroy(&src);

    setenv("LUX_BULK_LOOP", "none", 1);
    setenv("LUX_BULK_SNDBUF", "65536", 1);
    setenv("LUX_BULK_RCVBUF", "65536", 1);
    s_pair(&bulkfx_fns, &src, &pul, &port);
    ok(s_pull(src, pul, port, n, false, 16384, sealed) && bulkfx_fp_is(0, s_src, n),
       "LUX_BULK_SNDBUF and LUX_BULK_RCVBUF of 64 KiB, 16 KiB chunks: whole");
    exec_bulk_destroy(&pul);
    exec_bulk_destroy(&src);

    setenv("LUX_BULK_LOOP", "sideways,gmac-open", 1);
    setenv("LUX_BULK_SNDBUF", "-1", 1);
    unsetenv("LUX_BULK_RCVBUF");
    s_pair(&bulkfx_fns, &src, &pul, &port);
    ok(s_pull(src, pul, port, n, false, 65536, sealed) && bulkfx_fp_is(0, s_src, n),
       "LUX_BULK_LOOP=sideways,gmac-open and LUX_BULK_SNDBUF=-1 (said in the log, defaults "
       "kept): whole");
    exec_bulk_destroy(&pul);
    exec_bulk_destroy(&src);

    free(s_src);
    free(s_dst);
    return done_testing();
}

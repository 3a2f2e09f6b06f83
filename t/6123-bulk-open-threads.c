/* 6123-bulk-open-threads: a bulk puller that opens its records on the
   pool's threads while its loop receives (exec_bulk_job.c,
   doc/DESIGN.md 7.3). Both ends are exec_bulk parts in this one
   process, on 127.0.0.1: the source with 3 threads, the puller with 2
   (LUX_BULK_THREADS when each is made), so that records are opened out
   of order and must still be counted in order.
   - three pulls of 32 MiB at once, 64 KiB chunks, 16 in flight, one of
     them compressible (lz4 on the way, decompressed on a thread): each
     whole, byte for byte;
   - the puller's part now runs threads of its own: the process has the
     main thread, the source's 3 and the puller's 2 (before, a part that
     only pulls started none: it opened in its loop);
   - a chunk altered after sealing (LUX_TEST_BULK_FLIP: the second, at
     65536), the puller with one thread: the pull fails naming
     "authentication" and the offset, counts nothing past it, and no
     chunk after it is opened into the block (none holds its plain
     bytes), raw and compressed;
   - a puller with no threads (LUX_BULK_THREADS=0) opens in its loop:
     whole. */
#include "tap.h"
#include "lib/bulkfx.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE (32u << 20)
#define CHUNK 65536u
#define NPULL BULKFX_N

static uint8_t *s_src[NPULL], *s_dst[NPULL];

/* Object i's bytes: noise, or (squeeze) a short pattern lz4 shrinks. */
static void
s_fill(int i, bool squeeze)
{
    for (uint32_t k = 0; k < SIZE; k += 4) {
        uint32_t v = squeeze ? (k / 4096 + (uint32_t) i) % 13 * 0x01010101u
                             : (k + (uint32_t) i) * 2654435761u;
        memcpy(s_src[i] + k, &v, 4);
    }
}

/* n pulls at once (object i compressible where squeeze[i]), from src to
   pul, each dst zeroed first. How many ended whole. */
static int
s_round(exec_bulk_t *src, exec_bulk_t *pul, int port, int n, const bool *squeeze)
{
    exec_bulk_pull_t *h[NPULL] = {NULL};
    for (int i = 0; i < NPULL; i++)
        bulkfx_reset(i, i >= n); /* those not pulled count as ended */
    for (int i = 0; i < n; i++) {
        s_fill(i, squeeze[i]);
        memset(s_dst[i], 0, SIZE);
        h[i] = bulkfx_pull(pul, port, i, exec_bulk_cipher_here(), s_dst[i], CHUNK, 16);
    }
    bulkfx_pump(src, pul, 120000, 7, 0);
    int whole = 0;
    for (int i = 0; i < n; i++) {
        if (!bulkfx.ended[i])
            exec_bulk_pull_stop(pul, &h[i]);
        whole += bulkfx.ended[i] && bulkfx.rc[i] == 0 && memcmp(s_src[i], s_dst[i], SIZE) == 0;
    }
    return whole;
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

/* Chunks after the failed one (at 65536) that hold their plain bytes. */
static int
s_opened_after(int i)
{
    int n = 0;
    for (uint32_t off = 2 * CHUNK; off < SIZE; off += CHUNK)
        n += memcmp(s_src[i] + off, s_dst[i] + off, CHUNK) == 0;
    return n;
}

static void
s_flip_round(exec_bulk_t *src, exec_bulk_t *pul, int port, const char *flip, bool squeeze)
{
    FILE *f = fopen(flip, "w");
    if (!f)
        bail("cannot make %s", flip);
    fclose(f);
    const char *what = squeeze ? "compressed" : "raw";
    is_int(s_round(src, pul, port, 1, &squeeze), 0, "%s: the pull with a flipped chunk is not whole",
           what);
    ok(bulkfx.ended[0] == 1 && bulkfx.rc[0] == LUX_ECORRUPT && strstr(bulkfx.err[0], "authentication") &&
           strstr(bulkfx.err[0], "offset 65536"),
       "%s: it failed once, naming authentication and offset 65536 (%d: %s)", what, bulkfx.rc[0],
       bulkfx.err[0]);
    ok(bulkfx.got[0] <= CHUNK, "%s: nothing past the failed chunk was counted (%llu bytes)", what,
       (unsigned long long) bulkfx.got[0]);
    is_int(s_opened_after(0), 0, "%s: no chunk after it was opened into the block", what);
    unlink(flip);
}

int
main(void)
{
    char flip[64];
    snprintf(flip, sizeof flip, "/tmp/lux-6123-flip-%d", (int) getpid());
    unlink(flip);
    setenv("LUX_TEST_BULK_FLIP", flip, 1);
    int port = bulkfx_free_port();
    setenv("LUX_BULK_THREADS", "3", 1);
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &bulkfx_fns, NULL);
    unsetenv("LUX_TEST_BULK_FLIP");
    setenv("LUX_BULK_THREADS", "2", 1);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    setenv("LUX_BULK_THREADS", "1", 1);
    exec_bulk_t *pul1 = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    setenv("LUX_BULK_THREADS", "0", 1);
    exec_bulk_t *pul0 = exec_bulk_new(NULL, 0, NULL, &bulkfx_fns, NULL);
    if (!src || !pul || !pul1 || !pul0 || exec_bulk_port(src) != port)
        bail("a source on 127.0.0.1:%d and pullers: %s", port, lux_errmsg());
    bulkfx.size = SIZE;
    for (int i = 0; i < NPULL; i++)
        if (!(bulkfx.src[i] = s_src[i] = malloc(SIZE)) || !(s_dst[i] = malloc(SIZE)))
            bail("out of memory");
    diag("cipher %s", exec_bulk_cipher_name(exec_bulk_cipher_here()));

    int before = s_threads();
    bool sq[NPULL] = {false, true, false};
    is_int(s_round(src, pul, port, NPULL, sq), NPULL,
           "%d pulls of 32 MiB at once (one compressible), opened on the puller's 2 threads: all "
           "whole", NPULL);
    is_int(s_threads(), before + 3 + 2,
           "the process runs the source's 3 threads and the puller's 2 (had %d)", before);

    s_flip_round(src, pul1, port, flip, false);
    s_flip_round(src, pul1, port, flip, true);
    bool one[1] = {false};
    is_int(s_round(src, pul1, port, 1, one), 1, "after them, a pull on the same puller is whole");

    int now = s_threads();
    is_int(s_round(src, pul0, port, NPULL, sq), NPULL,
           "a puller without threads (LUX_BULK_THREADS=0) opens in its loop: %d whole", NPULL);
    is_int(s_threads(), now, "and starts none");

    exec_bulk_destroy(&pul0);
    exec_bulk_destroy(&pul1);
    exec_bulk_destroy(&pul);
    exec_bulk_destroy(&src);
    for (int i = 0; i < NPULL; i++) {
        free(s_src[i]);
        free(s_dst[i]);
    }
    unlink(flip);
    return done_testing();
}

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
#include "exec/exec_bulk.h"
#include "lux.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SIZE (32u << 20)
#define CHUNK 65536u
#define NPULL 3

static uint8_t *s_src[NPULL], *s_dst[NPULL];
static exec_bulk_key_t s_key[NPULL];
static uint64_t s_got[NPULL];
static int s_ended[NPULL], s_rc[NPULL];
static char s_err[NPULL][512];

static int
s_serve(void *arg, uint64_t xid, const uint8_t id[LUX_REF_LEN], exec_bulk_key_t *key,
        const uint8_t **bytes, uint64_t *size)
{
    (void) arg;
    (void) id;
    for (int i = 0; i < NPULL; i++)
        if (s_key[i].xid == xid) {
            *key = s_key[i];
            if (bytes) {
                *bytes = s_src[i];
                *size = SIZE;
            }
            return 0;
        }
    return LUX_ENOTFOUND;
}

static void
s_sent(void *arg, uint64_t xid)
{
    (void) arg;
    (void) xid;
}

static void
s_over(void *arg, uint64_t xid)
{
    (void) arg;
    (void) xid;
}

static void
s_moved(void *arg, void *who, uint64_t got)
{
    (void) arg;
    s_got[(intptr_t) who] = got;
}

static void
s_end(void *arg, void *who, int rc, bool fallback)
{
    (void) arg;
    (void) fallback;
    int i = (int) (intptr_t) who;
    s_ended[i]++;
    s_rc[i] = rc;
    snprintf(s_err[i], sizeof s_err[i], "%s", rc ? lux_errmsg() : "");
    if (rc)
        diag("pull %d: %s", i, s_err[i]);
}

static bool
s_all_ended(void)
{
    for (int i = 0; i < NPULL; i++)
        if (!s_ended[i])
            return false;
    return true;
}

/* Turn both loops for up to ms, until every pull ended. */
static void
s_pump(exec_bulk_t *a, exec_bulk_t *b, int ms)
{
    int64_t end = util_mono_ms() + ms;
    while (util_mono_ms() < end && !s_all_ended()) {
        struct pollfd p[2] = {{exec_bulk_fd(a), POLLIN, 0}, {exec_bulk_fd(b), POLLIN, 0}};
        poll(p, 2, 10);
        exec_bulk_fired(a);
        exec_bulk_fired(b);
        exec_bulk_tick(a);
        exec_bulk_tick(b);
    }
}

static int
s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) ||
        getsockname(fd, (struct sockaddr *) &sa, &len))
        bail("no free port on 127.0.0.1");
    close(fd);
    return ntohs(sa.sin_port);
}

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
    uint8_t id[LUX_REF_LEN] = {1};
    for (int i = 0; i < NPULL; i++) {
        s_ended[i] = i >= n; /* those not pulled count as ended */
        s_got[i] = 0, s_rc[i] = 0, s_err[i][0] = 0;
        s_key[i].xid = 0;
    }
    for (int i = 0; i < n; i++) {
        s_fill(i, squeeze[i]);
        memset(s_dst[i], 0, SIZE);
        exec_bulk_key_new(&s_key[i], exec_bulk_cipher_here());
        h[i] = exec_bulk_pull_start(pul, "127.0.0.1", port, &s_key[i], id, s_dst[i], SIZE, CHUNK,
                                    16, (void *) (intptr_t) i);
        if (!h[i])
            bail("pull %d: %s", i, lux_errmsg());
    }
    s_pump(src, pul, 120000);
    int whole = 0;
    for (int i = 0; i < n; i++) {
        if (!s_ended[i])
            exec_bulk_pull_stop(pul, &h[i]);
        whole += s_ended[i] && s_rc[i] == 0 && memcmp(s_src[i], s_dst[i], SIZE) == 0;
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
    ok(s_ended[0] == 1 && s_rc[0] == LUX_ECORRUPT && strstr(s_err[0], "authentication") &&
           strstr(s_err[0], "offset 65536"),
       "%s: it failed once, naming authentication and offset 65536 (%d: %s)", what, s_rc[0],
       s_err[0]);
    ok(s_got[0] <= CHUNK, "%s: nothing past the failed chunk was counted (%llu bytes)", what,
       (unsigned long long) s_got[0]);
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
    exec_bulk_fns_t fns = {s_serve, s_sent, s_over, s_moved, s_end};
    int port = s_free_port();
    setenv("LUX_BULK_THREADS", "3", 1);
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &fns, NULL);
    unsetenv("LUX_TEST_BULK_FLIP");
    setenv("LUX_BULK_THREADS", "2", 1);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &fns, NULL);
    setenv("LUX_BULK_THREADS", "1", 1);
    exec_bulk_t *pul1 = exec_bulk_new(NULL, 0, NULL, &fns, NULL);
    setenv("LUX_BULK_THREADS", "0", 1);
    exec_bulk_t *pul0 = exec_bulk_new(NULL, 0, NULL, &fns, NULL);
    if (!src || !pul || !pul1 || !pul0 || exec_bulk_port(src) != port)
        bail("a source on 127.0.0.1:%d and pullers: %s", port, lux_errmsg());
    for (int i = 0; i < NPULL; i++)
        if (!(s_src[i] = malloc(SIZE)) || !(s_dst[i] = malloc(SIZE)))
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

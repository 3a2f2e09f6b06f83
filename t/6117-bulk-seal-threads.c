/* 6117-bulk-seal-threads: a bulk source that seals on threads while its
   loop sends (exec_bulk_pool.c, doc/DESIGN.md 7.3). Both ends are
   exec_bulk parts in this one process, on 127.0.0.1, with 3 sealing
   threads (LUX_BULK_THREADS=3), so that records are sealed out of order
   and must still go in order, each under its own record number.
   - three pulls of 32 MiB at once, 64 KiB chunks, 16 in flight: each
     whole, byte for byte;
   - each source's object sits in its own mapping: one transfer dropped
     in the middle (exec_bulk_drop), its mapping made unreadable at once
     (PROT_NONE): a thread still sealing from it would kill the test
     with SIGSEGV; the others go on and end whole. This catches a
     missing wait only when a job is queued or running at the drop,
     which the timing rarely gives: with exec_bulk_pool_cancel taken out
     of s_kill the test passed 2 runs of 2 (2026-11-29), so it guards
     the path, not the race; ASan builds see a job writing a freed slot;
   - the same with GMAC (integrity only, chunks sent from the object's
     own mapping) where this build can;
   - exec_bulk_destroy with a transfer streaming. */
#include "tap.h"
#include "exec/exec_bulk.h"
#include "lux.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define SIZE (32u << 20)
#define NPULL 3

static uint8_t *s_src[NPULL], *s_dst[NPULL];
static exec_bulk_key_t s_key[NPULL];
static uint64_t s_got[NPULL];
static int s_ended[NPULL], s_rc[NPULL];

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
    s_ended[(intptr_t) who]++;
    s_rc[(intptr_t) who] = rc;
    if (rc)
        diag("pull %d: %s", (int) (intptr_t) who, lux_errmsg());
}

/* Turn both loops for up to ms, until done() says so. */
static void
s_pump(exec_bulk_t *a, exec_bulk_t *b, int ms, bool (*done)(void))
{
    int64_t end = util_mono_ms() + ms;
    while (util_mono_ms() < end && !done()) {
        struct pollfd p[2] = {{exec_bulk_fd(a), POLLIN, 0}, {exec_bulk_fd(b), POLLIN, 0}};
        poll(p, 2, 10);
        exec_bulk_fired(a);
        exec_bulk_fired(b);
        exec_bulk_tick(a);
        exec_bulk_tick(b);
    }
}

static bool
s_all_moving(void)
{
    for (int i = 0; i < NPULL; i++)
        if (!(s_got[i] >= 4u << 20 || s_ended[i]))
            return false;
    return true;
}

static bool
s_all_ended(void)
{
    for (int i = 0; i < NPULL; i++)
        if (!s_ended[i])
            return false;
    return true;
}

static bool
s_first_moving(void)
{
    return s_got[0] > 0 || s_ended[0];
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

/* One round: NPULL pulls under cipher; the first dropped mid-way when
   drop. How many ended whole. */
static int
s_round(exec_bulk_t *src, exec_bulk_t *pul, int port, int cipher, bool drop)
{
    exec_bulk_pull_t *h[NPULL];
    uint8_t id[LUX_REF_LEN] = {1};
    for (int i = 0; i < NPULL; i++) {
        s_src[i] = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        s_dst[i] = malloc(SIZE);
        if (s_src[i] == MAP_FAILED || !s_dst[i])
            bail("out of memory");
        for (uint32_t k = 0; k < SIZE; k += 4) {
            uint32_t v = (k + (uint32_t) i) * 2654435761u;
            memcpy(s_src[i] + k, &v, 4);
        }
        s_got[i] = 0, s_ended[i] = 0, s_rc[i] = 0;
        exec_bulk_key_new(&s_key[i], cipher);
        h[i] = exec_bulk_pull_start(pul, "127.0.0.1", port, &s_key[i], id, s_dst[i], SIZE, 65536,
                                    16, (void *) (intptr_t) i);
        if (!h[i])
            bail("pull %d: %s", i, lux_errmsg());
    }
    if (drop) {
        s_pump(src, pul, 60000, s_all_moving);
        ok(s_got[0] > 0 && s_got[0] < SIZE, "the first pull is on its way (%llu bytes)",
           (unsigned long long) s_got[0]);
        exec_bulk_drop(src, s_key[0].xid);
        /* no thread may read its object any more */
        ok(mprotect(s_src[0], SIZE, PROT_NONE) == 0, "dropped, its object made unreadable");
    }
    s_pump(src, pul, 120000, s_all_ended);
    int whole = 0;
    for (int i = 0; i < NPULL; i++) {
        if (!s_ended[i])
            exec_bulk_pull_stop(pul, &h[i]);
        whole += s_ended[i] && s_rc[i] == 0 && memcmp(s_src[i], s_dst[i], SIZE) == 0;
    }
    if (drop)
        ok(s_ended[0] && s_rc[0] != 0, "the dropped pull ended with an error (%d)", s_rc[0]);
    for (int i = 0; i < NPULL; i++) {
        munmap(s_src[i], SIZE);
        free(s_dst[i]);
    }
    return whole;
}

int
main(void)
{
    setenv("LUX_BULK_THREADS", "3", 1);
    exec_bulk_fns_t fns = {s_serve, s_sent, s_over, s_moved, s_end};
    int port = s_free_port();
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &fns, NULL);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &fns, NULL);
    if (!src || !pul || exec_bulk_port(src) != port)
        bail("a source on 127.0.0.1:%d and a puller: %s", port, lux_errmsg());
    int cipher = exec_bulk_cipher_here();
    is_int(s_round(src, pul, port, cipher, false), NPULL,
           "%d pulls of 32 MiB at once, sealed (%s) on 3 threads: all whole", NPULL,
           exec_bulk_cipher_name(cipher));
    is_int(s_round(src, pul, port, cipher, true), NPULL - 1,
           "one dropped in the middle: the other %d whole, no thread read the dropped object",
           NPULL - 1);
    if (exec_bulk_gmac_here())
        is_int(s_round(src, pul, port, EXEC_BULK_GMAC, true), NPULL - 1,
               "the same with integrity only (GMAC): the other %d whole", NPULL - 1);
    else
        skip("this build cannot do GMAC (no libcrypto or no AES-NI)");

    exec_bulk_key_t k;
    uint8_t id[LUX_REF_LEN] = {1};
    s_src[0] = malloc(SIZE);
    s_dst[0] = malloc(SIZE);
    memset(s_src[0], 7, SIZE);
    exec_bulk_key_new(&k, cipher);
    s_key[0] = k, s_key[1].xid = s_key[2].xid = 0;
    s_got[0] = 0, s_ended[0] = 0;
    exec_bulk_pull_t *h = exec_bulk_pull_start(pul, "127.0.0.1", port, &k, id, s_dst[0], SIZE,
                                               65536, 16, (void *) (intptr_t) 0);
    s_pump(src, pul, 60000, s_first_moving);
    exec_bulk_destroy(&src);
    ok(src == NULL && s_got[0] > 0, "exec_bulk_destroy with a transfer streaming (%llu bytes in)",
       (unsigned long long) s_got[0]);
    if (!s_ended[0])
        exec_bulk_pull_stop(pul, &h);
    exec_bulk_destroy(&pul);
    free(s_src[0]);
    free(s_dst[0]);
    return done_testing();
}

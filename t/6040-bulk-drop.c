/* 6040-bulk-drop: a bulk source's connection ended by exec_bulk_drop
   (the object it streams is let go, exec_xfer_src.c) or by
   exec_bulk_destroy (the node's end), outside the bulk loop.
   exec_bulk_drop walked the list of connections while s_kill, at depth 0,
   freed the one it had just ended: the next step read the freed
   connection's link. Found by t/6091-cluster-harsh.sh (seeds 6101 and
   6111 with 800 tasks: the head's node manager died with SIGSEGV in
   s_kill, under exec_bulk_drop and exec_bulk_destroy). A plain build may
   read the stale link and go on; under AddressSanitizer (.ci/run runs
   this test so) or valgrind it is a heap-use-after-free. Both ends here
   are exec_bulk parts in this one process, on 127.0.0.1. */
#include "tap.h"
#include "exec/exec_bulk.h"
#include "lux.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SIZE (64u << 20)
#define NPULL 3

static uint8_t *s_src, *s_dst[NPULL];
static exec_bulk_key_t s_key[NPULL];
static uint64_t s_got[NPULL];
static int s_ended[NPULL], s_served;

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
                *bytes = s_src;
                *size = SIZE;
                s_served++;
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
    (void) rc;
    (void) fallback;
    s_ended[(intptr_t) who]++;
}

/* Turn both loops for up to ms, or until every pull has bytes. */
static void
s_pump(exec_bulk_t *a, exec_bulk_t *b, int ms)
{
    int64_t end = util_mono_ms() + ms;
    while (util_mono_ms() < end) {
        struct pollfd p[2] = {{exec_bulk_fd(a), POLLIN, 0}, {exec_bulk_fd(b), POLLIN, 0}};
        poll(p, 2, 10);
        exec_bulk_fired(a);
        exec_bulk_fired(b);
        bool all = true;
        for (int i = 0; i < NPULL; i++)
            all &= s_got[i] > 0 || s_ended[i];
        if (all)
            return;
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

int
main(void)
{
    exec_bulk_fns_t fns = {s_serve, s_sent, s_over, s_moved, s_end};
    int port = s_free_port();
    exec_bulk_t *src = exec_bulk_new("127.0.0.1", port, NULL, &fns, NULL);
    exec_bulk_t *pul = exec_bulk_new(NULL, 0, NULL, &fns, NULL);
    ok(src && pul && exec_bulk_port(src) == port, "a source on 127.0.0.1:%d and a puller", port);
    s_src = malloc(SIZE);
    for (uint32_t i = 0; s_src && i < SIZE; i++)
        s_src[i] = (uint8_t) (i * 2654435761u >> 13);
    exec_bulk_pull_t *h[NPULL];
    uint8_t id[LUX_REF_LEN] = {1};
    for (int i = 0; i < NPULL; i++) {
        s_dst[i] = malloc(SIZE);
        exec_bulk_key_new(&s_key[i], exec_bulk_cipher_here());
        h[i] = exec_bulk_pull_start(pul, "127.0.0.1", port, &s_key[i], id, s_dst[i], SIZE,
                                    65536, 1, (void *) (intptr_t) i);
    }
    s_pump(src, pul, 60000);
    int moving = 0;
    for (int i = 0; i < NPULL; i++)
        moving += s_got[i] > 0;
    is_int(moving, NPULL, "all %d pulls are moving (the source served %d)", NPULL, s_served);

    /* the first pull's object let go at the source: its connection ends,
       the others' go on */
    exec_bulk_drop(src, s_key[0].xid);
    ok(1, "exec_bulk_drop of a streaming transfer, the first of three connections");
    exec_bulk_drop(src, s_key[NPULL - 1].xid);
    ok(1, "and of the last");
    uint64_t before = s_got[1];
    s_got[1] = 0;
    s_pump(src, pul, 20000);
    ok(s_got[1] > before || s_ended[1], "the middle one goes on (%llu then %llu bytes)",
       (unsigned long long) before, (unsigned long long) s_got[1]);

    /* the node's end with connections still open */
    exec_bulk_destroy(&src);
    ok(src == NULL, "exec_bulk_destroy with a connection streaming");
    for (int i = 0; i < NPULL; i++)
        if (!s_ended[i])
            exec_bulk_pull_stop(pul, &h[i]);
    exec_bulk_destroy(&pul);
    ok(pul == NULL, "and the puller's end");
    for (int i = 0; i < NPULL; i++)
        free(s_dst[i]);
    free(s_src);
    return done_testing();
}

/* 5003-node-garbage: garbage on a node manager's client socket - random
   bytes, lying lengths, frames past their message, bad headers, unknown
   types, every message type with a garbage body, a hello claiming another
   client's ID, connections dropped in the middle of a message - while a
   driver keeps working; after each, the driver's tasks and puts must still
   give the right values, and the node manager must still accept new
   clients. */
#include "tap.h"
#include "lib/graph.h"
#include "db/db_cluster.h"
#include "exec/exec_client.h"
#include "net/net_link.h"
#include "exec/exec_node.h"
#include "net/net_wire.h"
#include "util/util_buf.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static uint64_t s_rng = 777;

static uint32_t
s_rand(void)
{
    s_rng = s_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t) (s_rng >> 33);
}

static char s_path[PATH_MAX];

/* A raw connection to the node's socket. */
static int
s_raw(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", s_path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof a) < 0)
        bail("connect %s", s_path);
    return fd;
}

static void
s_write(int fd, const void *p, size_t n)
{
    if (send(fd, p, n, MSG_NOSIGNAL) < 0) {
        /* the node may have closed on us: fine */
    }
}

/* One framed message: frames given as (pointer, length) pairs. */
static void
s_frames(int fd, int n, const void **p, const size_t *len)
{
    util_buf_t b;
    util_buf_init(&b);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += 4 + len[i];
    util_buf_put_u32(&b, (uint32_t) total);
    for (int i = 0; i < n; i++) {
        util_buf_put_u32(&b, (uint32_t) len[i]);
        util_buf_put(&b, p[i], len[i]);
    }
    s_write(fd, b.data, b.len);
    util_buf_free(&b);
}

static void
s_typed(int fd, int type, const void *body, size_t n)
{
    zframe_t *h = net_hdr_frame(type, NET_NO_SHARD, 0);
    const void *p[2] = {zframe_data(h), body};
    size_t len[2] = {zframe_size(h), n};
    s_frames(fd, body ? 2 : 1, p, len);
    zframe_destroy(&h);
}

static int s_unread; /* connections the node did not read to their end */

/* Done with a connection: the node must have read all we sent before the
   next check, or the check would prove nothing. A PING, then our end
   closed for writing; the node reads up to that end and hangs up (having
   answered the PING if the garbage left the stream in step), so its
   hang-up, seen as the end of what we read, is the proof. */
static void
s_done(int fd)
{
    char buf[4096];
    struct pollfd pf = {fd, POLLIN, 0};
    bool end = false;
    s_typed(fd, NET_PING, NULL, 0);
    shutdown(fd, SHUT_WR);
    for (int64_t t0 = util_mono_ms(); !end && util_mono_ms() - t0 < 30000;) {
        if (poll(&pf, 1, 1000) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        end = n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
    }
    if (!end) {
        diag("the node did not read a connection to its end within 30 s");
        s_unread++;
    }
    close(fd);
}

/* The driver still computes: a small chain and a put read back. */
static bool
s_works(lux_t *lx)
{
    int64_t a = 5, want = (3 * 5 + 1) % GRAPH_M;
    lux_ref_t r, p;
    lux_val_t v;
    if (lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&a, 8)}, 1, &r) ||
        lux_get(lx, &r, &v, 20000) || v.size != 8 || memcmp(v.data, &want, 8) != 0)
        return false;
    lux_free(lx, 1, &r);
    char big[100000];
    memset(big, 0x5a, sizeof big);
    if (lux_put(lx, big, sizeof big, &p) || lux_get(lx, &p, &v, 20000) ||
        v.size != sizeof big || memcmp(v.data, big, sizeof big) != 0)
        return false;
    lux_free(lx, 1, &p);
    return true;
}

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .workers = 1,
                        .store_bytes = 64 << 20};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    db_cluster_t c;
    if (db_cluster_load(&c, lux_dir(lx)))
        bail("%s", lux_errmsg());
    exec_node_endpoint(&c, s_path, sizeof s_path);
    ok(s_works(lx), "the driver works before any garbage");

    /* random bytes, then hang up */
    for (int i = 0; i < 20; i++) {
        int fd = s_raw();
        uint8_t junk[4096];
        size_t n = 1 + s_rand() % sizeof junk;
        for (size_t k = 0; k < n; k++)
            junk[k] = (uint8_t) s_rand();
        s_write(fd, junk, n);
        s_done(fd);
    }
    ok(s_works(lx), "after 20 connections of random bytes");

    /* a length far past the limit; a frame running past its message */
    int fd = s_raw();
    uint8_t huge[8] = {0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4};
    s_write(fd, huge, sizeof huge);
    s_done(fd);
    fd = s_raw();
    uint8_t past[12] = {8, 0, 0, 0, 200, 0, 0, 0, 'a', 'b', 'c', 'd'};
    s_write(fd, past, sizeof past);
    s_done(fd);
    ok(s_works(lx), "after a message claiming 2 GB and a frame running past its message");

    /* half a message, then hang up */
    fd = s_raw();
    uint8_t half[6] = {100, 0, 0, 0, 10, 0};
    s_write(fd, half, sizeof half);
    s_done(fd);
    ok(s_works(lx), "after a connection dropped in the middle of a message");

    /* well framed garbage: bad header, unknown type, every type with a
       garbage body, before and after a hello */
    for (int pass = 0; pass < 2; pass++) {
        fd = s_raw();
        const void *p[1] = {"not a header"};
        size_t len[1] = {12};
        s_frames(fd, 1, p, len);
        s_typed(fd, 200, "x", 1);
        if (pass == 1) {
            /* a worker that was not started, a pid that is not the
               sender's (both refused), then a real driver's hello */
            util_buf_t b;
            util_buf_init(&b);
            util_id_t id;
            util_id_random(&id);
            util_buf_put_u8(&b, 2);
            util_buf_put_u32(&b, (uint32_t) getpid());
            util_buf_put(&b, id.b, 16);
            util_buf_put(&b, id.b, 16);
            util_buf_put_str(&b, "", 0);
            util_buf_put_blob(&b, "", 0);
            util_buf_put_u32(&b, 0);
            s_typed(fd, NET_NODE_HELLO, b.data, b.len);
            b.data[0] = 1;
            util_le32(b.data + 1, 1);
            s_typed(fd, NET_NODE_HELLO, b.data, b.len);
            b.len = 0;
            util_buf_put_u8(&b, 1);
            util_buf_put_u32(&b, (uint32_t) getpid());
            util_buf_put(&b, id.b, 16);
            util_buf_put(&b, id.b, 16);
            util_buf_put_str(&b, "", 0);
            util_buf_put_blob(&b, "", 0);
            util_buf_put_u32(&b, 0);
            s_typed(fd, NET_NODE_HELLO, b.data, b.len);
            util_buf_free(&b);
        }
        for (int t = NET_NODE_HELLO; t <= NET_BLOCKED; t++) {
            for (int k = 0; k < 5; k++) {
                uint8_t body[300];
                size_t n = s_rand() % sizeof body;
                for (size_t j = 0; j < n; j++)
                    body[j] = (uint8_t) s_rand();
                if (n >= 4 && k < 3)
                    body[0] = (uint8_t) (k + 1), body[1] = body[2] = body[3] = 0; /* small counts */
                s_typed(fd, t, n ? body : NULL, n);
            }
        }
        usleep(100000);
        s_done(fd);
        ok(s_works(lx), "after well-framed garbage of every message type (%s a hello)",
           pass ? "after" : "without");
    }

    /* a hello naming the running driver's own client ID */
    fd = s_raw();
    {
        util_buf_t b;
        util_buf_init(&b);
        util_buf_put_u8(&b, 1);
        util_buf_put_u32(&b, (uint32_t) getpid());
        util_buf_put(&b, lx->id.b, 16);
        util_buf_put(&b, lx->job.b, 16);
        util_buf_put_str(&b, "", 0);
        util_buf_put_blob(&b, "", 0);
        util_buf_put_u32(&b, 0);
        s_typed(fd, NET_NODE_HELLO, b.data, b.len);
        /* and a goodbye for it */
        b.data[0] = 3;
        s_typed(fd, NET_NODE_HELLO, b.data, b.len);
        util_buf_free(&b);
    }
    usleep(100000);
    s_done(fd);
    ok(s_works(lx), "a hello and a goodbye claiming the driver's ID change nothing for it");

    /* a second, real driver still gets in */
    lux_config_t c2 = {.address = lux_dir(lx), .module = graph_module()};
    lux_t *lx2 = lux_init(&c2);
    ok(lx2 && s_works(lx2), "a new driver connects and works%s%s", lx2 ? "" : ": ",
       lx2 ? "" : lux_errmsg());
    lux_shutdown(&lx2);
    ok(s_works(lx), "and the first one still does");
    is_int(s_unread, 0, "the node read every connection to its end before the check after it");
    lux_shutdown(&lx);
    return done_testing();
}

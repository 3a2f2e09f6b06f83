/*  bulkfx - the harness of the bulk path's tests (bulkfx.h). */
#include "bulkfx.h"
#include "../tap.h"
#include "util/util_fp.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bulkfx_t bulkfx;

static int
s_serve(void *arg, uint64_t xid, const uint8_t id[LUX_REF_LEN], exec_bulk_key_t *key,
        const uint8_t **bytes, uint64_t *size)
{
    (void) arg;
    (void) id;
    for (int i = 0; i < BULKFX_N; i++)
        if (xid && bulkfx.key[i].xid == xid) {
            *key = bulkfx.key[i];
            if (bytes) {
                *bytes = bulkfx.src[i];
                *size = bulkfx.size;
                bulkfx.served++;
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
    bulkfx.got[(intptr_t) who] = got;
}

static void
s_ended(void *arg, void *who, int rc, bool fallback, const uint8_t *fp)
{
    (void) arg;
    (void) fallback;
    int i = (int) (intptr_t) who;
    if ((bulkfx.have_fp[i] = fp != NULL))
        memcpy(bulkfx.fp[i], fp, 16);
    bulkfx.ended[i]++;
    bulkfx.rc[i] = rc;
    snprintf(bulkfx.err[i], sizeof bulkfx.err[i], "%s", rc ? lux_errmsg() : "");
    if (rc)
        diag("pull %d: %s", i, bulkfx.err[i]);
}

const exec_bulk_fns_t bulkfx_fns = {s_serve, s_sent, s_over, s_moved, s_ended};

int
bulkfx_free_port(void)
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

void
bulkfx_reset(int i, bool ended)
{
    bulkfx.got[i] = 0;
    bulkfx.ended[i] = ended;
    bulkfx.rc[i] = 0;
    bulkfx.err[i][0] = 0;
    bulkfx.have_fp[i] = false;
    bulkfx.key[i].xid = 0;
}

exec_bulk_pull_t *
bulkfx_pull(exec_bulk_t *pul, int port, int i, int cipher, uint8_t *dst, uint32_t chunk,
            int window)
{
    uint8_t id[LUX_REF_LEN] = {1};
    bulkfx_reset(i, false);
    exec_bulk_key_new(&bulkfx.key[i], cipher);
    exec_bulk_pull_t *h = exec_bulk_pull_start(pul, "127.0.0.1", port, &bulkfx.key[i], id, dst,
                                               bulkfx.size, chunk, window, (void *) (intptr_t) i);
    if (!h)
        bail("pull %d: %s", i, lux_errmsg());
    return h;
}

static bool
s_done(unsigned mask, uint64_t min)
{
    for (int i = 0; i < BULKFX_N; i++)
        if (mask & (1u << i) && !bulkfx.ended[i] && (min == 0 || bulkfx.got[i] < min))
            return false;
    return true;
}

bool
bulkfx_pump(exec_bulk_t *a, exec_bulk_t *b, int ms, unsigned mask, uint64_t min)
{
    int64_t end = util_mono_ms() + ms;
    while (!s_done(mask, min) && util_mono_ms() < end) {
        struct pollfd p[2] = {{exec_bulk_fd(a), POLLIN, 0}, {exec_bulk_fd(b), POLLIN, 0}};
        poll(p, 2, 10);
        exec_bulk_fired(a);
        exec_bulk_fired(b);
        exec_bulk_tick(a);
        exec_bulk_tick(b);
    }
    return s_done(mask, min);
}

bool
bulkfx_pull_whole(exec_bulk_t *src, exec_bulk_t *pul, int port, uint8_t *dst, uint64_t size,
                  uint32_t chunk, int cipher)
{
    bulkfx.size = size;
    memset(dst, 0, size ? size : 1);
    exec_bulk_pull_t *h = bulkfx_pull(pul, port, 0, cipher, dst, chunk, 8);
    if (!bulkfx_pump(src, pul, 120000, 1u, 0)) {
        exec_bulk_pull_stop(pul, &h);
        diag("the pull did not end in 120 s");
        return false;
    }
    return bulkfx.rc[0] == 0 && memcmp(bulkfx.src[0], dst, size) == 0;
}

bool
bulkfx_fp_is(int i, const uint8_t *p, uint64_t n)
{
    uint8_t want[16];
    util_fp(want, p, n);
    return bulkfx.have_fp[i] && memcmp(want, bulkfx.fp[i], 16) == 0;
}

/* ---------------------------------------------------------------- the cluster */

static char s_joined[5][600]; /* the nodes bulkfx_join started, to stop at exit */

static void
s_stop_nodes(void)
{
    for (int i = 1; i < 5; i++)
        if (s_joined[i][0])
            fx_lux(NULL, 0, NULL, 0, "stop --dir %s", s_joined[i]);
}

void
bulkfx_join(bulkfx_cl_t *cl, int i, int store_mb, const char *what)
{
    static bool armed;
    char err[4096];
    if (!armed)
        tap_atexit(s_stop_nodes);
    armed = true;
    snprintf(cl->dir[0], sizeof cl->dir[0], "%s", cl->c.dir);
    snprintf(cl->dir[i], sizeof cl->dir[i], "%s/n%d", tap_tmpdir(), i);
    snprintf(s_joined[i], sizeof s_joined[i], "%s", cl->dir[i]);
    int rc = fx_lux(NULL, 0, err, sizeof err,
                    "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                    "--node-ip 127.0.0.%d --workers 1 --store-mb %d",
                    cl->port, cl->dir[i], cl->c.dir, i + 1, store_mb);
    if (!is_int(rc, 0, "node %c joins on 127.0.0.%d%s", 'A' + i - 1, i + 1, what))
        bail("%s", err);
}

int
bulkfx_get(const bulkfx_cl_t *cl, lux_t *lx, int k, bool *same)
{
    lux_val_t v;
    int rc = lux_get(lx, &cl->ref[k], &v, 120000);
    if (rc)
        diag("get of object %d: %s", k, lux_errmsg());
    *same = rc == 0 && xfx_same(&cl->obj[k], v.data, v.size);
    return rc;
}

int
bulkfx_log(const bulkfx_cl_t *cl, int i, const char *a, const char *b)
{
    return xfx_log_lines(cl->dir[i], i == 0, a, b);
}

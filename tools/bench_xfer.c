/*  bench_xfer - objects between nodes (issue 28): object_transfer_gigabytes,
    one object (1 GiB; 64 MiB with --quick) of noise put on node A
    (127.0.0.2) and read with lux_get by a driver on node B (127.0.0.3),
    from the get to its answer, pull, check and copy event included (the
    head's LUX_NODE_DEAD_MS raised to 60 s unless set); and
    tcp_stream_gigabytes, the same bytes over one plain TCP connection
    from 127.0.0.2 to 127.0.0.3 in the same run, as the yardstick (issue
    28: the transfer should reach 0.8 of it). Three runs of each,
    alternating, medians reported, and the first pull's figure besides
    ("first_run_gigabytes": a user's first pull is that one, into store
    pages the nodes have not touched yet); the resident memory of both node
    daemons after the runs (RssAnon: a buffer of the whole object would
    show there) in the row's extra fields. The row says which cipher the
    pulls used ("cipher", from B's log).

    Then the same again with a second pair of nodes that both allow the
    bulk path's integrity-only mode (LUX_BULK_CIPHER=gmac, doc/DESIGN.md
    7.3 and 10): object_transfer_gmac_gigabytes, its own row, whose
    "of_tcp_stream" is against the streams of its own runs; the default
    row repeats it as "integrity_only_gigabytes" and
    "integrity_only_of_tcp_stream", so that one row says what each mode
    reaches.
*/
#include "lux_bench.h"
#include "lux_node.h"
#include "lux.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_RUNS 3

static void
s_fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ seed;
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(p + i, &x, n - i < 8 ? n - i : 8);
    }
}

/* Node A's driver: per run, put n bytes, send the ref, wait for a byte. */
static void
s_putter(const char *dir, size_t n, int out, int in)
{
    lux_config_t cfg = {.address = dir};
    lux_t *lx = lux_init(&cfg);
    uint8_t *buf = malloc(n);
    if (!lx || !buf)
        _exit(2);
    lux_ref_t prev;
    for (int r = 0; r < S_RUNS; r++) {
        lux_ref_t ref;
        s_fill(buf, n, (uint64_t) r);
        if (r) { /* first: or the store spills the last one to make room */
            lux_free(lx, 1, &prev);
            lux_wait(lx, 0, NULL, 0, 0, NULL); /* sends the free */
        }
        if (lux_put(lx, buf, n, &ref))
            _exit(3);
        prev = ref;
        char c;
        if (write(out, ref.b, sizeof ref.b) != (ssize_t) sizeof ref.b || read(in, &c, 1) != 1)
            _exit(4);
    }
    lux_shutdown(&lx);
    _exit(0);
}

typedef struct {
    int fd;
    size_t n, got;
} s_rx_t;

static void *
s_receive(void *arg)
{
    s_rx_t *rx = arg;
    int c = accept(rx->fd, NULL, NULL);
    size_t cap = 4 << 20;
    uint8_t *buf = malloc(cap);
    while (c >= 0 && buf && rx->got < rx->n) {
        ssize_t k = read(c, buf, cap);
        if (k <= 0)
            break;
        rx->got += (size_t) k;
    }
    free(buf);
    if (c >= 0)
        close(c);
    return NULL;
}

/* Seconds to stream n bytes of buf from 127.0.0.2 to 127.0.0.3; < 0 on
   failure. */
static double
s_stream(const uint8_t *buf, size_t n)
{
    struct sockaddr_in to = {.sin_family = AF_INET}, from = {.sin_family = AF_INET};
    socklen_t len = sizeof to;
    inet_pton(AF_INET, "127.0.0.3", &to.sin_addr);
    inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
    s_rx_t rx = {.fd = socket(AF_INET, SOCK_STREAM, 0), .n = n};
    int s = socket(AF_INET, SOCK_STREAM, 0);
    pthread_t th;
    if (rx.fd < 0 || s < 0 || bind(rx.fd, (struct sockaddr *) &to, sizeof to) ||
        listen(rx.fd, 1) || getsockname(rx.fd, (struct sockaddr *) &to, &len) ||
        bind(s, (struct sockaddr *) &from, sizeof from) ||
        pthread_create(&th, NULL, s_receive, &rx)) {
        util_err(LUX_EIO, "tcp stream: %s", strerror(errno));
        return -1;
    }
    int64_t t0 = util_mono_ns();
    bool okay = connect(s, (struct sockaddr *) &to, sizeof to) == 0;
    for (size_t off = 0; okay && off < n;) {
        size_t k = n - off < (1u << 20) ? n - off : (1u << 20);
        ssize_t w = write(s, buf + off, k);
        okay = w > 0;
        off += w > 0 ? (size_t) w : 0;
    }
    close(s);
    pthread_join(th, NULL);
    double secs = (double) (util_mono_ns() - t0) / 1e9;
    close(rx.fd);
    return okay && rx.got == n ? secs : -1;
}

/* "RssAnon" of pid's status, in MiB (-1: unknown). */
static double
s_status_mb(pid_t pid, const char *key)
{
    char path[64], *text, *p;
    snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
    double v = -1;
    if ((text = util_read_file(path, NULL)) && (p = strstr(text, key)))
        v = strtod(p + strlen(key) + 1, NULL) / 1024.0;
    free(text);
    return v;
}

/* What one pair of nodes measured: each run's pull and stream seconds,
   the daemons' memory after them, the cipher B's log says it pulled with. */
typedef struct {
    double xfer[S_RUNS], tcp[S_RUNS];
    double rss[2][3]; /* A, B: RssAnon, RssShmem, VmHWM in MiB */
    char cipher[32];
} s_phase_t;

/* The cipher of the last "over the bulk path (NAME)" in the node log of
   dir into out ("curve" when none). */
static void
s_cipher_said(const char *dir, char *out, size_t n)
{
    char path[PATH_MAX + 32], *text, *p, *last = NULL;
    static const char said[] = "over the bulk path (";
    snprintf(path, sizeof path, "%s/log/node.log", dir);
    snprintf(out, n, "curve");
    if (!(text = util_read_file(path, NULL)))
        return;
    for (p = text; (p = strstr(p, said)); p += sizeof said - 1)
        last = p + sizeof said - 1;
    if (last)
        snprintf(out, n, "%.*s", (int) strcspn(last, ")\n"), last);
    free(text);
}

/* With LUX_STORE_WARM=1 (the nodes warm their stores, exec_arena.h):
   wait until the log of each node in dirs says its store is warm, up to
   10 minutes; the seconds waited, or -1 when it never said so. */
static double
s_wait_warm(char dirs[][PATH_MAX + 32], int n)
{
    int64_t t0 = util_mono_ns();
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 64], *text = NULL;
        snprintf(path, sizeof path, "%s/log/node.log", dirs[i]);
        while (!(text = util_read_file(path, NULL)) || !strstr(text, "store warm")) {
            free(text);
            text = NULL;
            if (util_mono_ns() - t0 > (int64_t) 600 * 1000000000)
                return -1;
            usleep(100000);
        }
        free(text);
    }
    return (double) (util_mono_ns() - t0) / 1e9;
}

/* Nodes A and B joined to the head c (LUX_BULK_CIPHER=cipher_env in their
   environment when not NULL), S_RUNS pulls of n bytes each followed by
   the stream of the same bytes, then the nodes stopped and removed. */
static int
s_phase(bench_ctx_t *ctx, db_cluster_t *c, size_t n, const char *cipher_env, s_phase_t *ph)
{
    char token[PATH_MAX + 32], address[64], ndir[2][PATH_MAX + 32], ip[32], path[PATH_MAX + 64];
    int rc = 0, joined = 0;
    pid_t pa = -1, npid[2] = {0, 0};
    int to_a[2] = {-1, -1}, from_a[2] = {-1, -1};
    uint8_t *buf = NULL;
    lux_t *lx = NULL;
    lux_token_path(c, token, sizeof token);
    snprintf(address, sizeof address, "127.0.0.1:%d", c->master_port);
    if (cipher_env)
        setenv("LUX_BULK_CIPHER", cipher_env, 1);
    else
        unsetenv("LUX_BULK_CIPHER");
    for (int i = 0; i < 2 && !rc; i++, joined++) {
        snprintf(ndir[i], sizeof ndir[i], "%s-n%d%s", c->dir, i, cipher_env ? cipher_env : "");
        snprintf(ip, sizeof ip, "127.0.0.%d", 2 + i);
        lux_join_args_t ja = {.address = address, .dir = ndir[i], .token_file = token,
                              .node_ip = ip, .workers = 1,
                              .store_mb = (int) (n >> 20) + 128, .resources = "CPU=1",
                              .timeout_ms = 60000, .quiet = true};
        rc = lux_node_start(&ja);
        snprintf(path, sizeof path, "%s/run/node.pid", ndir[i]);
        npid[i] = util_pidfile_read(path);
    }
    unsetenv("LUX_BULK_CIPHER");
    const char *warm = getenv("LUX_STORE_WARM");
    if (!rc && warm && *warm == '1') {
        double w = s_wait_warm(ndir, 2);
        fprintf(stderr, "lux bench: the nodes' stores warm %s %.1f s after they joined\n",
                w < 0 ? "not said within" : "in", w < 0 ? 600.0 : w);
    }
    if (!rc && (pipe(to_a) || pipe(from_a)))
        rc = util_err(LUX_EIO, "pipe: %s", strerror(errno));
    if (!rc && (pa = fork()) == 0) {
        close(to_a[1]);
        close(from_a[0]);
        s_putter(ndir[0], n, from_a[1], to_a[0]);
    }
    lux_config_t cfg = {.address = ndir[1]};
    if (!rc && !(lx = lux_init(&cfg)))
        rc = LUX_EIO;
    if (!rc && !(buf = malloc(n)))
        rc = util_err(LUX_ENOMEM, "out of memory for %zu bytes", n);
    for (int r = 0; r < S_RUNS && !rc; r++) {
        lux_ref_t ref;
        lux_val_t v;
        if (read(from_a[0], ref.b, sizeof ref.b) != (ssize_t) sizeof ref.b) {
            rc = util_err(LUX_EIO, "node A's driver did not put its object");
            break;
        }
        int64_t t0 = util_mono_ns();
        if ((rc = lux_get(lx, &ref, &v, 600000)))
            break;
        ph->xfer[r] = (double) (util_mono_ns() - t0) / 1e9;
        if (v.size != n) {
            rc = util_err(LUX_ECORRUPT, "got %zu bytes of %zu", v.size, n);
            break;
        }
        lux_free(lx, 1, &ref);
        s_fill(buf, n, (uint64_t) r); /* the same bytes, over plain tcp */
        if ((ph->tcp[r] = s_stream(buf, n)) < 0) {
            rc = LUX_EIO;
            break;
        }
        if (write(to_a[1], "n", 1) != 1)
            rc = util_err(LUX_EIO, "node A's driver is gone");
    }
    for (int i = 0; i < 2; i++) {
        ph->rss[i][0] = npid[i] > 0 ? s_status_mb(npid[i], "RssAnon:") : -1;
        ph->rss[i][1] = npid[i] > 0 ? s_status_mb(npid[i], "RssShmem:") : -1;
        ph->rss[i][2] = npid[i] > 0 ? s_status_mb(npid[i], "VmHWM:") : -1;
    }
    if (joined == 2)
        s_cipher_said(ndir[1], ph->cipher, sizeof ph->cipher);
    free(buf);
    lux_shutdown(&lx);
    if (to_a[1] >= 0)
        close(to_a[1]);
    if (from_a[0] >= 0)
        close(from_a[0]);
    if (pa > 0) {
        kill(pa, SIGTERM);
        waitpid(pa, NULL, 0);
    }
    for (int i = 0; i < joined && rc; i++) { /* what the nodes said, to see why */
        char tail[PATH_MAX + 64];
        fprintf(stderr, "lux bench: %s (node %c's log ends:)\n", lux_errmsg(), 'A' + i);
        snprintf(tail, sizeof tail, "tail -5 '%s/log/node.log' >&2", ndir[i]);
        if (system(tail) != 0)
            fprintf(stderr, "lux bench: no log in %s\n", ndir[i]);
    }
    const char *prof = getenv("LUX_XFER_PROFILE");
    for (int i = 0; i < joined && prof && *prof == '1'; i++) { /* where the time went */
        char lines[PATH_MAX + 128];
        snprintf(lines, sizeof lines, "grep -h -e 'bulk profile' -e 'pulled object' "
                 "'%s/log/node.log' >&2", ndir[i]);
        if (system(lines) != 0)
            fprintf(stderr, "lux bench: no profile lines in %s\n", ndir[i]);
    }
    for (int i = 0; i < joined; i++) {
        if (lux_node_stop(ndir[i], 30000))
            fprintf(stderr, "lux bench: %s\n", lux_errmsg());
        snprintf(path, sizeof path, "rm -rf '%s'", ndir[i]);
        if (system(path) != 0)
            fprintf(stderr, "lux bench: could not remove %s\n", ndir[i]);
    }
    (void) ctx;
    return rc;
}

/* The medians of a phase: pull and stream GB/s. */
static void
s_medians(const s_phase_t *ph, size_t n, double *mx, double *mt)
{
    double gx[S_RUNS], gt[S_RUNS];
    for (int r = 0; r < S_RUNS; r++)
        gx[r] = (double) n / ph->xfer[r] / 1e9, gt[r] = (double) n / ph->tcp[r] / 1e9;
    *mx = bench_median(gx, S_RUNS);
    *mt = bench_median(gt, S_RUNS);
}

static int
s_transfer(bench_ctx_t *ctx, const char *name)
{
    (void) name;
    db_cluster_t c;
    size_t n = ctx->scale < 1 ? (size_t) 64 << 20 : (size_t) 1 << 30;
    int rc = bench_own_cluster(ctx, "it starts a head and two nodes of its own");
    /* a slow heartbeat is not what this measures: on a loaded machine a
       transfer that takes the cores for a minute made the head declare a
       node dead (no beat answered for 5 s), so its head waits longer */
    if (!getenv("LUX_NODE_DEAD_MS"))
        setenv("LUX_NODE_DEAD_MS", "60000", 1);
    if (rc || (rc = bench_tcp_head(ctx, &c)))
        return rc;
    /* the default (sealed) pair, then a pair that both allow integrity
       only (LUX_BULK_CIPHER=gmac), each against its own streams */
    s_phase_t ph[2] = {{.cipher = ""}, {.cipher = ""}};
    rc = s_phase(ctx, &c, n, NULL, &ph[0]);
    if (!rc)
        rc = s_phase(ctx, &c, n, "gmac", &ph[1]);
    if (!rc) {
        double mx, mt, gx, gt;
        s_medians(&ph[0], n, &mx, &mt);
        s_medians(&ph[1], n, &gx, &gt);
        bench_report(ctx, "object_transfer_gigabytes", mx, "GB/s",
                     ", \"bytes\": %zu, \"runs\": %d, \"cipher\": \"%s\", \"of_tcp_stream\": %.2f, "
                     "\"first_run_gigabytes\": %.6g, "
                     "\"integrity_only_gigabytes\": %.6g, \"integrity_only_of_tcp_stream\": %.2f, "
                     "\"integrity_only_first_run_gigabytes\": %.6g, "
                     "\"node_a_rss_anon_mb\": %.0f, \"node_a_rss_shmem_mb\": %.0f, "
                     "\"node_a_hwm_mb\": %.0f, \"node_b_rss_anon_mb\": %.0f, "
                     "\"node_b_rss_shmem_mb\": %.0f, \"node_b_hwm_mb\": %.0f",
                     n, S_RUNS, ph[0].cipher, mx / mt, (double) n / ph[0].xfer[0] / 1e9, gx,
                     gx / gt, (double) n / ph[1].xfer[0] / 1e9, ph[0].rss[0][0],
                     ph[0].rss[0][1], ph[0].rss[0][2], ph[0].rss[1][0], ph[0].rss[1][1],
                     ph[0].rss[1][2]);
        bench_report(ctx, "tcp_stream_gigabytes", mt, "GB/s",
                     ", \"bytes\": %zu, \"runs\": %d, \"from\": \"127.0.0.2\", "
                     "\"to\": \"127.0.0.3\"",
                     n, S_RUNS);
        bench_report(ctx, "object_transfer_gmac_gigabytes", gx, "GB/s",
                     ", \"bytes\": %zu, \"runs\": %d, \"cipher\": \"%s\", \"of_tcp_stream\": %.2f, "
                     "\"first_run_gigabytes\": %.6g, "
                     "\"tcp_stream_gigabytes\": %.6g, \"node_a_rss_anon_mb\": %.0f, "
                     "\"node_b_rss_anon_mb\": %.0f",
                     n, S_RUNS, ph[1].cipher, gx / gt, (double) n / ph[1].xfer[0] / 1e9, gt,
                     ph[1].rss[0][0], ph[1].rss[1][0]);
    }
    bench_cluster_stop(ctx, &c);
    return rc;
}

const bench_t bench_xfer[] = {
    {"object_transfer_gigabytes", s_transfer,
     "one object (1 GiB) put on node A, lux_get on node B (loopback), GB/s"},
    {"tcp_stream_gigabytes", s_transfer,
     "the same bytes over one plain TCP connection A to B, same run, GB/s"},
    {"object_transfer_gmac_gigabytes", s_transfer,
     "the same pull between two nodes that allow integrity only (LUX_BULK_CIPHER=gmac), GB/s"},
};
const int bench_xfer_n = sizeof bench_xfer / sizeof bench_xfer[0];

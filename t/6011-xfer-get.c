/* 6011-xfer-get: objects between nodes (exec_xfer.c). A head on
   127.0.0.1 and two nodes: A (127.0.0.2) puts objects, a driver on B
   (127.0.0.3) reads them with lux_get, byte for byte: a small one (inline),
   40 MiB of noise, 24 MiB that lz4 shrinks. The object_locations view
   then has A's put and B's copy. Two drivers on B asking at once for the
   same object make one transfer. A ref no node holds is LUX_ENOTFOUND.
   A's node daemon killed (kill -9 by its pid) in the middle of a
   transfer: B's lux_get ends with an error that names A, within B's
   LUX_XFER_TIMEOUT_MS, not a hang. B pulls in small chunks, one or two in
   flight, so that transfers last long enough to be caught in the middle. */
#include "tap.h"
#include "lib/fx.h"
#include "lux.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_hash.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1u << 20)

enum { O_SMALL, O_NOISE, O_TEXT, O_TWICE, O_KILL, O_N };
static const size_t s_size[O_N] = {1000, 40 * MIB, 24 * MIB, 32 * MIB, 128 * MIB};

/* The bytes of object k: noise (xorshift) or text, the same every time. */
static void
s_fill(int k, uint8_t *p, size_t n)
{
    if (k == O_TEXT) {
        static const char line[] = "the quick brown fox jumps over the lazy dog %08zu\n";
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t) line[(i + i / 4096) % (sizeof line - 1)];
        return;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t) (k + 1);
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(p + i, &x, n - i < 8 ? n - i : 8);
    }
}

static char s_node[3][600]; /* the directories of the head, A and B */
static char s_hex[O_N][2 * LUX_REF_LEN + 1];

/* Node A's driver: put the objects, write their refs to fd, wait for a
   byte on in, then leave (its puts go with it). */
static void
s_driver_a(int out, int in)
{
    lux_config_t cfg = {.address = s_node[1]};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        _exit(2);
    for (int k = 0; k < O_N; k++) {
        uint8_t *p = malloc(s_size[k]);
        lux_ref_t ref;
        s_fill(k, p, s_size[k]);
        if (lux_put(lx, p, s_size[k], &ref))
            _exit(3);
        free(p);
        if (write(out, ref.b, sizeof ref.b) != (ssize_t) sizeof ref.b)
            _exit(4);
    }
    char c;
    if (read(in, &c, 1) < 0)
        _exit(5);
    lux_shutdown(&lx);
    _exit(0);
}

/* A driver on B: get ref; write rc and lux_errmsg() to out. */
static void
s_driver_b(const lux_ref_t *ref, int out)
{
    lux_config_t cfg = {.address = s_node[2]};
    lux_t *lx = lux_init(&cfg);
    char msg[1024] = "";
    int rc = lx ? 0 : LUX_EIO;
    lux_val_t v;
    if (lx && (rc = lux_get(lx, ref, &v, 120000)))
        snprintf(msg, sizeof msg, "%s", lux_errmsg());
    if (write(out, &rc, sizeof rc) < 0 || write(out, msg, strlen(msg) + 1) < 0)
        _exit(4);
    lux_shutdown(&lx);
    _exit(0);
}

static pid_t
s_spawn_b(const lux_ref_t *ref, int *fd)
{
    int p[2];
    if (pipe(p))
        bail("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        s_driver_b(ref, p[1]);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

static int
s_read_b(int fd, pid_t pid, char *msg, size_t n)
{
    int rc = LUX_EIO;
    ssize_t k = read(fd, &rc, sizeof rc), m = k > 0 ? read(fd, msg, n - 1) : 0;
    msg[m > 0 ? m : 0] = '\0';
    close(fd);
    waitpid(pid, NULL, 0);
    return k == sizeof rc ? rc : LUX_EIO;
}

/* Wait until the log has what the SQL counts reach want (30 s). */
static int64_t
s_wait_count(const char *dir, int64_t want, const char *sql)
{
    int64_t n = -1, end = util_mono_ms() + 60000;
    while (util_mono_ms() < end) {
        db_query_t *q = fx_query_open(dir);
        n = fx_count(q, "%s", sql);
        db_query_close(&q);
        if (n >= want)
            break;
        usleep(100000);
    }
    return n;
}

/* How many lines of node B's log hold both a and b. */
static int
s_log_lines(const char *a, const char *b)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log/node.log", s_node[2]);
    char *text = util_read_file(path, NULL);
    int n = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
        n += strstr(line, a) && strstr(line, b);
    free(text);
    return n;
}

int
main(void)
{
    db_cluster_t c;
    char extra[160], err[4096], sql[512];
    int port = 20000 + (int) (getpid() % 2000) * 7 + 1;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    fx_start(&c, 1, 1, extra);
    snprintf(s_node[0], sizeof s_node[0], "%s", c.dir);
    for (int i = 1; i <= 2; i++) {
        snprintf(s_node[i], sizeof s_node[i], "%s/n%d", tap_tmpdir(), i);
        if (i == 2) { /* B pulls slowly: transfers can be caught in the middle */
            setenv("LUX_XFER_CHUNK", "16384", 1);
            setenv("LUX_XFER_WINDOW", "2", 1);
            setenv("LUX_XFER_TIMEOUT_MS", "3000", 1);
        }
        int rc = fx_lux(NULL, 0, err, sizeof err,
                        "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                        "--node-ip 127.0.0.%d --workers 1 --store-mb 256",
                        port, s_node[i], c.dir, i + 1);
        if (!is_int(rc, 0, "node %c joins on 127.0.0.%d", 'A' + i - 1, i + 1))
            bail("%s", err);
    }
    unsetenv("LUX_XFER_CHUNK");
    unsetenv("LUX_XFER_WINDOW");
    unsetenv("LUX_XFER_TIMEOUT_MS");
    char a_node[64] = "", path[700];
    snprintf(path, sizeof path, "%s/run/node.joined", s_node[1]);
    char *id = util_read_file(path, NULL);
    snprintf(a_node, sizeof a_node, "%s", id ? id : "");
    free(id);

    /* A puts */
    int to_a[2], from_a[2];
    if (pipe(to_a) || pipe(from_a))
        bail("pipe");
    pid_t pa = fork();
    if (pa == 0) {
        close(to_a[1]);
        close(from_a[0]);
        s_driver_a(from_a[1], to_a[0]);
    }
    close(to_a[0]);
    close(from_a[1]);
    lux_ref_t refs[O_N];
    for (int k = 0; k < O_N; k++) {
        if (read(from_a[0], refs[k].b, sizeof refs[k].b) != (ssize_t) sizeof refs[k].b)
            bail("node A's driver did not put its objects");
        util_hex(s_hex[k], refs[k].b, LUX_REF_LEN);
    }
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM object_locations WHERE node_id = '%s' AND how = 'put'", a_node);
    is_int(s_wait_count(c.dir, O_N, sql), O_N, "object_locations: A holds its %d puts", O_N);

    /* B reads them */
    lux_config_t cfg = {.address = s_node[2]};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("a driver on B: %s", lux_errmsg());
    for (int k = O_SMALL; k <= O_TEXT; k++) {
        lux_val_t v;
        int rc = lux_get(lx, &refs[k], &v, 120000);
        if (!is_int(rc, 0, "B gets A's object of %zu bytes", s_size[k]))
            diag("%s", lux_errmsg());
        uint8_t *want = malloc(s_size[k]);
        s_fill(k, want, s_size[k]);
        ok(rc == 0 && v.size == s_size[k] && memcmp(v.data, want, s_size[k]) == 0,
           "byte for byte");
        free(want);
    }
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM object_locations l JOIN nodes n USING (node_id) WHERE "
             "l.object_id = '%s' AND ((l.how = 'put' AND n.address = '127.0.0.2') OR "
             "(l.how = 'copy' AND n.address = '127.0.0.3' AND l.fp IS NOT NULL))",
             s_hex[O_NOISE]);
    is_int(s_wait_count(c.dir, 2, sql), 2,
           "object_locations: the 40 MiB object on A (put) and on B (copy)");
    is_int(s_log_lines("pulled object", s_hex[O_TEXT]), 1, "B pulled the text object once");
    lux_val_t v;
    is_int(lux_get(lx, &refs[O_TEXT], &v, 60000), 0, "a second get on B...");
    is_int(s_log_lines("pulled object", s_hex[O_TEXT]), 1, "...is served from B's own copy");

    /* two drivers at once: one transfer */
    int f1, f2;
    char m1[1024], m2[1024];
    pid_t b1 = s_spawn_b(&refs[O_TWICE], &f1), b2 = s_spawn_b(&refs[O_TWICE], &f2);
    is_int(s_read_b(f1, b1, m1, sizeof m1), 0, "two drivers on B get one object at once: the first");
    is_int(s_read_b(f2, b2, m2, sizeof m2), 0, "and the second");
    is_int(s_log_lines("pulling object", s_hex[O_TWICE]), 1, "in one transfer");

    /* a ref nobody made */
    lux_ref_t none;
    memset(none.b, 0x5a, sizeof none.b);
    int rc = lux_get(lx, &none, &v, 60000);
    is_int(rc, LUX_ENOTFOUND, "a ref no node holds: LUX_ENOTFOUND");
    ok(strstr(lux_errmsg(), "no live node holds it"), "which says so: %s", lux_errmsg());

    /* A dies in the middle of a transfer */
    int fk;
    pid_t bk = s_spawn_b(&refs[O_KILL], &fk);
    int64_t end = util_mono_ms() + 60000;
    while (util_mono_ms() < end && s_log_lines("pulling object", s_hex[O_KILL]) == 0)
        usleep(20000);
    pid_t a_pid = util_pidfile_read(strcat(strcpy(path, s_node[1]), "/run/node.pid"));
    ok(a_pid > 0 && s_log_lines("pulling object", s_hex[O_KILL]) == 1,
       "B is pulling the 128 MiB object from A (pid %d)", (int) a_pid);
    ok(a_pid > 0 && kill(a_pid, SIGSTOP) == 0, "A stopped in the middle");
    ok(s_log_lines("pulled object", s_hex[O_KILL]) == 0, "before the transfer ended");
    ok(kill(a_pid, SIGKILL) == 0, "A killed (kill -9 %d)", (int) a_pid);
    int64_t t0 = util_mono_ms();
    char mk[1024];
    rc = s_read_b(fk, bk, mk, sizeof mk);
    ok(rc != 0 && rc != LUX_ETIMEDOUT, "B's get ends with an error, not a hang (%d, after %lld ms)",
       rc, (long long) (util_mono_ms() - t0));
    ok(strstr(mk, s_hex[O_KILL]) && strstr(mk, "127.0.0.2"),
       "which names the object and node A: %s", mk);
    is_int(lux_get(lx, &refs[O_SMALL], &v, 60000), 0, "B still serves its copies");

    lux_shutdown(&lx);
    if (write(to_a[1], "x", 1) < 0)
        diag("node A's driver is gone already");
    waitpid(pa, NULL, 0);
    fx_lux(NULL, 0, err, sizeof err, "stop --dir %s", s_node[2]);
    fx_lux(NULL, 0, err, sizeof err, "stop --dir %s", s_node[1]);
    fx_stop(&c);
    done_testing();
}

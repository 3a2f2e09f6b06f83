/* 6030-xfer-bulk: the bulk data path of objects between nodes
   (exec_bulk.c, doc/DESIGN.md 7.3). A head on 127.0.0.1 and two nodes:
   A (127.0.0.2) puts objects, a driver on B (127.0.0.3) gets them.
   - B pulls over A's bulk port (AEAD-sealed chunks on plain TCP), byte
     for byte, noise and text (lz4), and the copy's fingerprint in the log
     is the put's;
   - B's first request carries a wrong key (LUX_TEST_BULK_BADKEY): A
     refuses it, naming B, and B falls back to A's CURVE endpoint;
   - garbage, a bulk hello naming no transfer, and a burst of connections
     on A's bulk port: A complains (rate-limited, naming the peer), lives,
     and serves the next pull in bulk;
   - a byte of a chunk flipped at A after sealing (LUX_TEST_BULK_FLIP, one
     time): B's pull fails naming the object and "authentication"; the
     next get of it is whole;
   - the head's bulk port refuses connections (LUX_TEST_BULK_REFUSE, as a
     firewall would): B pulls over CURVE, says so once for that node;
   - A killed (kill -9 by its pid) in the middle of a bulk pull: B's get
     ends with an error naming the object and A, not a hang. */
#include "tap.h"
#include "lib/fx.h"
#include "lux.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_hash.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1u << 20)

enum { O_NOISE, O_TEXT, O_BADKEY, O_GARB, O_FLIP, O_KILL, O_HEAD1, O_HEAD2, O_N };
static const size_t s_size[O_N] = {8 * MIB, 8 * MIB, 4 * MIB, 4 * MIB,
                                   4 * MIB, 48 * MIB, 2 * MIB, 2 * MIB};

static void
s_fill(int k, uint8_t *p, size_t n)
{
    if (k == O_TEXT) {
        static const char line[] = "the quick brown fox jumps over the lazy dog %08zu\n";
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t) line[(i + i / 4096) % (sizeof line - 1)];
        return;
    }
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t) (k + 7);
    for (size_t i = 0; i < n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(p + i, &x, n - i < 8 ? n - i : 8);
    }
}

static char s_node[3][600]; /* the directories of the head, A and B */
static char s_hex[O_N][2 * LUX_REF_LEN + 1];

/* A driver on dir: put objects from..to, write their refs to out, wait
   for a byte on in, then leave. */
static void
s_driver_put(const char *dir, int from, int to, int out, int in)
{
    lux_config_t cfg = {.address = dir};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        _exit(2);
    for (int k = from; k <= to; k++) {
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

/* Start a putting driver; its refs into refs[from..to]; the pipe that
   lets it go into *release. */
static pid_t
s_put(const char *dir, int from, int to, lux_ref_t *refs, int *release)
{
    int to_d[2], from_d[2];
    if (pipe(to_d) || pipe(from_d))
        bail("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(to_d[1]);
        close(from_d[0]);
        s_driver_put(dir, from, to, from_d[1], to_d[0]);
    }
    close(to_d[0]);
    close(from_d[1]);
    for (int k = from; k <= to; k++) {
        if (read(from_d[0], refs[k].b, sizeof refs[k].b) != (ssize_t) sizeof refs[k].b)
            bail("the driver on %s did not put its objects", dir);
        util_hex(s_hex[k], refs[k].b, LUX_REF_LEN);
    }
    close(from_d[0]);
    *release = to_d[1];
    return pid;
}

/* A driver on B: get ref; rc and lux_errmsg() to out. */
static pid_t
s_spawn_get(const lux_ref_t *ref, int *fd)
{
    int p[2];
    if (pipe(p))
        bail("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        lux_config_t cfg = {.address = s_node[2]};
        lux_t *lx = lux_init(&cfg);
        char msg[1024] = "";
        int rc = lx ? 0 : LUX_EIO;
        lux_val_t v;
        if (lx && (rc = lux_get(lx, ref, &v, 120000)))
            snprintf(msg, sizeof msg, "%s", lux_errmsg());
        if (write(p[1], &rc, sizeof rc) < 0 || write(p[1], msg, strlen(msg) + 1) < 0)
            _exit(4);
        lux_shutdown(&lx);
        _exit(0);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

static int
s_read_get(int fd, pid_t pid, char *msg, size_t n)
{
    int rc = LUX_EIO;
    ssize_t k = read(fd, &rc, sizeof rc), m = k > 0 ? read(fd, msg, n - 1) : 0;
    msg[m > 0 ? m : 0] = '\0';
    close(fd);
    waitpid(pid, NULL, 0);
    return k == sizeof rc ? rc : LUX_EIO;
}

/* How many lines of node i's log hold a and b (b may be NULL). */
static int
s_log_lines(int i, const char *a, const char *b)
{
    char path[700];
    snprintf(path, sizeof path, "%s/log/%s.log", s_node[i], i ? "node" : "supervisor");
    char *text = util_read_file(path, NULL);
    int n = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n"))
        n += strstr(line, a) && (!b || strstr(line, b));
    free(text);
    return n;
}

/* Wait (60 s at most) until node i's log has a line with a and b. */
static bool
s_log_wait(int i, const char *a, const char *b)
{
    int64_t end = util_mono_ms() + 60000;
    while (util_mono_ms() < end && s_log_lines(i, a, b) == 0)
        usleep(20000);
    return s_log_lines(i, a, b) > 0;
}

/* B gets object k with lx: rc; *same when its bytes are the object's. */
static int
s_get(lux_t *lx, const lux_ref_t *refs, int k, bool *same)
{
    lux_val_t v;
    int rc = lux_get(lx, &refs[k], &v, 120000);
    *same = false;
    if (rc)
        diag("get of object %d: %s", k, lux_errmsg());
    if (rc == 0 && v.size == s_size[k]) {
        uint8_t *want = malloc(s_size[k]);
        s_fill(k, want, s_size[k]);
        *same = memcmp(v.data, want, s_size[k]) == 0;
        free(want);
    }
    return rc;
}

/* Open a connection to A's bulk port: the descriptor, or -1. */
static int
s_dial(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
    inet_pton(AF_INET, "127.0.0.2", &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void
s_stop_nodes(void)
{
    for (int i = 1; i <= 2; i++)
        if (s_node[i][0])
            fx_lux(NULL, 0, NULL, 0, "stop --dir %s", s_node[i]);
}

int
main(void)
{
    db_cluster_t c;
    char extra[160], err[4096], sql[700], flip[700], badkey[700], msg[1024];
    int port = 24000 + (int) (getpid() % 1400) * 7 + 1, bulk_port = port + 4;
    bool same;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    snprintf(flip, sizeof flip, "%s/flip", tap_tmpdir());
    snprintf(badkey, sizeof badkey, "%s/badkey", tap_tmpdir());
    setenv("LUX_TEST_BULK_REFUSE", "1", 1); /* the head's bulk port: as if a firewall shut it */
    fx_start(&c, 1, 1, extra);
    unsetenv("LUX_TEST_BULK_REFUSE");
    tap_atexit(s_stop_nodes);
    snprintf(s_node[0], sizeof s_node[0], "%s", c.dir);
    for (int i = 1; i <= 2; i++) {
        snprintf(s_node[i], sizeof s_node[i], "%s/n%d", tap_tmpdir(), i);
        if (i == 1) {
            setenv("LUX_TEST_BULK_FLIP", flip, 1);
        } else { /* B pulls in small chunks, two in flight: a pull lasts long enough to kill A */
            unsetenv("LUX_TEST_BULK_FLIP");
            setenv("LUX_TEST_BULK_BADKEY", badkey, 1);
            setenv("LUX_XFER_CHUNK", "16384", 1);
            setenv("LUX_XFER_WINDOW", "2", 1);
            setenv("LUX_XFER_TIMEOUT_MS", "5000", 1);
        }
        int rc = fx_lux(NULL, 0, err, sizeof err,
                        "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                        "--node-ip 127.0.0.%d --workers 1 --store-mb %d",
                        port, s_node[i], c.dir, i + 1, i == 1 ? 160 : 192);
        if (!is_int(rc, 0, "node %c joins on 127.0.0.%d", 'A' + i - 1, i + 1))
            bail("%s", err);
    }
    unsetenv("LUX_TEST_BULK_BADKEY");
    unsetenv("LUX_XFER_CHUNK");
    unsetenv("LUX_XFER_WINDOW");
    unsetenv("LUX_XFER_TIMEOUT_MS");
    ok(s_log_lines(1, "bulk port at 127.0.0.2:", NULL) == 1 && s_log_lines(0, "bulk port at "
       "127.0.0.1:", "not listening") == 1, "A's bulk port is on A's address (127.0.0.2), the "
       "head's on its own");

    lux_ref_t refs[O_N];
    int rel_a, rel_h;
    pid_t pa = s_put(s_node[1], O_NOISE, O_KILL, refs, &rel_a);
    pid_t ph = s_put(s_node[0], O_HEAD1, O_HEAD2, refs, &rel_h);
    lux_config_t cfg = {.address = s_node[2]};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("a driver on B: %s", lux_errmsg());

    /* a wrong key: refused, then CURVE */
    if (util_write_file(badkey, "x", 1, 0600))
        diag("cannot write %s", badkey);
    is_int(s_get(lx, refs, O_BADKEY, &same), 0, "B's pull with a wrong bulk key still ends well");
    ok(same, "byte for byte");
    ok(s_log_lines(1, "refused the connection from 127.0.0.3", "does not open with the key") == 1,
       "A refused B's request sealed with a wrong key, naming B");
    ok(s_log_lines(2, "bulk port was not used", "127.0.0.2") == 1 &&
       s_log_lines(2, s_hex[O_BADKEY], "over CURVE") == 1,
       "B said so and pulled it over A's CURVE endpoint");

    /* the bulk path */
    is_int(s_get(lx, refs, O_NOISE, &same), 0, "B gets A's 8 MiB of noise");
    ok(same, "byte for byte");
    ok(s_log_lines(2, s_hex[O_NOISE], "over the bulk path") == 1, "over the bulk path");
    is_int(s_get(lx, refs, O_TEXT, &same), 0, "B gets A's 8 MiB of text");
    ok(same, "byte for byte");
    ok(s_log_lines(2, s_hex[O_TEXT], "over the bulk path") == 1, "over the bulk path too");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM object_locations l JOIN nodes n USING (node_id) WHERE "
             "l.object_id = '%s' AND l.fp IS NOT NULL AND l.fp = (SELECT p.fp FROM "
             "object_locations p WHERE p.object_id = l.object_id AND p.how = 'put') AND "
             "((l.how = 'put' AND n.address = '127.0.0.2') OR (l.how = 'copy' AND n.address = "
             "'127.0.0.3'))", s_hex[O_NOISE]);
    int64_t n = -1, end = util_mono_ms() + 60000;
    while (util_mono_ms() < end && n < 2) {
        db_query_t *q = fx_query_open(c.dir);
        n = fx_count(q, "%s", sql);
        db_query_close(&q);
        if (n < 2)
            usleep(100000);
    }
    is_int(n, 2, "object_locations: B's copy has the fingerprint of A's put");

    /* garbage on A's bulk port */
    /* rounds of garbage until A complains of one (it says at most one
       line a second; the wrong key's may have been the last) */
    int nconn = 0, made = 0, said = 0;
    uint8_t junk[64];
    memcpy(junk, "LUXB\1\0\0\0", 8);
    for (int i = 8; i < (int) sizeof junk; i++)
        junk[i] = (uint8_t) (i * 37 + 11);
    int64_t until = util_mono_ms() + 60000;
    do {
        static const char http[] = "GET / HTTP/1.0\r\n\r\n";
        int fd = s_dial(bulk_port);
        made += fd >= 0 && write(fd, http, sizeof http - 1) > 0;
        if (fd >= 0)
            close(fd);
        fd = s_dial(bulk_port); /* a hello naming no transfer, a request of noise */
        made += fd >= 0 && write(fd, junk, sizeof junk) > 0;
        if (fd >= 0)
            close(fd);
        for (int i = 0; i < 20; i++) { /* a burst */
            fd = s_dial(bulk_port);
            made += fd >= 0 && write(fd, junk + 8, 40) > 0;
            if (fd >= 0)
                close(fd);
        }
        nconn += 22;
        for (int i = 0; i < 50 && !(said = s_log_lines(1, "refused the connection from 127.0.0.1",
                                                         NULL)); i++)
            usleep(20000);
    } while (!said && util_mono_ms() < until);
    is_int(made, nconn, "%d connections of garbage made to A's bulk port", nconn);
    is_int(s_get(lx, refs, O_GARB, &same), 0, "after them, B gets A's next object");
    ok(same && s_log_lines(2, s_hex[O_GARB], "over the bulk path") == 1,
       "byte for byte, over the bulk path");
    said = s_log_lines(1, "refused the connection from 127.0.0.1", NULL);
    ok(said >= 1 && said < nconn, "A complained, naming the peer, %d times for %d "
       "(rate-limited)", said, nconn);
    pid_t a_pid = util_pidfile_read(strcat(strcpy(sql, s_node[1]), "/run/node.pid"));
    ok(a_pid > 0 && kill(a_pid, 0) == 0, "A's node manager lives (pid %d)", (int) a_pid);

    /* a chunk altered after sealing */
    if (util_write_file(flip, "x", 1, 0600))
        diag("cannot write %s", flip);
    int rc = s_get(lx, refs, O_FLIP, &same);
    ok(rc != 0, "a chunk of object %s altered on the way: B's get fails (%d)", s_hex[O_FLIP], rc);
    ok(strstr(lux_errmsg(), s_hex[O_FLIP]) && strstr(lux_errmsg(), "authentication") &&
       strstr(lux_errmsg(), "127.0.0.2"), "naming the object, A and 'authentication': %s",
       lux_errmsg());
    ok(access(flip, F_OK) != 0, "A altered one chunk (the hook is spent)");
    /* the failure was that get's, not the object's: the same driver's
       next get pulls again (it kept the error for good before) */
    is_int(s_get(lx, refs, O_FLIP, &same), 0, "the same driver's next get of it...");
    ok(same && s_log_lines(2, s_hex[O_FLIP], "over the bulk path") == 1,
       "...is whole, over the bulk path");

    /* the head's bulk port refuses connections */
    is_int(s_get(lx, refs, O_HEAD1, &same), 0, "B gets an object of the head's, whose bulk port "
           "refuses connections");
    ok(same && s_log_lines(2, s_hex[O_HEAD1], "over CURVE") == 1, "byte for byte, over CURVE");
    is_int(s_get(lx, refs, O_HEAD2, &same), 0, "and a second one");
    ok(same && s_log_lines(2, s_hex[O_HEAD2], "over CURVE") == 1, "byte for byte, over CURVE");
    is_int(s_log_lines(2, "bulk port was not used", "127.0.0.1"), 1,
           "B said so once for the head's node");

    /* A dies in the middle of a bulk pull */
    int fk;
    pid_t bk = s_spawn_get(&refs[O_KILL], &fk);
    ok(s_log_wait(2, "pulling object", s_hex[O_KILL]),
       "B is pulling the 48 MiB object from A (pid %d)", (int) a_pid);
    ok(a_pid > 0 && kill(a_pid, SIGSTOP) == 0, "A stopped in the middle");
    ok(s_log_lines(2, "pulled object", s_hex[O_KILL]) == 0, "before the transfer ended");
    ok(kill(a_pid, SIGKILL) == 0, "A killed (kill -9 %d)", (int) a_pid);
    int64_t t0 = util_mono_ms();
    rc = s_read_get(fk, bk, msg, sizeof msg);
    ok(rc != 0 && rc != LUX_ETIMEDOUT, "B's get ends with an error, not a hang (%d, after %lld ms)",
       rc, (long long) (util_mono_ms() - t0));
    ok(strstr(msg, s_hex[O_KILL]) && strstr(msg, "127.0.0.2"),
       "which names the object and node A: %s", msg);
    is_int(s_get(lx, refs, O_FLIP, &same), 0, "B still serves its own copy after A died");

    lux_shutdown(&lx);
    if (write(rel_a, "x", 1) < 0 || write(rel_h, "x", 1) < 0)
        diag("a driver is gone already");
    waitpid(pa, NULL, 0);
    waitpid(ph, NULL, 0);
    fx_stop(&c);
    done_testing();
}

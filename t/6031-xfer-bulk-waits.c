/* 6031-xfer-bulk-waits: every wait of a bulk pull (exec_bulk.c) has an
   end, and what either side held is let go. A head on 127.0.0.1, node A
   (127.0.0.2) puts objects of 8 and 32 MiB, a driver on node B (127.0.0.3) gets
   them. A's source holds each transfer after its first chunk while a file
   exists (LUX_TEST_BULK_HOLD), so every case is caught in the middle of a
   pull, not by luck; A's sweep of objects nobody read is set out of reach
   (LUX_XFER_OPEN_IDLE_MS, 1 h), so only the bulk path's own ends can let
   A's pin go.
   - A stopped (SIGSTOP) mid-pull: B's get fails within B's
     LUX_XFER_TIMEOUT_MS naming the object and A; B's store holds nothing
     of it; A, let go on (SIGCONT), unpins it (freed by its owner, A's
     store use falls by its size);
   - B's node stopped mid-pull (32 MiB: more than B's credit lets A send
     ahead): A ends the transfer after 10 s in which it moved nothing,
     naming B, and unpins the object; B, let go on, gets an error naming
     A;
   - B's node killed (kill -9 by its pid) mid-pull: A ends the transfer
     at once and unpins the object; A lives. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/xfx.h"
#include "lux.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1u << 20)

enum { O_SRC_STOP, O_DST_STOP, O_DST_KILL, O_N };

static char s_node[3][600]; /* the directories of the head, A and B */
static char s_hex[O_N][2 * LUX_REF_LEN + 1];
static pid_t s_stopped[2];  /* continued at exit, however the test ends */

static void
s_stop_nodes(void)
{
    for (int i = 0; i < 2; i++)
        if (s_stopped[i] > 0)
            kill(s_stopped[i], SIGCONT);
    for (int i = 1; i <= 2; i++)
        if (s_node[i][0])
            fx_lux(NULL, 0, NULL, 0, "stop --dir %s", s_node[i]);
}

/* Wait (90 s at most) until node ip's store use is at most want. */
static int64_t
s_used_wait(const char *ip, int64_t want)
{
    int64_t used = -1, end = util_mono_ms() + 90000;
    while (util_mono_ms() < end && ((used = xfx_store_used(s_node[0], ip)) < 0 || used > want))
        usleep(200000);
    return used;
}

/* The same, until it is at least want (the beats carry store use late:
   right after the puts, A's may say only the first). */
static int64_t
s_used_reach(const char *ip, int64_t want)
{
    int64_t used = -1, end = util_mono_ms() + 90000;
    while (util_mono_ms() < end && (used = xfx_store_used(s_node[0], ip)) < want)
        usleep(200000);
    return used;
}

static pid_t
s_pid(int i)
{
    char path[700];
    snprintf(path, sizeof path, "%s/run/node.pid", s_node[i]);
    return util_pidfile_read(path);
}

int
main(void)
{
    db_cluster_t c;
    char extra[160], err[4096], hold[700], msg[1024];
    int port = 20000 + (int) (getpid() % 2000) * 7 + 3;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    snprintf(hold, sizeof hold, "%s/hold", tap_tmpdir());
    setenv("LUX_NODE_DEAD_MS", "600000", 1); /* a stopped node is not declared dead meanwhile */
    fx_start(&c, 1, 1, extra);
    tap_atexit(s_stop_nodes);
    snprintf(s_node[0], sizeof s_node[0], "%s", c.dir);
    for (int i = 1; i <= 2; i++) {
        snprintf(s_node[i], sizeof s_node[i], "%s/n%d", tap_tmpdir(), i);
        if (i == 1) {
            setenv("LUX_TEST_BULK_HOLD", hold, 1);
            setenv("LUX_XFER_OPEN_IDLE_MS", "3600000", 1);
        } else {
            unsetenv("LUX_TEST_BULK_HOLD");
            unsetenv("LUX_XFER_OPEN_IDLE_MS");
            setenv("LUX_XFER_TIMEOUT_MS", "4000", 1);
        }
        int rc = fx_lux(NULL, 0, err, sizeof err,
                        "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                        "--node-ip 127.0.0.%d --workers 1 --store-mb %d",
                        port, s_node[i], c.dir, i + 1, i == 1 ? 96 : 64);
        if (!is_int(rc, 0, "node %c joins on 127.0.0.%d", 'A' + i - 1, i + 1))
            bail("%s", err);
    }
    unsetenv("LUX_XFER_TIMEOUT_MS");
    pid_t a_pid = s_pid(1), b_pid = s_pid(2);
    ok(a_pid > 0 && b_pid > 0, "A's node manager is pid %d, B's %d", (int) a_pid, (int) b_pid);

    xfx_obj_t objs[O_N];
    for (int k = 0; k < O_N; k++)
        objs[k] = (xfx_obj_t){.size = k == O_DST_STOP ? 32 * MIB : 8 * MIB,
                              .seed = (uint64_t) k + 11};
    lux_ref_t refs[O_N];
    xfx_putter_t pa;
    xfx_put(&pa, s_node[1], objs, O_N, refs, s_hex);
    int64_t a_used = s_used_reach("127.0.0.2", 48 * MIB), b_used = s_used_wait("127.0.0.3", 0);
    ok(a_used >= 48 * MIB, "A's store holds the 3 objects (%lld bytes in use)",
       (long long) a_used);
    is_int(b_used, 0, "B's store is empty");

    /* A stopped in the middle: B gives up, naming A; nothing of it stays in B's store */
    if (util_write_file(hold, "x", 1, 0600))
        bail("cannot write %s", hold);
    int fd;
    pid_t g = xfx_get_spawn(s_node[2], &refs[O_SRC_STOP], &fd);
    ok(xfx_log_wait(s_node[1], false, "holding transfer", "127.0.0.3", 0, 60000),
       "A holds the pull of %s after its first chunk", s_hex[O_SRC_STOP]);
    ok(kill(a_pid, SIGSTOP) == 0, "A stopped (SIGSTOP %d)", (int) a_pid);
    s_stopped[0] = a_pid;
    unlink(hold);
    int rc = xfx_got(fd, g, msg, sizeof msg);
    ok(rc != 0 && rc != LUX_ETIMEDOUT, "B's get ends with an error, not its own timeout (%d)", rc);
    ok(strstr(msg, s_hex[O_SRC_STOP]) && strstr(msg, "127.0.0.2"),
       "naming the object and A: %s", msg);
    is_int(s_used_wait("127.0.0.3", 0), 0, "B's store holds nothing of it");
    ok(kill(a_pid, SIGCONT) == 0, "A goes on (SIGCONT)");
    s_stopped[0] = 0;
    ok(xfx_put_free(&pa, O_SRC_STOP) == 0, "A's driver frees the object");
    a_used = s_used_wait("127.0.0.2", 40 * MIB);
    ok(a_used >= 0 && a_used <= 40 * MIB, "A let it go: %lld bytes in use", (long long) a_used);

    /* B stopped in the middle: A ends the transfer after 10 s of nothing */
    if (util_write_file(hold, "x", 1, 0600))
        bail("cannot write %s", hold);
    g = xfx_get_spawn(s_node[2], &refs[O_DST_STOP], &fd);
    ok(xfx_log_wait(s_node[1], false, "holding transfer", "127.0.0.3", 1, 60000),
       "A holds the pull of %s after its first chunk", s_hex[O_DST_STOP]);
    ok(kill(b_pid, SIGSTOP) == 0, "B's node stopped (SIGSTOP %d)", (int) b_pid);
    s_stopped[1] = b_pid;
    ok(xfx_put_free(&pa, O_DST_STOP) == 0, "A's driver frees the object (a pull holds it)");
    unlink(hold);
    ok(xfx_log_wait(s_node[1], false, "moved nothing for 10 s", "127.0.0.3", 0, 90000),
       "A ends the transfer to B after 10 s without a move, naming B");
    a_used = s_used_wait("127.0.0.2", 8 * MIB);
    ok(a_used >= 0 && a_used <= 8 * MIB, "and lets the object go: %lld bytes in use",
       (long long) a_used);
    ok(kill(b_pid, SIGCONT) == 0, "B's node goes on (SIGCONT)");
    s_stopped[1] = 0;
    rc = xfx_got(fd, g, msg, sizeof msg);
    ok(rc != 0 && strstr(msg, s_hex[O_DST_STOP]) && strstr(msg, "127.0.0.2"),
       "B's get ends with an error naming the object and A (%d): %s", rc, msg);
    is_int(s_used_wait("127.0.0.3", 0), 0, "B's store holds nothing of it");

    /* B killed in the middle: A lets go at once */
    if (util_write_file(hold, "x", 1, 0600))
        bail("cannot write %s", hold);
    g = xfx_get_spawn(s_node[2], &refs[O_DST_KILL], &fd);
    ok(xfx_log_wait(s_node[1], false, "holding transfer", "127.0.0.3", 2, 60000),
       "A holds the pull of %s after its first chunk", s_hex[O_DST_KILL]);
    ok(xfx_put_free(&pa, O_DST_KILL) == 0, "A's driver frees the object (a pull holds it)");
    ok(kill(b_pid, SIGKILL) == 0, "B's node killed (kill -9 %d)", (int) b_pid);
    ok(xfx_log_wait(s_node[1], false, "closed transfer", "127.0.0.3", 0, 60000),
       "A sees B's end of the connection");
    unlink(hold);
    a_used = s_used_wait("127.0.0.2", 0);
    is_int(a_used, 0, "A lets the object go (its idle sweep is 1 h away)");
    ok(kill(a_pid, 0) == 0, "A's node manager lives");
    rc = xfx_got(fd, g, msg, sizeof msg);
    ok(rc != 0, "the driver on B ends with an error (%d): %s", rc, msg);

    xfx_put_end(&pa);
    fx_stop(&c);
    done_testing();
}

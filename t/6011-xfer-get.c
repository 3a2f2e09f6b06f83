/* 6011-xfer-get: objects between nodes (exec_xfer.c). A head on
   127.0.0.1 and two nodes: A (127.0.0.2) puts objects, a driver on B
   (127.0.0.3) reads them with lux_get, byte for byte: a small one (inline),
   24 MiB of noise, 16 MiB that lz4 shrinks. The object_locations view
   then has A's put and B's copy. An object larger than B's store is
   refused after B's LUX_STORE_WAIT_MS, before any chunk moves. Two drivers on B asking at once for the
   same object make one transfer. A ref no one made (no driver or task of
   the log: its ID names none) is LUX_ENOTFOUND at once, saying so, not
   after B's LUX_XFER_UNRECORDED_MS (t/6139 has the rest of that rule).
   A's node daemon killed (kill -9 by its pid) in the middle of a
   transfer: B's lux_get ends with an error that names A, within B's
   LUX_XFER_TIMEOUT_MS (5 s here), not a hang. B pulls in small chunks, one
   in flight, so that transfers last long enough to be caught in the middle. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/xfx.h"
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

enum { O_SMALL, O_NOISE, O_TEXT, O_TWICE, O_KILL, O_HUGE, O_N };
static const size_t s_size[O_N] = {1000, 24 * MIB, 16 * MIB, 16 * MIB, 48 * MIB, 80 * MIB};

static xfx_obj_t s_obj[O_N]; /* noise of seed k + 1, or text */

static char s_node[3][600]; /* the directories of the head, A and B */
static char s_hex[O_N][2 * LUX_REF_LEN + 1];

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
    return xfx_log_lines(s_node[2], false, a, b);
}

/* The nodes go at exit, however the test ends (fx stops the head). */
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
    char extra[160], err[4096], sql[512];
    int port = 20000 + (int) (getpid() % 2000) * 7 + 1;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    fx_start(&c, 1, 1, extra);
    tap_atexit(s_stop_nodes); /* after fx's own, so run before it: the nodes leave first */
    snprintf(s_node[0], sizeof s_node[0], "%s", c.dir);
    for (int i = 1; i <= 2; i++) {
        snprintf(s_node[i], sizeof s_node[i], "%s/n%d", tap_tmpdir(), i);
        if (i == 2) { /* B pulls slowly: transfers can be caught in the middle */
            setenv("LUX_XFER_CHUNK", "16384", 1);
            setenv("LUX_XFER_WINDOW", "1", 1);
            setenv("LUX_XFER_TIMEOUT_MS", "5000", 1);
            setenv("LUX_STORE_WAIT_MS", "2000", 1);
            /* a ref the log has no event of is waited for that long
               (a fresh put's event may be on its way), then ENOTFOUND;
               not one that no one made */
            setenv("LUX_XFER_UNRECORDED_MS", "10000", 1);
        }
        int rc = fx_lux(NULL, 0, err, sizeof err,
                        "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                        "--node-ip 127.0.0.%d --workers 1 --store-mb %d",
                        port, s_node[i], c.dir, i + 1, i == 1 ? 256 : 64);
        if (!is_int(rc, 0, "node %c joins on 127.0.0.%d", 'A' + i - 1, i + 1))
            bail("%s", err);
    }
    unsetenv("LUX_XFER_CHUNK");
    unsetenv("LUX_XFER_WINDOW");
    unsetenv("LUX_XFER_TIMEOUT_MS");
    unsetenv("LUX_STORE_WAIT_MS");
    unsetenv("LUX_XFER_UNRECORDED_MS");
    char a_node[64] = "", path[700];
    snprintf(path, sizeof path, "%s/run/node.joined", s_node[1]);
    char *id = util_read_file(path, NULL);
    snprintf(a_node, sizeof a_node, "%s", id ? id : "");
    free(id);

    /* A puts */
    lux_ref_t refs[O_N];
    xfx_putter_t pa;
    for (int k = 0; k < O_N; k++)
        s_obj[k] = (xfx_obj_t){.size = s_size[k], .text = k == O_TEXT, .seed = (uint64_t) k + 1};
    xfx_put(&pa, s_node[1], s_obj, O_N, refs, s_hex);
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
        ok(rc == 0 && xfx_same(&s_obj[k], v.data, v.size), "byte for byte");
    }
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM object_locations l JOIN nodes n USING (node_id) WHERE "
             "l.object_id = '%s' AND ((l.how = 'put' AND n.address = '127.0.0.2') OR "
             "(l.how = 'copy' AND n.address = '127.0.0.3' AND l.fp IS NOT NULL))",
             s_hex[O_NOISE]);
    is_int(s_wait_count(c.dir, 2, sql), 2,
           "object_locations: the 24 MiB object on A (put) and on B (copy)");
    is_int(s_log_lines("pulled object", s_hex[O_TEXT]), 1, "B pulled the text object once");
    lux_val_t v;
    is_int(lux_get(lx, &refs[O_TEXT], &v, 60000), 0, "a second get on B...");
    is_int(s_log_lines("pulled object", s_hex[O_TEXT]), 1, "...is served from B's own copy");

    /* two drivers at once: one transfer */
    int f1, f2;
    char m1[1024], m2[1024];
    pid_t b1 = xfx_get_spawn(s_node[2], &refs[O_TWICE], &f1),
          b2 = xfx_get_spawn(s_node[2], &refs[O_TWICE], &f2);
    is_int(xfx_got(f1, b1, m1, sizeof m1), 0, "two drivers on B get one object at once: the first");
    is_int(xfx_got(f2, b2, m2, sizeof m2), 0, "and the second");
    is_int(s_log_lines("pulling object", s_hex[O_TWICE]), 1, "in one transfer");

    /* a ref nobody made */
    lux_ref_t none;
    memset(none.b, 0x5a, sizeof none.b);
    int64_t asked = util_mono_ms();
    int rc = lux_get(lx, &none, &v, 60000);
    int64_t waited = util_mono_ms() - asked;
    is_int(rc, LUX_ENOTFOUND, "a ref no node holds: LUX_ENOTFOUND");
    ok(strstr(lux_errmsg(), "no driver or task of this cluster's log made it") != NULL,
       "which says so: %s", lux_errmsg());
    ok(waited < 9000, "at once, not after B's LUX_XFER_UNRECORDED_MS (10 s) (%lld ms)",
       (long long) waited);

    lux_free(lx, 3, refs); /* B's copies are B's to drop now */

    /* more than B's store holds: refused after B's store wait, not taken */
    rc = lux_get(lx, &refs[O_HUGE], &v, 120000);
    ok(rc != 0 && strstr(lux_errmsg(), "room"),
       "an object larger than B's store (80 of 64 MiB) is not pulled: %s", lux_errmsg());
    is_int(s_log_lines("pulling object", s_hex[O_HUGE]), 0, "no chunk of it moved");

    /* A dies in the middle of a transfer */
    int fk;
    pid_t bk = xfx_get_spawn(s_node[2], &refs[O_KILL], &fk);
    int64_t end = util_mono_ms() + 60000;
    while (util_mono_ms() < end && s_log_lines("pulling object", s_hex[O_KILL]) == 0)
        usleep(20000);
    pid_t a_pid = util_pidfile_read(strcat(strcpy(path, s_node[1]), "/run/node.pid"));
    ok(a_pid > 0 && s_log_lines("pulling object", s_hex[O_KILL]) == 1,
       "B is pulling the 48 MiB object from A (pid %d)", (int) a_pid);
    ok(a_pid > 0 && kill(a_pid, SIGSTOP) == 0, "A stopped in the middle");
    ok(s_log_lines("pulled object", s_hex[O_KILL]) == 0, "before the transfer ended");
    ok(kill(a_pid, SIGKILL) == 0, "A killed (kill -9 %d)", (int) a_pid);
    int64_t t0 = util_mono_ms();
    char mk[1024];
    rc = xfx_got(fk, bk, mk, sizeof mk);
    ok(rc != 0 && rc != LUX_ETIMEDOUT, "B's get ends with an error, not a hang (%d, after %lld ms)",
       rc, (long long) (util_mono_ms() - t0));
    ok(strstr(mk, s_hex[O_KILL]) && strstr(mk, "127.0.0.2"),
       "which names the object and node A: %s", mk);
    is_int(lux_get(lx, &refs[O_SMALL], &v, 60000), 0, "B still serves its own copy after A died");

    lux_shutdown(&lx);
    xfx_put_end(&pa);
    fx_stop(&c);
    done_testing();
}

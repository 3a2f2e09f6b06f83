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
   - a byte of a chunk altered at A before sealing (LUX_TEST_BULK_SPOIL,
     one time): every record opens, and B's fingerprint, made chunk by
     chunk as they opened, fails the pull naming the object and "the
     source announced"; the next get of it is whole;
   - the head's bulk port refuses connections (LUX_TEST_BULK_REFUSE, as a
     firewall would): B pulls over CURVE, says so once for that node;
   - A killed (kill -9 by its pid) in the middle of a bulk pull (A holds
     it after its first chunk: LUX_TEST_BULK_HOLD): B's get ends with an
     error naming the object and A, not a hang. */
#include "tap.h"
#include "lib/bulkfx.h"
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

enum { O_NOISE, O_TEXT, O_BADKEY, O_GARB, O_FLIP, O_SPOIL, O_KILL, O_HEAD1, O_HEAD2, O_N };
static const size_t s_size[O_N] = {8 * MIB, 8 * MIB, 4 * MIB, 4 * MIB, 4 * MIB,
                                   4 * MIB, 48 * MIB, 2 * MIB, 2 * MIB};
static xfx_obj_t s_obj[O_N]; /* noise of seed k + 7, or text */

static bulkfx_cl_t s_cl; /* the head, A and B */
static char s_hex[O_N][2 * LUX_REF_LEN + 1];

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

int
main(void)
{
    db_cluster_t *c = &s_cl.c;
    char extra[160], sql[700], flip[700], badkey[700], hold[700], msg[1024];
    char spoil[700];
    int port = 24000 + (int) (getpid() % 1400) * 7 + 1, bulk_port = port + 4;
    bool same;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    snprintf(flip, sizeof flip, "%s/flip", tap_tmpdir());
    snprintf(badkey, sizeof badkey, "%s/badkey", tap_tmpdir());
    snprintf(hold, sizeof hold, "%s/hold", tap_tmpdir());
    snprintf(spoil, sizeof spoil, "%s/spoil", tap_tmpdir());
    setenv("LUX_TEST_BULK_REFUSE", "1", 1); /* the head's bulk port: as if a firewall shut it */
    fx_start(c, 1, 1, extra);
    unsetenv("LUX_TEST_BULK_REFUSE");
    s_cl.port = port;
    for (int i = 1; i <= 2; i++) {
        if (i == 1) {
            setenv("LUX_TEST_BULK_FLIP", flip, 1);
            setenv("LUX_TEST_BULK_SPOIL", spoil, 1);
            setenv("LUX_TEST_BULK_HOLD", hold, 1); /* a pull held after one chunk, to kill A in */
        } else { /* B pulls in small chunks, two in flight: a pull lasts long enough to kill A */
            unsetenv("LUX_TEST_BULK_FLIP");
            unsetenv("LUX_TEST_BULK_SPOIL");
            unsetenv("LUX_TEST_BULK_HOLD");
            setenv("LUX_TEST_BULK_BADKEY", badkey, 1);
            setenv("LUX_XFER_CHUNK", "16384", 1);
            setenv("LUX_XFER_WINDOW", "2", 1);
            setenv("LUX_XFER_TIMEOUT_MS", "5000", 1);
        }
        bulkfx_join(&s_cl, i, i == 1 ? 160 : 192, "");
    }
    unsetenv("LUX_TEST_BULK_BADKEY");
    unsetenv("LUX_XFER_CHUNK");
    unsetenv("LUX_XFER_WINDOW");
    unsetenv("LUX_XFER_TIMEOUT_MS");
    ok(bulkfx_log(&s_cl, 1, "bulk port at 127.0.0.2:", NULL) == 1 &&
           bulkfx_log(&s_cl, 0,
                      "bulk port at "
                      "127.0.0.1:",
                      "not listening") == 1,
       "A's bulk port is on A's address (127.0.0.2), the "
       "head's on its own");

    lux_ref_t refs[O_N];
    s_cl.obj = s_obj, s_cl.ref = refs;
    xfx_putter_t pa, ph;
    for (int k = 0; k < O_N; k++)
        s_obj[k] = (xfx_obj_t){.size = s_size[k], .text = k == O_TEXT, .seed = (uint64_t) k + 7};
    xfx_put(&pa, s_cl.dir[1], s_obj, O_KILL + 1, refs, s_hex);
    xfx_put(&ph, s_cl.dir[0], s_obj + O_HEAD1, O_HEAD2 - O_HEAD1 + 1, refs + O_HEAD1,
            s_hex + O_HEAD1);
    lux_config_t cfg = {.address = s_cl.dir[2]};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("a driver on B: %s", lux_errmsg());

    /* a wrong key: refused, then CURVE */
    if (util_write_file(badkey, "x", 1, 0600))
        diag("cannot write %s", badkey);
    is_int(bulkfx_get(&s_cl, lx, O_BADKEY, &same), 0,
           "B's pull with a wrong bulk key still ends well");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 1, "refused the connection from 127.0.0.3",
                  "does not open with the key") == 1,
       "A refused B's request sealed with a wrong key, naming B");
    ok(bulkfx_log(&s_cl, 2, "bulk port was not used", "127.0.0.2") == 1 &&
           bulkfx_log(&s_cl, 2, s_hex[O_BADKEY], "over CURVE") == 1,
       "B said so and pulled it over A's CURVE endpoint");

    /* the bulk path */
    is_int(bulkfx_get(&s_cl, lx, O_NOISE, &same), 0, "B gets A's 8 MiB of noise");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 2, s_hex[O_NOISE], "over the bulk path") == 1, "over the bulk path");
    is_int(bulkfx_get(&s_cl, lx, O_TEXT, &same), 0, "B gets A's 8 MiB of text");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 2, s_hex[O_TEXT], "over the bulk path") == 1, "over the bulk path too");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM object_locations l JOIN nodes n USING (node_id) WHERE "
             "l.object_id = '%s' AND l.fp IS NOT NULL AND l.fp = (SELECT p.fp FROM "
             "object_locations p WHERE p.object_id = l.object_id AND p.how = 'put') AND "
             "((l.how = 'put' AND n.address = '127.0.0.2') OR (l.how = 'copy' AND n.address = "
             "'127.0.0.3'))", s_hex[O_NOISE]);
    int64_t n = -1, end = util_mono_ms() + 60000;
    while (util_mono_ms() < end && n < 2) {
        db_query_t *q = fx_query_open(c->dir);
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
        for (int i = 0;
             i < 50 &&
             !(said = bulkfx_log(&s_cl, 1, "refused the connection from 127.0.0.1", NULL));
             i++)
            usleep(20000);
    } while (!said && util_mono_ms() < until);
    is_int(made, nconn, "%d connections of garbage made to A's bulk port", nconn);
    is_int(bulkfx_get(&s_cl, lx, O_GARB, &same), 0, "after them, B gets A's next object");
    ok(same && bulkfx_log(&s_cl, 2, s_hex[O_GARB], "over the bulk path") == 1,
       "byte for byte, over the bulk path");
    said = bulkfx_log(&s_cl, 1, "refused the connection from 127.0.0.1", NULL);
    ok(said >= 1 && said < nconn, "A complained, naming the peer, %d times for %d "
       "(rate-limited)", said, nconn);
    pid_t a_pid = util_pidfile_read(strcat(strcpy(sql, s_cl.dir[1]), "/run/node.pid"));
    ok(a_pid > 0 && kill(a_pid, 0) == 0, "A's node manager lives (pid %d)", (int) a_pid);

    /* a chunk altered after sealing */
    if (util_write_file(flip, "x", 1, 0600))
        diag("cannot write %s", flip);
    int rc = bulkfx_get(&s_cl, lx, O_FLIP, &same);
    ok(rc != 0, "a chunk of object %s altered on the way: B's get fails (%d)", s_hex[O_FLIP], rc);
    ok(strstr(lux_errmsg(), s_hex[O_FLIP]) && strstr(lux_errmsg(), "authentication") &&
       strstr(lux_errmsg(), "127.0.0.2"), "naming the object, A and 'authentication': %s",
       lux_errmsg());
    ok(access(flip, F_OK) != 0, "A altered one chunk (the hook is spent)");
    /* the failure was that get's, not the object's: the same driver's
       next get pulls again (it kept the error for good before) */
    is_int(bulkfx_get(&s_cl, lx, O_FLIP, &same), 0, "the same driver's next get of it...");
    ok(same && bulkfx_log(&s_cl, 2, s_hex[O_FLIP], "over the bulk path") == 1,
       "...is whole, over the bulk path");

    /* a chunk altered before sealing: its tag opens, the fingerprint tells */
    if (util_write_file(spoil, "x", 1, 0600))
        diag("cannot write %s", spoil);
    rc = bulkfx_get(&s_cl, lx, O_SPOIL, &same);
    ok(rc != 0, "a chunk of object %s altered before A sealed it: B's get fails (%d)",
       s_hex[O_SPOIL], rc);
    ok(strstr(lux_errmsg(), s_hex[O_SPOIL]) && strstr(lux_errmsg(), "fingerprint differs") &&
       strstr(lux_errmsg(), "127.0.0.2"), "naming the object, A and the fingerprint: %s",
       lux_errmsg());
    ok(bulkfx_log(&s_cl, 2, s_hex[O_SPOIL], "the source announced") == 1 &&
       bulkfx_log(&s_cl, 2, s_hex[O_SPOIL], "authentication") == 0,
       "B logged that the bytes are not what A announced (no tag failed)");
    ok(access(spoil, F_OK) != 0, "A altered one chunk (the hook is spent)");
    is_int(bulkfx_get(&s_cl, lx, O_SPOIL, &same), 0, "the next get of it...");
    ok(same && bulkfx_log(&s_cl, 2, s_hex[O_SPOIL], "hashed as it came") == 1,
       "...is whole, its fingerprint made as its chunks came");

    /* the head's bulk port refuses connections */
    is_int(bulkfx_get(&s_cl, lx, O_HEAD1, &same), 0,
           "B gets an object of the head's, whose bulk port "
           "refuses connections");
    ok(same && bulkfx_log(&s_cl, 2, s_hex[O_HEAD1], "over CURVE") == 1,
       "byte for byte, over CURVE");
    is_int(bulkfx_get(&s_cl, lx, O_HEAD2, &same), 0, "and a second one");
    ok(same && bulkfx_log(&s_cl, 2, s_hex[O_HEAD2], "over CURVE") == 1,
       "byte for byte, over CURVE");
    is_int(bulkfx_log(&s_cl, 2, "bulk port was not used", "127.0.0.1"), 1,
           "B said so once for the head's node");

    /* A dies in the middle of a bulk pull */
    int fk;
    if (util_write_file(hold, "x", 1, 0600))
        bail("cannot write %s", hold);
    pid_t bk = xfx_get_spawn(s_cl.dir[2], &refs[O_KILL], &fk);
    ok(xfx_log_wait(s_cl.dir[2], false, "pulling object", s_hex[O_KILL], 0, 60000) &&
           xfx_log_wait(s_cl.dir[1], false, "holding transfer", "127.0.0.3", 0, 60000),
       "B is pulling the 48 MiB object from A (pid %d), held after its first chunk", (int) a_pid);
    ok(a_pid > 0 && kill(a_pid, SIGSTOP) == 0, "A stopped in the middle");
    unlink(hold);
    ok(bulkfx_log(&s_cl, 2, "pulled object", s_hex[O_KILL]) == 0, "before the transfer ended");
    ok(kill(a_pid, SIGKILL) == 0, "A killed (kill -9 %d)", (int) a_pid);
    int64_t t0 = util_mono_ms();
    rc = xfx_got(fk, bk, msg, sizeof msg);
    ok(rc != 0 && rc != LUX_ETIMEDOUT, "B's get ends with an error, not a hang (%d, after %lld ms)",
       rc, (long long) (util_mono_ms() - t0));
    ok(strstr(msg, s_hex[O_KILL]) && strstr(msg, "127.0.0.2"),
       "which names the object and node A: %s", msg);
    is_int(bulkfx_get(&s_cl, lx, O_FLIP, &same), 0, "B still serves its own copy after A died");

    lux_shutdown(&lx);
    xfx_put_end(&pa);
    xfx_put_end(&ph);
    fx_stop(c);
    done_testing();
}

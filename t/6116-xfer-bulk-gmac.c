/* 6116-xfer-bulk-gmac: the bulk path's integrity-only mode
   (LUX_BULK_CIPHER=gmac, doc/DESIGN.md 7.3 and 10). A head on 127.0.0.1
   (default: sealed) and three nodes: A (127.0.0.2) and B (127.0.0.3) both
   allow it, C (127.0.0.4) does not.
   - B pulls A's noise and A's text (lz4) with GMAC: both ends allow it;
     byte for byte;
   - C pulls A's noise sealed (aes256gcm): only the source allows it;
   - B pulls the head's object sealed: only the puller allows it;
   - a byte of a chunk flipped at A after its tag (LUX_TEST_BULK_FLIP):
     B's get fails naming the object, A and "authentication"; A's own
     object is untouched (the flip was on a copy: the next get is whole);
   - a node started with LUX_BULK_CIPHER=gcm is refused, naming it. */
#include "tap.h"
#include "lib/bulkfx.h"
#include "lux.h"
#include "util/util_fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1u << 20)

enum { O_NOISE, O_TEXT, O_NOISE2, O_FLIP, O_HEAD, O_N };
static const size_t s_size[O_N] = {8 * MIB, 8 * MIB, 4 * MIB, 4 * MIB, 4 * MIB};
static xfx_obj_t s_obj[O_N];

static bulkfx_cl_t s_cl; /* the head, A, B and C */
static char s_hex[O_N][2 * LUX_REF_LEN + 1];

int
main(void)
{
    db_cluster_t *c = &s_cl.c;
    char extra[160], err[4096], flip[700], bad[700];
    int port = 14000 + (int) (getpid() % 850) * 7 + 1; /* 14001-19950: no other test's */
    bool same;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             port);
    snprintf(flip, sizeof flip, "%s/flip", tap_tmpdir());
    unsetenv("LUX_BULK_CIPHER");
    fx_start(c, 1, 1, extra);
    s_cl.port = port;
    for (int i = 1; i <= 3; i++) {
        if (i <= 2)
            setenv("LUX_BULK_CIPHER", "gmac", 1);
        else
            unsetenv("LUX_BULK_CIPHER");
        if (i == 1)
            setenv("LUX_TEST_BULK_FLIP", flip, 1);
        else
            unsetenv("LUX_TEST_BULK_FLIP");
        bulkfx_join(&s_cl, i, 64, i <= 2 ? " with LUX_BULK_CIPHER=gmac" : "");
    }
    unsetenv("LUX_BULK_CIPHER");
    unsetenv("LUX_TEST_BULK_FLIP");

    lux_ref_t refs[O_N];
    s_cl.obj = s_obj, s_cl.ref = refs;
    xfx_putter_t pa, ph;
    for (int k = 0; k < O_N; k++)
        s_obj[k] = (xfx_obj_t){.size = s_size[k], .text = k == O_TEXT, .seed = (uint64_t) k + 31};
    xfx_put(&pa, s_cl.dir[1], s_obj, O_FLIP + 1, refs, s_hex);
    xfx_put(&ph, s_cl.dir[0], s_obj + O_HEAD, 1, refs + O_HEAD, s_hex + O_HEAD);
    lux_config_t cfg_b = {.address = s_cl.dir[2]}, cfg_c = {.address = s_cl.dir[3]};
    lux_t *lb = lux_init(&cfg_b), *lc = lux_init(&cfg_c);
    if (!lb || !lc)
        bail("drivers on B and C: %s", lux_errmsg());

    /* both allow it */
    is_int(bulkfx_get(&s_cl, lb, O_NOISE, &same), 0, "B gets A's 8 MiB of noise");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 2, s_hex[O_NOISE], "over the bulk path (gmac)") == 1,
       "with GMAC: both A and B allow it");
    is_int(bulkfx_get(&s_cl, lb, O_TEXT, &same), 0, "B gets A's 8 MiB of text (lz4 chunks)");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 2, s_hex[O_TEXT], "over the bulk path (gmac)") == 1, "with GMAC too");

    /* only one allows it */
    is_int(bulkfx_get(&s_cl, lc, O_NOISE2, &same), 0, "C, which does not allow it, gets A's noise");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 3, s_hex[O_NOISE2], "over the bulk path (aes256gcm)") == 1,
       "sealed (aes256gcm): only the source allows GMAC");
    is_int(bulkfx_get(&s_cl, lb, O_HEAD, &same), 0,
           "B gets an object of the head's, which does not");
    ok(same, "byte for byte");
    ok(bulkfx_log(&s_cl, 2, s_hex[O_HEAD], "over the bulk path (aes256gcm)") == 1,
       "sealed (aes256gcm): only the puller allows GMAC");
    is_int(bulkfx_log(&s_cl, 2, "over the bulk path (gmac)", NULL), 2,
           "B used GMAC for A's two only");

    /* a record altered on the way */
    if (util_write_file(flip, "x", 1, 0600))
        diag("cannot write %s", flip);
    int rc = bulkfx_get(&s_cl, lb, O_FLIP, &same);
    ok(rc != 0, "a chunk of object %s altered after its tag: B's get fails (%d)", s_hex[O_FLIP],
       rc);
    ok(strstr(lux_errmsg(), s_hex[O_FLIP]) && strstr(lux_errmsg(), "authentication") &&
       strstr(lux_errmsg(), "127.0.0.2"), "naming the object, A and 'authentication': %s",
       lux_errmsg());
    ok(access(flip, F_OK) != 0 && bulkfx_log(&s_cl, 1, "flipped a byte", "127.0.0.3") == 1,
       "A altered one chunk sent to B (the hook is spent)");
    is_int(bulkfx_get(&s_cl, lb, O_FLIP, &same), 0, "B's next get of it...");
    ok(same && bulkfx_log(&s_cl, 2, s_hex[O_FLIP], "over the bulk path (gmac)") == 1,
       "...is whole, with GMAC: the altered byte was a copy's, not A's store's");

    /* a setting that is not one */
    snprintf(bad, sizeof bad, "%s/n4", tap_tmpdir());
    setenv("LUX_BULK_CIPHER", "gcm", 1);
    rc = fx_lux(NULL, 0, err, sizeof err,
                "start --address 127.0.0.1:%d --dir %s --token-file %s/token "
                "--node-ip 127.0.0.5 --workers 1 --store-mb 16",
                port, bad, c->dir);
    unsetenv("LUX_BULK_CIPHER");
    if (rc == 0)
        fx_lux(NULL, 0, NULL, 0, "stop --dir %s", bad);
    ok(rc != 0, "a node with LUX_BULK_CIPHER=gcm does not start (%d)", rc);
    char *log = NULL;
    char path[700];
    snprintf(path, sizeof path, "%s/log/node.log", bad);
    log = util_read_file(path, NULL);
    ok((strstr(err, "LUX_BULK_CIPHER=gcm") && strstr(err, "gmac")) ||
       (log && strstr(log, "LUX_BULK_CIPHER=gcm") && strstr(log, "gmac")),
       "it says why, naming the setting and what it may be");
    free(log);

    lux_shutdown(&lb);
    lux_shutdown(&lc);
    xfx_put_end(&pa);
    xfx_put_end(&ph);
    fx_stop(c);
    done_testing();
}

/* 3132-exec-rebuild-storm: a rebuilt object stays in the store for the
   task that waits for it until that task has it; and an object rebuilt
   over and over without anyone reading it ends in an error naming it,
   not in an endless loop (issue 24, long-form seed 5 of t/3108: one
   object rebuilt 13,590 times in 21 minutes, each rebuilt copy evicted
   in the millisecond its task finished).

   Built here on purpose, in a 16 MiB store with one worker: two task
   outputs X and Y of 5 MiB each are evicted (a 7 MiB put that the test
   reads in place, so pinned, and an 8 MiB put freed at once push them
   out), leaving 9 MiB free. Then a task D needs both. Both are rebuilt;
   the second rebuild has room only if the first one's output goes, and
   before the fix it went: D then found X lost, rebuilt it, which evicted
   Y, and so on for ever (D never ran; lux_get of it timed out).

   After the fix, each rebuilt output is held (pinned) for D until D is
   handed to a worker: the second rebuild finds no room and, no other task
   running, goes beyond the store's size at once, into the spare
   region (DESIGN 7, rule 8), and D runs with both. Each is rebuilt once.

   Case 2 turns the hold off with a test hook (LUX_TEST_REBUILD_UNHELD=1,
   read by the node manager at start) to get the storm back, and checks
   that the bound on rebuilds ends it: D fails with LUX_ETASK and a message
   naming the object and how many times it was rebuilt unread. Case 2
   keeps a task running on a second worker meanwhile: only then does an
   ALLOC wait for room (with no other task running it goes beyond the
   store's size at once, which ends the storm before the bound). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024 * 1024)
#define M 1000003 /* as t/lib/testmod.c */

typedef struct {
    lux_t *lx;
    char dir[PATH_MAX]; /* the cluster's (lux_dir), for the log after shutdown */
    lux_ref_t x, y, d;
    int64_t want; /* t_checks(X, Y) */
} s_case_t;

/* The store's state before D: X and Y evicted, a 7 MiB put pinned, 9 MiB
   free. 0, or why not (in the TAP output). */
static int
s_setup(s_case_t *k, const char *name, int workers)
{
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", tap_tmpdir(), name);
    lux_config_t cfg = {.module = graph_module(), .dir = sub, .store_bytes = 16 * MB,
                        .workers = workers};
    k->lx = lux_init(&cfg);
    if (!ok(k->lx != NULL, "%s: start the embedded default, 16 MiB store, %d worker%s", name,
            workers, workers > 1 ? "s" : "")) {
        diag("lux_init: %s", lux_errmsg());
        return -1;
    }
    snprintf(k->dir, sizeof k->dir, "%s", lux_dir(k->lx));
    int64_t n = 5 * MB, sx = 11, sy = 12;
    lux_ref_t xy[2], p, q;
    lux_val_t v;
    int ready[2];
    uint8_t *buf = calloc(8 * MB, 1);
    int rc = buf ? 0 : LUX_ENOMEM;
    rc = rc ? rc : graph_call_big(k->lx, sx, n, &k->x);
    rc = rc ? rc : graph_call_big(k->lx, sy, n, &k->y);
    xy[0] = k->x;
    xy[1] = k->y;
    rc = rc ? rc : lux_wait(k->lx, 2, xy, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    /* a 7 MiB put read in place (pinned while the ref lives), then 8 MiB
       put and freed: X and Y, the oldest, are evicted to make room */
    rc = rc ? rc : lux_put(k->lx, buf, 7 * MB, &p);
    rc = rc ? rc : lux_get(k->lx, &p, &v, 120000);
    rc = rc ? rc : lux_put(k->lx, buf, 8 * MB, &q);
    if (!rc)
        lux_free(k->lx, 1, &q);
    free(buf);
    k->want = (sx + n + sy + n) % M;
    if (!is_int(rc, 0, "%s: X and Y made, a 7 MiB put pinned, an 8 MiB put made and freed",
                name))
        diag("%s", lux_errmsg());
    return rc;
}

/* After shutdown: how many rebuilds the log holds. */
static int64_t
s_rebuilds(const char *dir)
{
    db_query_t *q = fx_query_open(dir);
    int64_t n = fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%'");
    db_query_close(&q);
    return n;
}

static void
s_held(void)
{
    s_case_t k;
    if (s_setup(&k, "held", 1))
        bail("the case could not be set up");
    lux_val_t v;
    int64_t got = -1;
    int rc = lux_call(k.lx, "t_checks", 2, (lux_arg_t[]) {LUX_REF(k.x), LUX_REF(k.y)}, 1, &k.d);
    /* a generous end: the right answer takes about LUX_STORE_WAIT_MS */
    rc = rc ? rc : lux_get(k.lx, &k.d, &v, 90000);
    if (!rc && v.size == 8)
        memcpy(&got, v.data, 8);
    ok(rc == 0 && got == k.want,
       "held: a task needing two evicted 5 MiB outputs, with room for one, runs with both "
       "(rc %d, %lld, want %lld: %s)", rc, (long long) got, (long long) k.want,
       rc ? lux_errmsg() : "ok");
    lux_shutdown(&k.lx);
    int64_t n = s_rebuilds(k.dir);
    is_int(n, 2, "held: X and Y were rebuilt once each (the log holds %lld rebuilds)",
           (long long) n);
}

static void
s_bounded(void)
{
    s_case_t k;
    setenv("LUX_TEST_REBUILD_UNHELD", "1", 1);
    int rc = s_setup(&k, "unheld", 2);
    unsetenv("LUX_TEST_REBUILD_UNHELD");
    if (rc)
        bail("the case could not be set up");
    /* a task running on the other worker all along (t_hold): an ALLOC
       waits for room only while another task runs, whose end may free
       some; with none it goes beyond the store's size at once, and the
       storm would end there */
    lux_ref_t h;
    lux_val_t v;
    pid_t holder;
    rc = fx_hold(k.lx, "hold", &h, &holder);
    bool running = rc == 0;
    ok(running, "unheld: a task holds the other worker (%s)", rc ? lux_errmsg() : "held");
    rc = lux_call(k.lx, "t_checks", 2, (lux_arg_t[]) {LUX_REF(k.x), LUX_REF(k.y)}, 1, &k.d);
    rc = rc ? rc : lux_get(k.lx, &k.d, &v, 90000);
    char msg[2048], hx[LUX_REF_LEN * 2 + 1], hy[LUX_REF_LEN * 2 + 1];
    snprintf(msg, sizeof msg, "%s", rc ? lux_errmsg() : "");
    lux_ref_hex(&k.x, hx);
    lux_ref_hex(&k.y, hy);
    bool named = (strstr(msg, hx) || strstr(msg, hy)) && strstr(msg, "rebuilt");
    ok(rc == LUX_ETASK && named,
       "unheld: the storm ends in LUX_ETASK naming the object rebuilt unread (rc %d: %s)", rc,
       msg);
    fx_release("hold");
    lux_get(k.lx, &h, &v, 60000);
    lux_shutdown(&k.lx);
    int64_t n = s_rebuilds(k.dir);
    ok(n > 2, "unheld: the hook brought the storm back (%lld rebuilds before the bound)",
       (long long) n);
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    s_held();
    s_bounded();
    return done_testing();
}

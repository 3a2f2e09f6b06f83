/* 3103-exec-block: tasks that block in lux_get inside a worker, in the
   shapes that once hung the embedded default for ever, or nearly:
   - a task waiting for the output of a task run just before it in the
     same batch of its worker (the ref passed inside a value, which the
     node cannot see as a dependency): the worker must report the finished
     task before it waits; also when the waiting task already holds room
     in the store for its own output, which the node must not take back;
   - nesting deeper than the node starts extra workers for (4 x workers
     + 8): when every worker is blocked, one more is started anyway, or
     nothing could run what they wait for;
   - many nested tasks submitted at once, each waiting for its children:
     the children run first, so few block at once (diag: how many workers
     that took; every one started for a blocked task leaves after).
   One worker, so that the batches and the cap are known. Every lux_get has
   a deadline: a hang is a failure, not a stuck test. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define M GRAPH_M
#define PAIRS 5
#define DEEP 20   /* more than the cap of 4 x 1 + 8 workers */
#define NESTED 30
#define ROOM (256 << 10) /* past the inline limit: room in the store */

static lux_t *s_lx;

static int64_t
s_mix(const int64_t *v, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s = (s + v[i]) % M;
    return (s * 3 + 1) % M;
}

/* The int64 at the start of r's value (-1 on error, why says); a hang
   (nothing within 20 s: the worker waits for ever) bails out. */
static int64_t
s_got(lux_t *lx, lux_ref_t *r, size_t *size, char *why, size_t n)
{
    lux_val_t v;
    int64_t got = -1;
    int rc = lux_get(lx, r, &v, 20000);
    if (rc == LUX_ETIMEDOUT) {
        snprintf(why, n, "%s", lux_errmsg());
        lux_shutdown(&s_lx);
        bail("a task blocked in its worker never finished: %s", why);
    }
    snprintf(why, n, "%s", rc ? lux_errmsg() : "ok");
    if (!rc && v.size >= 8)
        memcpy(&got, v.data, 8);
    if (size)
        *size = rc ? 0 : v.size;
    return got;
}

/* Wait (up to 10 s) for the extra workers to leave; the workers left. */
static int
s_pool_back(void)
{
    pid_t kids[256];
    int n = -1;
    for (int i = 0; i < 200 && (n = fx_children(kids, 256)) > 1; i++)
        usleep(50000);
    return n;
}

/* A t_mix and a t_getref of its output, submitted together: one batch. */
static void
s_sibling(lux_t *lx, int i, bool room)
{
    int64_t x = 100 + i, n = ROOM;
    lux_ref_t a, b;
    char why[600];
    size_t size;
    if (lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &a) ||
        lux_call(lx, "t_getref", room ? 2 : 1,
                 (lux_arg_t[]) {LUX_VAL(a.b, sizeof a.b), LUX_VAL(&n, 8)}, 1, &b))
        bail("lux_call: %s", lux_errmsg());
    int64_t got = s_got(lx, &b, &size, why, sizeof why);
    is_int(got, s_mix(&x, 1), "pair %d%s: a task gets the output of the one before it in its "
           "batch (%s)", i, room ? ", holding room in the store" : "", why);
    if (room)
        is_int((int64_t) size, ROOM, "  its output is the room it asked for, %d bytes", ROOM);
    lux_free(lx, 1, &a);
    lux_free(lx, 1, &b);
}

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 16 << 20,
                        .workers = 1};
    char why[600];
    lux_t *lx = s_lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default: 1 worker");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());

    for (int i = 0; i < PAIRS; i++)
        s_sibling(lx, i, false);
    for (int i = 0; i < PAIRS; i++)
        s_sibling(lx, PAIRS + i, true);

    /* lux_wait says ready; lux_get with a timeout of 0 then returns it,
       also when it is in the store and the node must hand it over */
    {
        int64_t x = 5, n = ROOM;
        lux_ref_t a, b;
        lux_val_t v;
        int ready = 0;
        if (lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &a) ||
            lux_call(lx, "t_getref", 2, (lux_arg_t[]) {LUX_VAL(a.b, sizeof a.b), LUX_VAL(&n, 8)},
                     1, &b))
            bail("lux_call: %s", lux_errmsg());
        int got = lux_wait(lx, 1, &b, 1, 20000, &ready);
        int rc = lux_get(lx, &b, &v, 0);
        ok(got == 1 && ready == 1 && rc == 0 && v.size == (size_t) ROOM,
           "an object in the store that lux_wait reported ready: lux_get with timeout 0 "
           "returns it (%s)", rc ? lux_errmsg() : "ok");
        lux_free(lx, 1, &a);
        lux_free(lx, 1, &b);
    }

    /* nested DEEP levels: every level blocks a worker */
    int64_t depth = DEEP;
    lux_ref_t deep;
    if (lux_call(lx, "t_deep", 1, (lux_arg_t[]) {LUX_VAL(&depth, 8)}, 1, &deep))
        bail("lux_call: %s", lux_errmsg());
    is_int(s_got(lx, &deep, NULL, why, sizeof why), DEEP * (DEEP + 1) / 2,
           "a task nested %d deep, past the cap of 12 workers, finishes (%s)", DEEP, why);
    lux_free(lx, 1, &deep);
    is_int(s_pool_back(), 1, "  then the extra workers leave: the pool is one worker again");

    /* many nested tasks at once: each blocks for its children */
    lux_ref_t refs[NESTED];
    int64_t want[NESTED];
    for (int i = 0; i < NESTED; i++) {
        int64_t v[2] = {7 * i + 1, 11 * i + 2}, m[2] = {s_mix(&v[0], 1), s_mix(&v[1], 1)};
        want[i] = (m[0] + m[1] + s_mix(m, 2)) % M;
        if (lux_call(lx, "t_nested", 2, (lux_arg_t[]) {LUX_VAL(&v[0], 8), LUX_VAL(&v[1], 8)},
                     1, &refs[i]))
            bail("lux_call: %s", lux_errmsg());
    }
    int bad = 0, most = 0;
    for (int i = 0; i < NESTED; i++) {
        pid_t kids[256];
        int k = fx_children(kids, 256);
        most = k > most ? k : most;
        int64_t got = s_got(lx, &refs[i], NULL, why, sizeof why);
        if (got != want[i] && !bad++)
            diag("nested task %d: got %lld, want %lld (%s)", i, (long long) got,
                 (long long) want[i], why);
    }
    is_int(bad, 0, "%d nested tasks submitted at once all give the right result", NESTED);
    diag("at most %d workers seen at once", most);
    lux_free(lx, NESTED, refs);
    is_int(s_pool_back(), 1, "  then the extra workers leave: the pool is one worker again");

    /* and the node still runs a plain task */
    int64_t x = 41;
    lux_ref_t r;
    int rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &r);
    is_int(rc ? -1 : s_got(lx, &r, NULL, why, sizeof why), 124, "a task runs after (%s)", why);
    lux_shutdown(&s_lx);
    pid_t kids[64];
    is_int(fx_children(kids, 64), 0, "lux_shutdown leaves no worker behind");
    return done_testing();
}

/* 3154-nested-blocked-pins: nested tasks blocked in lux_get, each holding
   a big argument pinned, do not take the store and its spare region from
   the tasks that come after them (issue 24; the long form's seed 1153).

   Seed 1153 of t/3108's long form (4,118 tasks, chaos) failed a rebuild
   with "no room": 122 MB in use in a 64 MiB store and its spare region,
   97 MB of it pinned by tasks, while six nested tasks (t_hnest) were
   blocked in lux_get, some for 4-11 s: a worker that blocks gives its
   CPU back and an extra worker takes the next task, which may block too,
   each holding its arguments pinned until it ends.

   Built here: a 16 MiB store (and its 16 MiB spare region), 2 workers;
   a task G held at a gate; eight puts of 5 MiB (40 MiB: most are
   spilled); eight nested tasks t_hnest, each with one put as a ref
   argument (pinned while it runs) and G's ref passed as a value, so each
   blocks in lux_get(G) until the gate opens. Their arguments alone are
   more than the store and its spare region: a node that starts them all
   must refuse some their argument, "no room"; and a task making 5 MiB
   meanwhile its output. Then the gate opens: every nested task must
   answer, with the same value as a run of the same task alone
   afterwards, and the task its 5 MiB. Last, when the blocked tasks wait
   for the very task that needs the room, that task fails after its
   wait instead of waiting for ever (DESIGN 7, rule 13); and while a task
   runs for ever, a request for room fails after LUX_STORE_WAIT_MAX_MS in
   all (part 3). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"
#include "util/util_time.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MB (1024 * 1024)
#define N 8

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "2000", 1); /* a refusal, before, comes sooner */
    lux_t *lx = graph_unrecorded(NULL, 2, 16 * MB);

    char gate[PATH_MAX], go[PATH_MAX + 8];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(go, sizeof go, "%s/go", gate);
    mkdir(gate, 0700);
    int64_t gctl[2] = {3154, 64};
    lux_ref_t g;
    pid_t held[1];
    int rc = lux_call(lx, "t_gateh1", 2,
                      (lux_arg_t[]) {LUX_VAL(gate, strlen(gate)), LUX_VAL(gctl, sizeof gctl)}, 1,
                      &g);
    int ready[N];
    if (!rc)
        lux_wait(lx, 1, &g, 1, 0, ready); /* the call goes to the node now */
    if (!rc && fx_held(gate, 1, held, 120000) != 1)
        rc = LUX_ETIMEDOUT;
    ok(rc == 0, "task G runs, held at a gate (%s)",
       rc == LUX_ETIMEDOUT ? "not running within 120 s" : rc ? lux_errmsg() : "ok");

    uint8_t *buf = malloc(5 * MB);
    if (!buf)
        bail("out of memory");
    lux_ref_t p[N], nest[N];
    int64_t ctl[N][4];
    /* every put first: a put made while earlier nested tasks already
       block, pinning theirs, finds 30 MiB of the 32 pinned and waits for
       them, which wait for G, until LUX_STORE_WAIT_MAX_MS fails it (a
       put and a call in turn lost that race once under CI's load: the
       blocked tasks' extra workers came before the seventh put) */
    for (int i = 0; i < N && !rc; i++) {
        hx_fill(buf, 5 * MB, 500 + (uint64_t) i);
        rc = lux_put(lx, buf, 5 * MB, &p[i]);
        ctl[i][0] = 31540 + i; /* salt */
        ctl[i][1] = 64;        /* its output */
        ctl[i][2] = 4096;      /* its put */
        ctl[i][3] = 64;        /* its subtask's output */
    }
    for (int i = 0; i < N && !rc; i++)
        rc = lux_call(lx, "t_hnest", 3,
                      (lux_arg_t[]) {LUX_VAL(ctl[i], sizeof ctl[i]), LUX_VAL(g.b, sizeof g.b),
                                     LUX_REF(p[i])},
                      1, &nest[i]);
    if (!rc)
        lux_wait(lx, N, nest, N, 0, ready); /* sent to the node */
    ok(rc == 0, "%d puts of 5 MiB (40 MiB; the store and its spare region: 32 MiB) and a nested "
       "task on each that blocks in a get of G (%s)", N, rc ? lux_errmsg() : "ok");
    /* six blocked (30 MiB pinned) make 2 + 6 workers; then a window for
       what must not happen: a node that starts them all refuses the
       later ones their argument after its 2 s wait */
    pid_t kids[64];
    for (int i = 0; i < 1200 && fx_children(kids, 64) < 8; i++)
        usleep(100 * 1000);
    sleep(3);

    /* and a task whose output needs 5 MiB meanwhile: its room waits too,
       past its 2 s, for the blocked tasks' end */
    lux_ref_t big;
    rc = graph_call_big(lx, 3154, 5 * MB, &big);
    if (!rc)
        lux_wait(lx, 1, &big, 1, 0, ready); /* sent to the node */
    ok(rc == 0, "a task making 5 MiB submitted while they are blocked (%s)",
       rc ? lux_errmsg() : "ok");
    sleep(3);

    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int64_t got[N];
    bool ok_i[N] = {false};
    int answered = 0;
    for (int i = 0; i < N; i++) {
        lux_val_t v;
        int r = lux_get(lx, &nest[i], &v, 120000);
        if (r == 0 && v.size == 64) {
            memcpy(&got[i], v.data, 8);
            ok_i[i] = true;
            answered++;
        } else {
            diag("nested task %d: %s", i, r ? lux_errmsg() : "a wrong size");
        }
    }
    is_int(answered, N, "the gate opens: every nested task answers (none refused room)");
    lux_val_t bv;
    rc = lux_get(lx, &big, &bv, 120000);
    ok(rc == 0 && graph_big_ok(&bv, 3154, 5 * MB), "... and the task making 5 MiB answers, "
       "right (%s)", rc ? lux_errmsg() : "ok");
    lux_free(lx, 1, &big);

    /* the same tasks again, one at a time, with nothing blocked: the
       values they must have given */
    int same = 0;
    for (int i = 0; i < N; i++) {
        lux_ref_t again;
        lux_val_t v;
        int r = lux_call(lx, "t_hnest", 3,
                         (lux_arg_t[]) {LUX_VAL(ctl[i], sizeof ctl[i]), LUX_VAL(g.b, sizeof g.b),
                                        LUX_REF(p[i])},
                         1, &again);
        r = r ? r : lux_get(lx, &again, &v, 120000);
        if (r == 0 && v.size == 64 && ok_i[i] && memcmp(v.data, &got[i], 8) == 0)
            same++;
        if (r)
            diag("nested task %d run alone: %s", i, lux_errmsg());
    }
    is_int(same, N, "each answer is what the same task gives alone");

    /* The other side: the blocked tasks wait for the very task that
       needs the room. X, held at a second gate, will make 8 MiB; the
       nested tasks, each pinning its put, block in a get of X. When X
       asks its room nothing else runs, and the only tasks that could
       free any wait for X: X must fail, saying why, after its wait of
       2 s with nothing running, and so must they; not wait for ever. */
    for (int i = 0; i < 600 && fx_children(kids, 64) > 2; i++)
        usleep(100 * 1000); /* part 1's extra workers leave when idle */
    char gate2[PATH_MAX], go2[PATH_MAX + 8];
    snprintf(gate2, sizeof gate2, "%s/gate2", tap_tmpdir());
    snprintf(go2, sizeof go2, "%s/go", gate2);
    mkdir(gate2, 0700);
    int64_t xctl[2] = {31549, 8 * MB};
    lux_ref_t x;
    rc = lux_call(lx, "t_gateh1", 2,
                  (lux_arg_t[]) {LUX_VAL(gate2, strlen(gate2)), LUX_VAL(xctl, sizeof xctl)}, 1,
                  &x);
    if (!rc)
        lux_wait(lx, 1, &x, 1, 0, ready);
    if (!rc && fx_held(gate2, 1, held, 120000) != 1)
        rc = LUX_ETIMEDOUT;
    for (int i = 0; i < N && !rc; i++) {
        ctl[i][0] = 31560 + i;
        rc = lux_call(lx, "t_hnest", 3,
                      (lux_arg_t[]) {LUX_VAL(ctl[i], sizeof ctl[i]), LUX_VAL(x.b, sizeof x.b),
                                     LUX_REF(p[i])},
                      1, &nest[i]);
    }
    if (!rc)
        lux_wait(lx, N, nest, N, 0, ready);
    /* they block, holding the store: each blocked one makes the node
       start an extra worker, so six blocked (30 MiB pinned, all the room
       X could find is less than its 8 MiB) means 2 + 6 workers */
    int nkids = 0;
    for (int i = 0; i < 1200 && (nkids = fx_children(kids, 64)) < 8; i++)
        usleep(100 * 1000);
    ok(rc == 0 && nkids >= 8, "task X held at a second gate, and %d nested tasks that block in a "
       "get of it, six of them running (%d workers; %s)", N, nkids, rc ? lux_errmsg() : "ok");
    f = fopen(go2, "w");
    if (f)
        fclose(f);
    int64_t t0 = util_mono_ms();
    lux_val_t xv;
    rc = lux_get(lx, &x, &xv, 120000);
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "no room"), "X, let go, fails for want of room "
       "(%s)", rc ? lux_errmsg() : "it did not");
    int failed = 0;
    for (int i = 0; i < N; i++) {
        lux_val_t v;
        failed += lux_get(lx, &nest[i], &v, 120000) == LUX_ETASK;
    }
    int64_t took = util_mono_ms() - t0;
    is_int(failed, N, "so do the nested tasks that waited for it");
    ok(took < 60000, "... within 60 s, not for ever (%lld ms)", (long long) took);
    lux_shutdown(&lx);

    /* Part 3: the wait of rule 13 has an end even while a task runs for
       ever. A store wait of 300 ms, so that its bound, 10 times that by
       default (LUX_STORE_WAIT_MAX_MS), is 3 s. G3, held at a third gate,
       stands for a task that never ends (a server's loop); the driver
       reads six puts of 5 MiB and keeps them (30 MiB of the store and its
       spare region, pinned by a reader); two nested tasks block in a get
       of G3. A task making 5 MiB then finds no room even beyond the
       store while tasks are blocked and G3 runs: before, its ALLOC waited
       as long as G3 ran; now it fails after 3 s in all, saying so. */
    setenv("LUX_STORE_WAIT_MS", "300", 1);
    lx = graph_unrecorded(NULL, 2, 16 * MB);
    char gate3[PATH_MAX], go3[PATH_MAX + 8];
    snprintf(gate3, sizeof gate3, "%s/gate3", tap_tmpdir());
    snprintf(go3, sizeof go3, "%s/go", gate3);
    mkdir(gate3, 0700);
    int64_t g3ctl[2] = {31570, 64};
    lux_ref_t g3, p3[6], small, nest3[2];
    rc = lux_call(lx, "t_gateh1", 2,
                  (lux_arg_t[]) {LUX_VAL(gate3, strlen(gate3)), LUX_VAL(g3ctl, sizeof g3ctl)}, 1,
                  &g3);
    if (!rc)
        lux_wait(lx, 1, &g3, 1, 0, ready);
    if (!rc && fx_held(gate3, 1, held, 120000) != 1)
        rc = LUX_ETIMEDOUT;
    for (int i = 0; i < 6 && !rc; i++) {
        hx_fill(buf, 5 * MB, 700 + (uint64_t) i);
        rc = lux_put(lx, buf, 5 * MB, &p3[i]);
    }
    for (int i = 0; i < 6 && !rc; i++) {
        lux_val_t v;
        rc = lux_get(lx, &p3[i], &v, 120000); /* pinned while the driver holds it */
    }
    rc = rc ? rc : lux_put(lx, buf, 64, &small);
    for (int i = 0; i < 2 && !rc; i++) {
        ctl[i][0] = 31580 + i;
        rc = lux_call(lx, "t_hnest", 3,
                      (lux_arg_t[]) {LUX_VAL(ctl[i], sizeof ctl[i]), LUX_VAL(g3.b, sizeof g3.b),
                                     LUX_REF(small)},
                      1, &nest3[i]);
    }
    if (!rc)
        lux_wait(lx, 2, nest3, 2, 0, ready);
    /* the first to block while the other waits makes the node start an
       extra worker: 3 workers mean one blocked at least */
    for (int i = 0; i < 1200 && (nkids = fx_children(kids, 64)) < 3; i++)
        usleep(100 * 1000);
    ok(rc == 0 && nkids >= 3, "part 3: G3 held at a gate (a task that runs for ever), six "
       "reads of 5 MiB kept, nested tasks blocked in a get of G3 (%d workers; %s)", nkids,
       rc ? lux_errmsg() : "ok");
    t0 = util_mono_ms();
    rc = graph_call_big(lx, 3157, 5 * MB, &big);
    rc = rc ? rc : lux_get(lx, &big, &bv, 60000);
    took = util_mono_ms() - t0;
    const char *w = rc == LUX_ETASK ? strstr(lux_errmsg(), "waited ") : NULL;
    long long waited = w ? atoll(w + 7) : 0;
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "no room") &&
       strstr(lux_errmsg(), "LUX_STORE_WAIT_MAX_MS"), "a task making 5 MiB meanwhile fails "
       "for want of room, though G3 runs on, saying it waited its most (%s)",
       rc == LUX_ETIMEDOUT ? "it still waited after 60 s" : rc ? lux_errmsg() : "it did not");
    ok(waited >= 3000 && took < 60000, "... after its wait of 3 s in all (10 x LUX_STORE_WAIT_MS)"
       ", not for ever (waited %lld ms; %lld ms after its call)", waited, (long long) took);
    f = fopen(go3, "w");
    if (f)
        fclose(f);
    answered = 0;
    for (int i = 0; i < 2; i++) {
        lux_val_t v;
        int r = lux_get(lx, &nest3[i], &v, 120000);
        answered += r == 0 && v.size == 64;
        if (r)
            diag("part 3, nested task %d: %s", i, lux_errmsg());
    }
    is_int(answered, 2, "G3 let go: the nested tasks answer");
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}

/* 3155-rebuilt-held-bound: rebuilt objects held for tasks that still wait
   (DESIGN 7, rule 10) do not take the store and its spare region from
   what comes after them (issue 24; the long form's seed 1195).

   Seed 1195 of t/3108's long form (4,645 tasks, chaos) failed the
   driver's lux_put of 6.9 MB, "no room", with 110-120 MB pinned in 55-62
   objects of the 64 MiB store and its spare region, while the workers'
   tasks held almost nothing: rule 10 pins each rebuilt output for the
   task that waits for it until that task runs, and nothing bounded
   those pins.

   Built here: a 16 MiB store (and its 16 MiB spare region), 2 workers;
   twelve outputs X1..X12 of 4 MiB each, made and then evicted; a task G
   held at a gate on one worker; twelve tasks D_i = t_checks(X_i, G),
   each waiting for G and for the rebuild of its X_i. The rebuilt copies
   (48 MiB) are more than the store and its spare region: held, all
   pinned, the later rebuilds are refused room and their D_i fail, and
   so does a 6 MiB put made meanwhile. Then the gate opens, and every D_i
   must answer right. Each X_i is rebuilt once at most: a held copy
   beyond the bound is spilled when room is needed, and brought back for
   its task, not dropped and rebuilt again. */
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
#include <unistd.h>

#define MB (1024 * 1024)
#define N 12
#define M GRAPH_M

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1); /* a refusal, before, comes sooner */
    graph_ticks_start(); /* t_big counts each output it makes, rebuilds included */
    lux_t *lx = graph_unrecorded(NULL, 2, 16 * MB);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));

    /* X1..X12, 48 MiB in all: the later evict the earlier (task outputs:
       dropped, rebuilt from lineage); then two puts of 8 MiB, both
       kept until the second is made, push out the last ones */
    lux_ref_t x[N], d[N], g, p, pp[2];
    int ready[N];
    int64_t n = 4 * MB, want[N];
    int rc = 0;
    for (int i = 0; i < N && !rc; i++) {
        rc = graph_call_big(lx, 31550 + i, n, &x[i]);
        rc = rc ? rc : lux_wait(lx, 1, &x[i], 1, 120000, ready) == 1 ? 0 : LUX_ETIMEDOUT;
    }
    uint8_t *buf = malloc(8 * MB);
    if (!buf)
        bail("out of memory");
    for (int k = 0; k < 2 && !rc; k++) {
        hx_fill(buf, 8 * MB, 3155 + (uint64_t) k);
        rc = lux_put(lx, buf, 8 * MB, &pp[k]);
    }
    if (!rc)
        lux_free(lx, 2, pp);
    int64_t made = graph_ticks();
    ok(rc == 0 && made == N, "%d outputs of 4 MiB made (%lld counted) and pushed out of the "
       "16 MiB store (%s)", N, (long long) made, rc ? lux_errmsg() : "ok");

    /* G, held at a gate on one worker; D_i waits for it and for X_i,
       whose rebuild starts at once and runs on the other worker */
    char gate[PATH_MAX], go[PATH_MAX + 8];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(go, sizeof go, "%s/go", gate);
    mkdir(gate, 0700);
    rc = rc ? rc : lux_call(lx, "t_gate", 1, (lux_arg_t[]) {LUX_VAL(go, strlen(go))}, 1, &g);
    for (int i = 0; i < N && !rc; i++) {
        rc = lux_call(lx, "t_checks", 2, (lux_arg_t[]) {LUX_REF(x[i]), LUX_REF(g)}, 1, &d[i]);
        /* t_checks: seed plus length of each; G's 8 bytes read as seed 1 */
        want[i] = ((31550 + i) + n + 1 + 8) % M;
    }
    if (!rc)
        lux_wait(lx, N, d, N, 0, ready); /* sent to the node */
    ok(rc == 0, "a task G held at a gate, and %d tasks each waiting for G and for the rebuild "
       "of one of them (%s)", N, rc ? lux_errmsg() : "ok");

    /* the rebuilds: each makes its 4 MiB (t_big counts it); a refused
       one does not. Wait while they come, 60 s at most without one. */
    int64_t last = made, t_last = util_mono_ms();
    while (!rc && graph_ticks() < 2 * N && util_mono_ms() - t_last < 60000) {
        usleep(100 * 1000);
        if (graph_ticks() != last) {
            last = graph_ticks();
            t_last = util_mono_ms();
        }
    }
    int64_t rebuilt = graph_ticks() - made;
    is_int(rebuilt, N, "every lost output is rebuilt while its task waits: none is refused "
           "room, the held copies beyond the bound giving way");

    /* a put meanwhile (seed 1195's failed one was 6.9 MB) */
    hx_fill(buf, 6 * MB, 31559);
    rc = lux_put(lx, buf, 6 * MB, &p);
    ok(rc == 0, "a 6 MiB put made while the %d tasks wait (%s)", N, rc ? lux_errmsg() : "ok");
    if (!rc)
        lux_free(lx, 1, &p);

    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int right = 0;
    for (int i = 0; i < N; i++) {
        int64_t got = -1;
        lux_val_t v;
        int r = lux_get(lx, &d[i], &v, 120000);
        if (r == 0 && v.size == 8)
            memcpy(&got, v.data, 8);
        if (r == 0 && got == want[i])
            right++;
        else
            diag("task D%d: %s", i + 1, r ? lux_errmsg() : "a wrong value");
    }
    is_int(right, N, "the gate opens: every task answers, right");
    lux_val_t gv;
    lux_get(lx, &g, &gv, 120000);
    free(buf);
    lux_shutdown(&lx);

    db_query_t *q = fx_query_open(dir);
    int64_t nreb = fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%'");
    db_query_close(&q);
    ok(nreb >= 1 && nreb <= N, "each output rebuilt once at most: a held copy that gave way "
       "was spilled and brought back, not dropped (the log holds %lld rebuilds)",
       (long long) nreb);
    return done_testing();
}

/* 3156-rebuild-spilled-sibling: an output held on disk for a waiting task
   (DESIGN 7, rule 10) that a rebuild makes again leaves no spill file
   behind (issue 24).

   Since rule 10's held pins are bounded, a rebuilt output held beyond
   the bound is spilled, not dropped, when evicted: task outputs, not only
   puts, can now be SPILLED. A task with two outputs A and B, rebuilt for
   A while B sits spilled, makes B again; the node takes the new copy
   (it replaces no block anyone reads), and the spilled copy's file must
   go with the old value. Before, only deleting a spilled object removed
   its file, and the file of a spilled object whose value was replaced
   stayed in the spill directory for good.

   Built here: a 16 MiB store, 2 workers; X1, X2 (4 MiB each) and T's
   outputs A and B (4 MiB each), all evicted; a task G held at a gate;
   D1, D2 waiting for G and X1, X2 (their rebuilt copies held pinned: half
   the store); DB waiting for G and B (T rebuilt, B held on disk beyond
   the bound); an 8 MiB put evicts A (dropped) and B (spilled); then a
   task needing A rebuilds T once more, B made again while spilled. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"
#include "util/util_time.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024 * 1024)

/* Wait until t_big/t_h* have counted want outputs (60 s at most without
   one more). Whether they did. */
static bool
s_ticks(int64_t want)
{
    int64_t last = graph_ticks(), t_last = util_mono_ms();
    while (graph_ticks() < want && util_mono_ms() - t_last < 60000) {
        usleep(50 * 1000);
        if (graph_ticks() != last) {
            last = graph_ticks();
            t_last = util_mono_ms();
        }
    }
    return graph_ticks() >= want;
}

/* The spill files in dir/spill, and whether one is ref's. */
static int
s_spill_files(const char *dir, const lux_ref_t *ref, bool *its)
{
    char path[PATH_MAX], hex[LUX_REF_LEN * 2 + 1], name[LUX_REF_LEN * 2 + 8];
    lux_ref_hex(ref, hex);
    snprintf(name, sizeof name, "%s.lz4", hex);
    snprintf(path, sizeof path, "%s/spill", dir);
    *its = false;
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".lz4") == 0) {
            n++;
            *its = *its || strcmp(e->d_name, name) == 0;
        }
    }
    closedir(d);
    return n;
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    graph_ticks_start();
    lux_t *lx = graph_unrecorded(NULL, 2, 16 * MB);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));

    int64_t n = 4 * MB, tctl[3] = {31561, n, n}, hctl[2] = {31562, 64};
    lux_ref_t x[2], ab[2], pp[2], g, d[2], db, da, p;
    int ready[4];
    int rc = graph_call_big(lx, 31560, n, &x[0]);
    rc = rc ? rc : graph_call_big(lx, 31561, n, &x[1]);
    rc = rc ? rc : lux_call(lx, "t_h2", 1, (lux_arg_t[]) {LUX_VAL(tctl, sizeof tctl)}, 2, ab);
    rc = rc ? rc : lux_wait(lx, 2, x, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    rc = rc ? rc : lux_wait(lx, 2, ab, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    uint8_t *buf = malloc(8 * MB);
    if (!buf)
        bail("out of memory");
    for (int k = 0; k < 2 && !rc; k++) {
        hx_fill(buf, 8 * MB, 3156 + (uint64_t) k);
        rc = lux_put(lx, buf, 8 * MB, &pp[k]);
    }
    if (!rc)
        lux_free(lx, 2, pp);
    int64_t made = graph_ticks();
    ok(rc == 0 && made == 3, "X1, X2 and T's A and B (4 MiB each) made and pushed out of the "
       "16 MiB store (%s)", rc ? lux_errmsg() : "ok");

    char gate[PATH_MAX], go[PATH_MAX + 8];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(go, sizeof go, "%s/go", gate);
    mkdir(gate, 0700);
    rc = rc ? rc : lux_call(lx, "t_gate", 1, (lux_arg_t[]) {LUX_VAL(go, strlen(go))}, 1, &g);
    for (int i = 0; i < 2 && !rc; i++)
        rc = lux_call(lx, "t_checks", 2, (lux_arg_t[]) {LUX_REF(x[i]), LUX_REF(g)}, 1, &d[i]);
    if (!rc)
        lux_wait(lx, 2, d, 2, 0, ready);
    bool held = !rc && s_ticks(made + 2); /* X1 and X2 rebuilt, held pinned */
    rc = rc ? rc
            : lux_call(lx, "t_h1", 3,
                       (lux_arg_t[]) {LUX_VAL(hctl, sizeof hctl), LUX_REF(ab[1]), LUX_REF(g)}, 1,
                       &db);
    if (!rc)
        lux_wait(lx, 1, &db, 1, 0, ready);
    held = held && !rc && s_ticks(made + 3); /* T rebuilt for B */
    ok(held, "tasks waiting for a gated task and for X1, X2 and B: all three rebuilt (%s)",
       rc ? lux_errmsg() : "ok");

    /* an 8 MiB put: X1 and X2 are pinned, so A (dropped) and B (held on
       disk: spilled) make its room */
    hx_fill(buf, 8 * MB, 31563);
    rc = lux_put(lx, buf, 8 * MB, &p);
    if (!rc)
        lux_free(lx, 1, &p);
    ok(rc == 0, "an 8 MiB put made (%s)", rc ? lux_errmsg() : "ok");
    bool its = false;
    int files = s_spill_files(dir, &ab[1], &its);
    for (int i = 0; i < 100 && !its; i++) { /* the spill is written off the loop */
        usleep(50 * 1000);
        files = s_spill_files(dir, &ab[1], &its);
    }
    ok(its, "B, held on disk for its task, was spilled to make room (%d spill files)", files);

    /* a task that needs A: T rebuilt again, B made again while spilled */
    rc = lux_call(lx, "t_h1", 2, (lux_arg_t[]) {LUX_VAL(hctl, sizeof hctl), LUX_REF(ab[0])}, 1,
                  &da);
    lux_val_t v;
    rc = rc ? rc : lux_get(lx, &da, &v, 120000);
    ok(rc == 0, "a task needing A runs, T rebuilt for it (%s)", rc ? lux_errmsg() : "ok");

    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int answered = 0;
    for (int i = 0; i < 2; i++)
        answered += lux_get(lx, &d[i], &v, 120000) == 0;
    answered += lux_get(lx, &db, &v, 120000) == 0;
    lux_get(lx, &g, &v, 120000);
    is_int(answered, 3, "the gate opens: the waiting tasks answer");

    /* everything freed: no spill file may stay */
    lux_ref_t all[] = {x[0], x[1], ab[0], ab[1], g, d[0], d[1], db, da};
    lux_free(lx, (int) (sizeof all / sizeof all[0]), all);
    lux_ref_t last; /* a call after the frees: they go with it */
    if (graph_call_big(lx, 31564, 64, &last) == 0)
        lux_get(lx, &last, &v, 120000);
    int64_t t0 = util_mono_ms();
    while ((files = s_spill_files(dir, &ab[1], &its)) > 0 && util_mono_ms() - t0 < 10000)
        usleep(100 * 1000);
    ok(files == 0 && !its, "all freed: no spill file left (%d, B's %s)", files,
       its ? "among them" : "not");
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}

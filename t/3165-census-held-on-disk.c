/* 3165-census-held-on-disk: the "no room" error counts what is spilled to
   disk, and of it the outputs held on disk for tasks that wait (DESIGN 7,
   rule 10; issue 24).

   The error names what holds the store: readers' pins, tasks' arguments,
   rebuilt outputs held pinned for waiting tasks, the spare region.
   Rule 10's held copies beyond half the store are held on disk instead:
   spilled when the store needs their room, and brought back for their
   task at dispatch, each needing its room again then. Before, the census
   did not count them, and an operator reading it saw held pins of half
   the store and nothing of the rest.

   Built here as t/3156 builds its spilled output: a 16 MiB store, 2
   workers; X1, X2 (4 MiB each) and T's outputs A and B (4 MiB each), all
   evicted; a task G held at a gate; D1, D2 waiting for G and X1, X2
   (their rebuilt copies held pinned: half the store); DB waiting for G
   and B (B held on disk beyond the bound); an 8 MiB put evicts A
   (dropped) and B (spilled). Then 7 MiB puts read in place fill the store
   and the spare region until one is refused: its error must count B. */
#include "tap.h"
#include "lib/graph.h"
#include "util/util_time.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024 * 1024)
#define L (4 * MB)

/* Wait until the test module's tasks have counted want outputs (60 s at
   most without one more). Whether they did. */
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

/* Whether got holds every pattern (NULL-terminated), as t/3102 checks
   its errors: the missing ones are shown. */
static bool
s_like(const char *got, const char *what, ...)
{
    va_list ap;
    const char *pat;
    bool all = true;
    va_start(ap, what);
    while ((pat = va_arg(ap, const char *)))
        if (!strstr(got, pat)) {
            if (all)
                diag("  got: %s", got);
            diag("  missing: %s", pat);
            all = false;
        }
    va_end(ap);
    return ok(all, "%s", what);
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

    int64_t tctl[3] = {31651, L, L}, hctl[2] = {31652, 64};
    lux_ref_t x[2], ab[2], pp[2], g, d[2], db, p;
    int ready[4];
    uint8_t *buf = malloc(8 * MB);
    if (!buf)
        bail("out of memory");
    int rc = graph_call_big(lx, 31650, L, &x[0]);
    rc = rc ? rc : graph_call_big(lx, 31653, L, &x[1]);
    rc = rc ? rc : lux_call(lx, "t_h2", 1, (lux_arg_t[]) {LUX_VAL(tctl, sizeof tctl)}, 2, ab);
    rc = rc ? rc : lux_wait(lx, 2, x, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    rc = rc ? rc : lux_wait(lx, 2, ab, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    for (int k = 0; k < 2 && !rc; k++) {
        memset(buf, 0x30 + k, 8 * MB);
        rc = lux_put(lx, buf, 8 * MB, &pp[k]);
    }
    if (!rc)
        lux_free(lx, 2, pp);
    int64_t made = graph_ticks();
    ok(rc == 0 && made == 3, "X1, X2 and T's A and B (4 MiB each) made and pushed out of the "
       "16 MiB store (%s, %lld made)", rc ? lux_errmsg() : "ok", (long long) made);

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
    memset(buf, 0x40, 8 * MB);
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

    /* 7 MiB puts read in place: the store's free 8 MiB, then the spare
       region (after the wait: G runs), until one is refused */
    lux_ref_t fill[6];
    lux_val_t fv;
    int nfill = 0;
    rc = 0;
    while (nfill < 6 && !rc) {
        memset(buf, 0x50 + nfill, 7 * MB);
        rc = lux_put(lx, buf, 7 * MB, &fill[nfill]);
        if (!rc && (rc = lux_get(lx, &fill[nfill], &fv, 60000)) == 0)
            nfill++;
    }
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", rc ? lux_errmsg() : "");
    ok(rc == LUX_EFULL && nfill >= 1 && nfill < 6, "puts of 7 MiB read in place fill the store "
       "and its spare region: %d, then refused (%s)", nfill, rc ? "LUX_EFULL" : "none");
    s_like(msg, "  the refusal counts what is spilled, and of it what is held on disk for "
           "waiting tasks", "no room for 7340032 bytes",
           "spilled: 1 objects (4194304 B), 1 of them held on disk for tasks that wait "
           "(4194304 B)", "waiting with rebuilt ones held 3 (8388608 B)", NULL);
    lux_free(lx, nfill, fill);

    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int answered = 0;
    lux_val_t v;
    for (int i = 0; i < 2; i++)
        answered += lux_get(lx, &d[i], &v, 120000) == 0;
    answered += lux_get(lx, &db, &v, 120000) == 0;
    lux_get(lx, &g, &v, 120000);
    is_int(answered, 3, "the gate opens: the waiting tasks answer");

    lux_ref_t all[] = {x[0], x[1], ab[0], ab[1], g, d[0], d[1], db};
    lux_free(lx, (int) (sizeof all / sizeof all[0]), all);
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}

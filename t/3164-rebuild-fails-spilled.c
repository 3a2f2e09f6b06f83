/* 3164-rebuild-fails-spilled: a rebuild that fails leaves an output held
   on disk as it is: its spilled copy is good, and its file stays
   (DESIGN 7, rules 10 and 14; issue 24).

   Rule 14 keeps the outputs still here (READY) when a rebuild of their
   task fails. Since rule 10's held copies beyond half the store are
   spilled, an output can also be here on disk (SPILLED). Before, a failed
   rebuild turned such an output into its error and removed its file,
   although the copy was good: the task held waiting for it failed, and
   its owner read the rebuild's error.

   Built here as t/3156 builds its spilled sibling: a 16 MiB store, 2
   workers; X1, X2 (4 MiB each) and T's outputs A and B (4 MiB each, T
   being t_h2once: it fails once its flag file exists), all evicted; a
   task G held at a gate; D1, D2 waiting for G and X1, X2 (their rebuilt
   copies held pinned: half the store); DB waiting for G and B (T rebuilt,
   its flag removed first so that this run works, B held on disk beyond
   the bound); an 8 MiB put evicts A (dropped) and B (spilled). Then the
   driver reads A: T is rebuilt once more and fails. B must stay spilled,
   its file with it; DB runs on B's bytes when the gate opens, and B read
   is right. */
#include "tap.h"
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

/* The digest t_h1 (t/lib/testmod.c) gives its output of n bytes for
   control salt, over arguments of these digests and sizes. */
static uint64_t
s_h1_digest(int64_t salt, size_t n, int nargs, const uint64_t *arg_digest)
{
    uint64_t h = hx_mix((uint64_t) salt);
    for (int j = 0; j < nargs; j++)
        h = hx_mix(h ^ (arg_digest[j] + (uint64_t) (j + 1)));
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        bail("out of memory");
    hx_fill(p, n, hx_mix(h + 1));
    uint64_t d = hx_digest(p, n);
    free(p);
    return d;
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    graph_ticks_start();
    lux_t *lx = graph_unrecorded(NULL, 2, 16 * MB);
    char dir[PATH_MAX], flag[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    snprintf(flag, sizeof flag, "%s/t.ran", tap_tmpdir());

    /* B's bytes (t_h2once's output 1 for this salt) */
    int64_t tctl[3] = {31641, L, L}, hctl[2] = {31642, 64};
    uint8_t *buf = malloc(8 * MB);
    if (!buf)
        bail("out of memory");
    hx_fill(buf, L, hx_mix(hx_mix((uint64_t) tctl[0]) + 2));
    uint64_t b_digest = hx_digest(buf, L);
    int64_t one = 1;
    uint64_t db_args[2] = {b_digest, hx_digest(&one, 8)}; /* B, and G's 1 */
    uint64_t db_want = s_h1_digest(hctl[0], 64, 2, db_args);

    lux_ref_t x[2], ab[2], pp[2], g, d[2], db, p;
    int ready[4];
    int rc = graph_call_big(lx, 31640, L, &x[0]);
    rc = rc ? rc : graph_call_big(lx, 31643, L, &x[1]);
    rc = rc ? rc
            : lux_call(lx, "t_h2once", 2,
                       (lux_arg_t[]) {LUX_VAL(flag, strlen(flag)), LUX_VAL(tctl, sizeof tctl)},
                       2, ab);
    rc = rc ? rc : lux_wait(lx, 2, x, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    rc = rc ? rc : lux_wait(lx, 2, ab, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    for (int k = 0; k < 2 && !rc; k++) {
        hx_fill(buf, 8 * MB, 3164 + (uint64_t) k);
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
    unlink(flag); /* T's next run (for B) works; the one after fails */
    rc = rc ? rc
            : lux_call(lx, "t_h1", 3,
                       (lux_arg_t[]) {LUX_VAL(hctl, sizeof hctl), LUX_REF(ab[1]), LUX_REF(g)}, 1,
                       &db);
    if (!rc)
        lux_wait(lx, 1, &db, 1, 0, ready);
    held = held && !rc && s_ticks(made + 3); /* T rebuilt for B */
    ok(held && access(flag, F_OK) == 0, "tasks waiting for a gated task and for X1, X2 and B: "
       "all three rebuilt (%s)", rc ? lux_errmsg() : "ok");

    /* an 8 MiB put: X1 and X2 are pinned, so A (dropped) and B (held on
       disk: spilled) make its room */
    hx_fill(buf, 8 * MB, 31644);
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

    /* A read: T rebuilt again, and this run fails */
    lux_val_t v;
    rc = lux_get(lx, &ab[0], &v, 120000);
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "this run fails"),
       "A read: T's rebuild fails (%s)", rc ? lux_errmsg() : "it did not");
    files = s_spill_files(dir, &ab[1], &its);
    ok(its, "B's spill file is still there after the failed rebuild (%d spill files)", files);

    FILE *f = fopen(go, "w");
    if (f)
        fclose(f);
    int answered = 0;
    for (int i = 0; i < 2; i++)
        answered += lux_get(lx, &d[i], &v, 120000) == 0;
    is_int(answered, 2, "the gate opens: D1 and D2 answer");
    rc = lux_get(lx, &db, &v, 120000);
    ok(rc == 0 && v.size == 64 && hx_digest(v.data, v.size) == db_want,
       "DB runs on B's spilled copy, and is right (%s)", rc ? lux_errmsg() : "ok");
    rc = lux_get(lx, &ab[1], &v, 120000);
    ok(rc == 0 && v.size == L && hx_digest(v.data, v.size) == b_digest,
       "B read is right: the copy it had before the failed rebuild (%s)",
       rc ? lux_errmsg() : "ok");
    lux_get(lx, &g, &v, 120000);

    /* everything freed: no spill file may stay */
    lux_ref_t all[] = {x[0], x[1], ab[0], ab[1], g, d[0], d[1], db};
    lux_free(lx, (int) (sizeof all / sizeof all[0]), all);
    lux_ref_t last; /* a call after the frees: they go with it */
    if (graph_call_big(lx, 31645, 64, &last) == 0)
        lux_get(lx, &last, &v, 120000);
    int64_t t0 = util_mono_ms();
    while ((files = s_spill_files(dir, &ab[1], &its)) > 0 && util_mono_ms() - t0 < 10000)
        usleep(100 * 1000);
    ok(files == 0 && !its, "all freed: no spill file left (%d, B's %s)", files,
       its ? "among them" : "not");
    unlink(flag);
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}

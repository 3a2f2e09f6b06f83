/*  heldfx - the store t/3156, t/3164 and t/3165 build (heldfx.h). */
#include "heldfx.h"
#include "tap.h"
#include "lib/graph.h"
#include "lib/hx.h"
#include "util/util_time.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool
heldfx_ticks(int64_t want)
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

int
heldfx_spill_files(const char *dir, const lux_ref_t *ref, bool *its)
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

bool
heldfx_build(heldfx_t *h, int64_t salt, const char *flag)
{
    const int64_t L = HELDFX_L, MB = HELDFX_MB;
    memset(h, 0, sizeof *h);
    setenv("LUX_LOG", "error", 0);
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    graph_ticks_start();
    h->lx = graph_unrecorded(NULL, 2, 16 * MB);
    snprintf(h->dir, sizeof h->dir, "%s", lux_dir(h->lx));
    if (!(h->buf = malloc(8 * MB)))
        bail("out of memory");
    h->tctl[0] = salt + 1;
    h->tctl[1] = h->tctl[2] = L;
    h->hctl[0] = salt + 2;
    h->hctl[1] = 64;
    lux_t *lx = h->lx;
    lux_ref_t pp[2], p;
    int ready[4];
    bool all = true;

    int rc = graph_call_big(lx, salt, L, &h->x[0]);
    rc = rc ? rc : graph_call_big(lx, salt + 3, L, &h->x[1]);
    if (!rc && flag)
        rc = lux_call(lx, "t_h2once", 2,
                      (lux_arg_t[]) {LUX_VAL(flag, strlen(flag)), LUX_VAL(h->tctl, sizeof h->tctl)},
                      2, h->ab);
    else if (!rc)
        rc = lux_call(lx, "t_h2", 1, (lux_arg_t[]) {LUX_VAL(h->tctl, sizeof h->tctl)}, 2, h->ab);
    rc = rc ? rc : lux_wait(lx, 2, h->x, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    rc = rc ? rc : lux_wait(lx, 2, h->ab, 2, 120000, ready) == 2 ? 0 : LUX_ETIMEDOUT;
    for (int k = 0; k < 2 && !rc; k++) {
        hx_fill(h->buf, (size_t) (8 * MB), (uint64_t) (salt + 4 + k));
        rc = lux_put(lx, h->buf, (size_t) (8 * MB), &pp[k]);
    }
    if (!rc)
        lux_free(lx, 2, pp);
    h->made = graph_ticks();
    all &= ok(rc == 0 && h->made == 3, "X1, X2 and T's A and B (4 MiB each) made and pushed out "
              "of the 16 MiB store (%s, %lld made)", rc ? lux_errmsg() : "ok",
              (long long) h->made);

    char gate[PATH_MAX];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(h->go, sizeof h->go, "%s/go", gate);
    mkdir(gate, 0700);
    rc = rc ? rc
            : lux_call(lx, "t_gate", 1, (lux_arg_t[]) {LUX_VAL(h->go, strlen(h->go))}, 1, &h->g);
    for (int i = 0; i < 2 && !rc; i++)
        rc = lux_call(lx, "t_checks", 2, (lux_arg_t[]) {LUX_REF(h->x[i]), LUX_REF(h->g)}, 1,
                      &h->d[i]);
    if (!rc)
        lux_wait(lx, 2, h->d, 2, 0, ready);
    bool held = !rc && heldfx_ticks(h->made + 2); /* X1 and X2 rebuilt, held pinned */
    if (flag)
        unlink(flag); /* T's next run (for B) works; the one after fails */
    rc = rc ? rc
            : lux_call(lx, "t_h1", 3,
                       (lux_arg_t[]) {LUX_VAL(h->hctl, sizeof h->hctl), LUX_REF(h->ab[1]),
                                      LUX_REF(h->g)},
                       1, &h->db);
    if (!rc)
        lux_wait(lx, 1, &h->db, 1, 0, ready);
    held = held && !rc && heldfx_ticks(h->made + 3); /* T rebuilt for B */
    all &= ok(held && (!flag || access(flag, F_OK) == 0), "tasks waiting for a gated task and "
              "for X1, X2 and B: all three rebuilt (%s)", rc ? lux_errmsg() : "ok");

    /* an 8 MiB put: X1 and X2 are pinned, so A (dropped) and B (held on
       disk: spilled) make its room */
    hx_fill(h->buf, (size_t) (8 * MB), (uint64_t) (salt + 6));
    rc = lux_put(lx, h->buf, (size_t) (8 * MB), &p);
    if (!rc)
        lux_free(lx, 1, &p);
    all &= ok(rc == 0, "an 8 MiB put made (%s)", rc ? lux_errmsg() : "ok");
    bool its = false;
    int files = heldfx_spill_files(h->dir, &h->ab[1], &its);
    for (int i = 0; i < 100 && !its; i++) { /* the spill is written off the loop */
        usleep(50 * 1000);
        files = heldfx_spill_files(h->dir, &h->ab[1], &its);
    }
    all &= ok(its, "B, held on disk for its task, was spilled to make room (%d spill files)",
              files);
    return all;
}

void
heldfx_open(heldfx_t *h)
{
    FILE *f = fopen(h->go, "w");
    if (f)
        fclose(f);
}

void
heldfx_free(heldfx_t *h)
{
    lux_ref_t all[] = {h->x[0], h->x[1], h->ab[0], h->ab[1], h->g, h->d[0], h->d[1], h->db};
    lux_free(h->lx, (int) (sizeof all / sizeof all[0]), all);
}

void
heldfx_end(heldfx_t *h)
{
    free(h->buf);
    h->buf = NULL;
    lux_shutdown(&h->lx);
}

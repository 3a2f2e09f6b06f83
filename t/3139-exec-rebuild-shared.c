/* 3139-exec-rebuild-shared: an object rebuilt for one consumer is not
   rebuilt again, with everything under it, for the next one while its
   copy is still in the store (issue 24, long-form seed 3 of t/3108: one
   object rebuilt 152 times; in the first 1,500 tasks of that seed 3,997 of
   4,485 rebuilds came right after the object's previous rebuild had
   finished, with no eviction in between).

   The loop: the driver reads each output once and frees it (t/3108's
   s_check), so an intermediate object whose consumers have all run is
   deleted. When later outputs built on it are evicted and read, each
   rebuild needs it: it is rebuilt (its own inputs too, recursively), its
   consumer runs, and the rebuilt copy, owned by nobody and needed by no
   queued task, was deleted at once; the next evicted output rebuilt the
   whole chain again. M outputs over a chain of depth D cost M * (D + 1)
   rebuilds.

   Built here: a chain c0 -> c1 -> c2 -> c3 of 2 MiB outputs (t_h1 each
   on the one before), and M = 4 outputs y0..y3 of 1 MiB, each t_h1 of c3,
   in a 16 MiB store with one worker. The chain's refs are freed once the
   y's are made (deleted: nothing needs them); a 15 MiB put, freed at once,
   evicts the y's. Then each y is read, in turn. Before the fix each read
   rebuilt the y and the four c's: 20 rebuilds. Now a rebuilt copy that
   nothing needs stays in the store, evictable (DESIGN 7, rule 11): the
   c's are rebuilt once, 8 rebuilds in all. The second case does the same
   with a chain of 1 KiB values, carried inline (on the node's heap, not
   in the store): those are kept too, within NM_KEPT_INLINE_MAX (most of
   the rebuilds left in seed 3 after the first fix, 2,103 of 3,291, were
   of such values). Every value read is compared, byte for byte, with the
   same computation done here. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)
#define D 4         /* the chain's depth */
#define M 4         /* the outputs over it */
#define L (1 * MB)  /* an output's size */

/* t_h1's output (t/lib/testmod.c) for salt and size over the arguments
   in[0..n-1]: into out. */
static void
s_h1(int64_t salt, size_t size, int n, uint8_t *const *in, const size_t *in_size, uint8_t *out)
{
    uint64_t h = hx_mix((uint64_t) salt);
    for (int j = 0; j < n; j++)
        h = hx_mix(h ^ (hx_digest(in[j], in_size[j]) + (uint64_t) (j + 1)));
    hx_fill(out, size, hx_mix(h + 1));
}

static void
s_case(const char *name, size_t S)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", tap_tmpdir(), name);
    lux_t *lx = graph_unrecorded(dir, 1, 16 * MB);
    char cdir[PATH_MAX];
    snprintf(cdir, sizeof cdir, "%s", lux_dir(lx));

    /* the values, computed here */
    uint8_t *cv[D], *yv[M];
    size_t ss = S;
    uint64_t ydig[M];
    for (int i = 0; i < D; i++) {
        if (!(cv[i] = malloc(S)))
            bail("out of memory");
        s_h1(i, S, i ? 1 : 0, i ? &cv[i - 1] : NULL, &ss, cv[i]);
    }
    for (int j = 0; j < M; j++) {
        if (!(yv[j] = malloc(L)))
            bail("out of memory");
        s_h1(100 + j, L, 1, &cv[D - 1], &ss, yv[j]);
        ydig[j] = hx_digest(yv[j], L);
    }

    /* the graph */
    lux_ref_t c[D], y[M];
    int rc = 0;
    for (int i = 0; i < D && !rc; i++) {
        int64_t ctl[2] = {i, (int64_t) S};
        rc = i ? lux_call(lx, "t_h1", 2, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl), LUX_REF(c[i - 1])},
                          1, &c[i])
               : lux_call(lx, "t_h1", 1, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl)}, 1, &c[i]);
    }
    for (int j = 0; j < M && !rc; j++) {
        int64_t ctl[2] = {100 + j, L};
        rc = lux_call(lx, "t_h1", 2, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl), LUX_REF(c[D - 1])}, 1,
                      &y[j]);
    }
    int ready[M];
    if (!rc && lux_wait(lx, M, y, M, 120000, ready) != M)
        rc = LUX_ETIMEDOUT;
    if (!is_int(rc, 0, "%s: a chain of %d objects of %zu bytes and %d outputs of 1 MiB over it "
                "made", name, D, S, M))
        bail("%s", lux_errmsg());
    lux_free(lx, D, c); /* deleted: nothing needs them now */

    /* a 15 MiB put, freed at once: the outputs are evicted */
    uint8_t *buf = calloc(15 * MB, 1);
    lux_ref_t p;
    if (!buf)
        bail("out of memory");
    rc = lux_put(lx, buf, 15 * MB, &p);
    if (!rc)
        lux_free(lx, 1, &p);
    free(buf);
    if (!is_int(rc, 0, "%s: a 15 MiB put made and freed", name))
        bail("%s", lux_errmsg());

    /* each output read in turn: every one is rebuilt, over the chain */
    int right = 0;
    for (int j = 0; j < M; j++) {
        lux_val_t v;
        rc = lux_get(lx, &y[j], &v, 120000);
        if (rc == 0 && v.size == L && hx_digest(v.data, v.size) == ydig[j])
            right++;
        else
            diag("output %d: rc %d (%s), %zu bytes", j, rc, rc ? lux_errmsg() : "ok",
                 rc ? (size_t) 0 : v.size);
        lux_free(lx, 1, &y[j]);
    }
    is_int(right, M, "%s: every output read back after its eviction is right", name);
    lux_shutdown(&lx);

    db_query_t *q = fx_query_open(cdir);
    int64_t evicted = fx_count(q, "SELECT count(*) FROM objects WHERE event = 'object_lost' AND "
                                  "object_id IN (SELECT object_id FROM task_deps) = 0");
    int64_t rebuilds = fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%'");
    int64_t chain = fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%' AND "
                                "task_id IN (SELECT dep_task_id FROM task_deps)");
    db_query_close(&q);
    ok(evicted >= M, "%s: the outputs were evicted before they were read (%lld objects read by "
       "no task evicted)", name, (long long) evicted);
    /* before: each read rebuilt the whole chain again, M * D + M = 20 */
    is_int(chain, D, "%s: the chain was rebuilt once, not once per output (%lld rebuilds of its "
           "objects)", name, (long long) chain);
    is_int(rebuilds, D + M, "%s: %d rebuilds in all (the log holds %lld)", name, D + M,
           (long long) rebuilds);
    for (int i = 0; i < D; i++)
        free(cv[i]);
    for (int j = 0; j < M; j++)
        free(yv[j]);
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    s_case("store", 2 * MB);
    s_case("inline", 1024);
    return done_testing();
}

/* 3163-rebuild-keeps-read: a rebuild makes every output of its task
   again, and an output still in the store stays as it is: its block is
   not freed under the readers and running tasks that hold pointers into
   it (long-form seed 1223 of t/3108: a task's output read back with the
   right size and the wrong bytes; DESIGN 7, rule 14).

   Before, the node took the rebuild's new copy of every output and freed
   the old block at once, pins or not; and a rebuild that failed turned
   every output into its error, freeing the blocks the same way. The next
   allocation there wrote another object's bytes under the reader.

   Built here, in a 16 MiB store with one worker: a task makes A and B, 4
   MiB each. The driver reads A in place and keeps it. An 11 MiB put,
   freed at once, evicts B (A is pinned). Reading B runs the task again,
   which makes A again too ("remade": t_h2) or fails ("failed":
   t_h2once). Then 4 MiB puts of other bytes fill what is free. A, read
   before, must still hold A's bytes, and A read again is right. */
#include "tap.h"
#include "lib/graph.h"
#include "lib/hx.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)
#define L (4 * MB)

static void
s_case(const char *name, bool fails)
{
    char dir[PATH_MAX], flag[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", tap_tmpdir(), name);
    snprintf(flag, sizeof flag, "%s/%s.ran", tap_tmpdir(), name);
    lux_t *lx = graph_unrecorded(dir, 1, 16 * MB);

    /* the outputs (t/lib/testmod.c's t_h2) for this salt, no other argument */
    int64_t ctl[4] = {3163, L, L, 0};
    uint64_t h = hx_mix((uint64_t) ctl[0]);
    uint8_t *buf = malloc(11 * MB);
    if (!buf)
        bail("out of memory");
    hx_fill(buf, L, hx_mix(h + 1));
    uint64_t da = hx_digest(buf, L);
    hx_fill(buf, L, hx_mix(h + 2));
    uint64_t db = hx_digest(buf, L);

    lux_ref_t out[2];
    int ready[2];
    int rc = fails ? lux_call(lx, "t_h2once", 2,
                              (lux_arg_t[]) {LUX_VAL(flag, strlen(flag)), LUX_VAL(ctl, sizeof ctl)},
                              2, out)
                   : lux_call(lx, "t_h2", 1, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl)}, 2, out);
    if (!rc && lux_wait(lx, 2, out, 2, 120000, ready) != 2)
        rc = LUX_ETIMEDOUT;
    if (!is_int(rc, 0, "%s: a task made A and B, 4 MiB each", name))
        bail("%s", lux_errmsg());
    lux_val_t a;
    rc = lux_get(lx, &out[0], &a, 120000);
    ok(rc == 0 && a.size == L && hx_digest(a.data, a.size) == da, "%s: A is read in place, right",
       name);
    if (rc)
        bail("%s", lux_errmsg());

    /* B evicted: an 11 MiB put fits only without it */
    lux_ref_t p;
    memset(buf, 0x11, 11 * MB);
    rc = lux_put(lx, buf, 11 * MB, &p);
    if (!rc)
        lux_free(lx, 1, &p);
    if (!is_int(rc, 0, "%s: an 11 MiB put made and freed (B evicted)", name))
        bail("%s", lux_errmsg());

    /* B read: the task runs again, and makes A again too, or fails */
    lux_val_t b;
    rc = lux_get(lx, &out[1], &b, 120000);
    if (fails)
        ok(rc == LUX_ETASK && strstr(lux_errmsg(), "this run fails"),
           "%s: B's rebuild fails (%s)", name, rc ? lux_errmsg() : "it did not");
    else
        ok(rc == 0 && b.size == L && hx_digest(b.data, b.size) == db, "%s: B, rebuilt, is right",
           name);
    lux_free(lx, 1, &out[1]);

    /* what is free now taken by other bytes */
    lux_ref_t q[3];
    int nq = 0;
    for (int i = 0; i < 3; i++) {
        memset(buf, 0x5a + i, L);
        if (lux_put(lx, buf, L, &q[nq]) == 0)
            nq++;
    }
    ok(nq >= 1, "%s: %d puts of 4 MiB of other bytes made after", name, nq);
    ok(a.size == L && hx_digest(a.data, a.size) == da,
       "%s: A, read in place before, still holds A's bytes", name);
    lux_free(lx, nq, q);
    lux_val_t a2;
    rc = lux_get(lx, &out[0], &a2, 120000);
    ok(rc == 0 && a2.size == L && hx_digest(a2.data, a2.size) == da, "%s: A read again is right "
       "(%s)", name, rc ? lux_errmsg() : "ok");
    lux_free(lx, 1, &out[0]);
    lux_shutdown(&lx);
    free(buf);
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    s_case("remade", false);
    s_case("failed", true);
    return done_testing();
}

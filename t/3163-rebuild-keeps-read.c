/* 3163-rebuild-keeps-read: a rebuild makes every output of its task
   again, and an output still in the store stays as it is: its block is
   not freed under the readers and running tasks that hold pointers into
   it (long-form seed 1223 of t/3108: a task's output read back with the
   right size and the wrong bytes, no fault injected on that path).

   Before, the node took the rebuild's new copy of every output and freed
   the old block at once, pins or not; the next allocation there wrote
   another object's bytes under the reader's pointer.

   Built here, in a 16 MiB store with one worker: t_h2 makes A and B, 4
   MiB each. The driver reads A in place and keeps it. An 11 MiB put,
   freed at once, evicts B (A is pinned). Reading B rebuilds the task,
   which makes A again too. Then 4 MiB puts of other bytes fill what is
   free. A, read before the rebuild, must still hold A's bytes; and A and
   B read again are right. */
#include "tap.h"
#include "lib/graph.h"
#include "lib/hx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)
#define L (4 * MB)

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    lux_t *lx = graph_unrecorded(NULL, 1, 16 * MB);

    /* t_h2's outputs (t/lib/testmod.c) for this salt, no other argument */
    int64_t ctl[4] = {3163, L, L, 0};
    uint64_t h = hx_mix((uint64_t) ctl[0]);
    uint8_t *want = malloc(L);
    if (!want)
        bail("out of memory");
    hx_fill(want, L, hx_mix(h + 1));
    uint64_t da = hx_digest(want, L);
    hx_fill(want, L, hx_mix(h + 2));
    uint64_t db = hx_digest(want, L);

    lux_ref_t out[2];
    int ready[2];
    int rc = lux_call(lx, "t_h2", 1, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl)}, 2, out);
    if (!rc && lux_wait(lx, 2, out, 2, 120000, ready) != 2)
        rc = LUX_ETIMEDOUT;
    if (!is_int(rc, 0, "a task made A and B, 4 MiB each"))
        bail("%s", lux_errmsg());
    lux_val_t a;
    rc = lux_get(lx, &out[0], &a, 120000);
    ok(rc == 0 && a.size == L && hx_digest(a.data, a.size) == da, "A is read in place, right");
    if (rc)
        bail("%s", lux_errmsg());

    /* B evicted: an 11 MiB put fits only without it */
    uint8_t *buf = malloc(11 * MB);
    lux_ref_t p;
    if (!buf)
        bail("out of memory");
    memset(buf, 0x11, 11 * MB);
    rc = lux_put(lx, buf, 11 * MB, &p);
    if (!rc)
        lux_free(lx, 1, &p);
    if (!is_int(rc, 0, "an 11 MiB put made and freed (B evicted)"))
        bail("%s", lux_errmsg());

    /* B read: the task runs again and makes A again too */
    lux_val_t b;
    rc = lux_get(lx, &out[1], &b, 120000);
    ok(rc == 0 && b.size == L && hx_digest(b.data, b.size) == db, "B, rebuilt, is right");
    lux_free(lx, 1, &out[1]);

    /* what is free now taken by other bytes */
    lux_ref_t q[3];
    int nq = 0;
    for (int i = 0; i < 3; i++) {
        memset(buf, 0x5a + i, L);
        if (lux_put(lx, buf, L, &q[nq]) == 0)
            nq++;
    }
    ok(nq >= 1, "%d puts of 4 MiB of other bytes made after the rebuild", nq);
    is_int(a.size == L && hx_digest(a.data, a.size) == da, 1,
           "A, read in place before the rebuild, still holds A's bytes");
    lux_free(lx, nq, q);
    lux_val_t a2;
    rc = lux_get(lx, &out[0], &a2, 120000);
    ok(rc == 0 && a2.size == L && hx_digest(a2.data, a2.size) == da, "A read again is right");
    lux_free(lx, 1, &out[0]);
    lux_shutdown(&lx);

    free(buf);
    free(want);
    return done_testing();
}

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

   Built here by t/lib/heldfx (a 16 MiB store, 2 workers; T's output B
   held on disk for a task DB that waits, and spilled; A dropped); then a
   task needing A rebuilds T once more, B made again while spilled. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/heldfx.h"
#include "lib/hx.h"
#include "util/util_time.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


int
main(void)
{
    heldfx_t h;
    heldfx_build(&h, 31560, NULL);
    lux_t *lx = h.lx;
    lux_ref_t da;
    lux_val_t v;
    bool its = false;
    int files;

    /* a task that needs A: T rebuilt again, B made again while spilled */
    int rc = lux_call(lx, "t_h1", 2, (lux_arg_t[]) {LUX_VAL(h.hctl, sizeof h.hctl),
                                                     LUX_REF(h.ab[0])}, 1, &da);
    rc = rc ? rc : lux_get(lx, &da, &v, 120000);
    ok(rc == 0, "a task needing A runs, T rebuilt for it (%s)", rc ? lux_errmsg() : "ok");

    heldfx_open(&h);
    int answered = 0;
    for (int i = 0; i < 2; i++)
        answered += lux_get(lx, &h.d[i], &v, 120000) == 0;
    answered += lux_get(lx, &h.db, &v, 120000) == 0;
    lux_get(lx, &h.g, &v, 120000);
    is_int(answered, 3, "the gate opens: the waiting tasks answer");

    /* everything freed: no spill file may stay */
    heldfx_free(&h);
    lux_free(lx, 1, &da);
    lux_ref_t last; /* a call after the frees: they go with it */
    if (graph_call_big(lx, 31564, 64, &last) == 0)
        lux_get(lx, &last, &v, 120000);
    int64_t t0 = util_mono_ms();
    while ((files = heldfx_spill_files(h.dir, &h.ab[1], &its)) > 0 && util_mono_ms() - t0 < 10000)
        usleep(100 * 1000);
    ok(files == 0 && !its, "all freed: no spill file left (%d, B's %s)", files,
       its ? "among them" : "not");
    heldfx_end(&h);
    return done_testing();
}

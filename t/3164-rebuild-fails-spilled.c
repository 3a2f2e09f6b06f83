/* 3164-rebuild-fails-spilled: a rebuild that fails leaves an output held
   on disk as it is: its spilled copy is good, and its file stays
   (DESIGN 7, rules 10 and 14; issue 24).

   Rule 14 keeps the outputs still here (READY) when a rebuild of their
   task fails. Since rule 10's held copies beyond half the store are
   spilled, an output can also be here on disk (SPILLED). Before, a failed
   rebuild turned such an output into its error and removed its file,
   although the copy was good: the task held waiting for it failed, and
   its owner read the rebuild's error.

   Built here by t/lib/heldfx, as t/3156 builds its spilled sibling (T
   being t_h2once: it fails once its flag file exists; the flag is
   removed before T's rebuild for B, so that this run works). Then the
   driver reads A: T is rebuilt once more and fails. B must stay spilled,
   its file with it; DB runs on B's bytes when the gate opens, and B read
   is right. */
#include "tap.h"
#include "lib/graph.h"
#include "lib/heldfx.h"
#include "lib/hx.h"
#include "util/util_time.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024 * 1024)
#define L (4 * MB)

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
    char flag[PATH_MAX];
    snprintf(flag, sizeof flag, "%s/t.ran", tap_tmpdir());
    heldfx_t h;
    /* B's bytes (t_h2once's output 1 for T's salt, 31641) */
    uint8_t *bb = malloc(L);
    if (!bb)
        bail("out of memory");
    hx_fill(bb, L, hx_mix(hx_mix((uint64_t) 31641) + 2));
    uint64_t b_digest = hx_digest(bb, L);
    free(bb);
    int64_t one = 1;
    uint64_t db_args[2] = {b_digest, hx_digest(&one, 8)}; /* B, and G's 1 */
    uint64_t db_want = s_h1_digest(31642, 64, 2, db_args);
    heldfx_build(&h, 31640, flag);
    lux_t *lx = h.lx;
    bool its = false;
    int files;

    /* A read: T rebuilt again, and this run fails */
    lux_val_t v;
    int rc = lux_get(lx, &h.ab[0], &v, 120000);
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "this run fails"),
       "A read: T's rebuild fails (%s)", rc ? lux_errmsg() : "it did not");
    files = heldfx_spill_files(h.dir, &h.ab[1], &its);
    ok(its, "B's spill file is still there after the failed rebuild (%d spill files)", files);

    heldfx_open(&h);
    int answered = 0;
    for (int i = 0; i < 2; i++)
        answered += lux_get(lx, &h.d[i], &v, 120000) == 0;
    is_int(answered, 2, "the gate opens: D1 and D2 answer");
    rc = lux_get(lx, &h.db, &v, 120000);
    ok(rc == 0 && v.size == 64 && hx_digest(v.data, v.size) == db_want,
       "DB runs on B's spilled copy, and is right (%s)", rc ? lux_errmsg() : "ok");
    rc = lux_get(lx, &h.ab[1], &v, 120000);
    ok(rc == 0 && v.size == L && hx_digest(v.data, v.size) == b_digest,
       "B read is right: the copy it had before the failed rebuild (%s)",
       rc ? lux_errmsg() : "ok");
    lux_get(lx, &h.g, &v, 120000);

    /* everything freed: no spill file may stay */
    heldfx_free(&h);
    lux_ref_t last; /* a call after the frees: they go with it */
    if (graph_call_big(lx, 31645, 64, &last) == 0)
        lux_get(lx, &last, &v, 120000);
    int64_t t0 = util_mono_ms();
    while ((files = heldfx_spill_files(h.dir, &h.ab[1], &its)) > 0 && util_mono_ms() - t0 < 10000)
        usleep(100 * 1000);
    ok(files == 0 && !its, "all freed: no spill file left (%d, B's %s)", files,
       its ? "among them" : "not");
    unlink(flag);
    heldfx_end(&h);
    return done_testing();
}

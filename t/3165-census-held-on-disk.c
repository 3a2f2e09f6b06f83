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

   Built here by t/lib/heldfx, as t/3156 builds its spilled output (B
   held on disk for a waiting task DB, and spilled). Then 7 MiB puts read
   in place fill the store
   and the spare region until one is refused: its error must count B. */
#include "tap.h"
#include "lib/graph.h"
#include "lib/heldfx.h"
#include "util/util_time.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024 * 1024)

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
    heldfx_t h;
    heldfx_build(&h, 31650, NULL);
    lux_t *lx = h.lx;
    uint8_t *buf = h.buf;
    int rc;

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

    heldfx_open(&h);
    int answered = 0;
    lux_val_t v;
    for (int i = 0; i < 2; i++)
        answered += lux_get(lx, &h.d[i], &v, 120000) == 0;
    answered += lux_get(lx, &h.db, &v, 120000) == 0;
    lux_get(lx, &h.g, &v, 120000);
    is_int(answered, 3, "the gate opens: the waiting tasks answer");

    heldfx_free(&h);
    heldfx_end(&h);
    return done_testing();
}

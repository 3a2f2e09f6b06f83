/* 3153-rebuild-unacked: a lost object is rebuilt even when the log has
   not yet acknowledged its task's submission (issue 24; the long form
   under ASan, seeds 1010 and 1011).

   The node rebuilds a lost object from its task's task_submitted event,
   which it read back from the log's file. When that event was still on
   its way (the log seconds behind: ASan, a loaded machine), the node
   waited 5 s for it on its loop, then found nothing in the file, and the
   task that needed the object failed for good: "its argument ... was
   never created (or its lineage is not in the log)", although it had
   been created and its record was on its way.

   Here the log's head drops every append while GATE/hold exists
   (LUX_TEST_APPEND_GATE), so nothing is acknowledged: task A makes a
   1 MiB value in a 4 MiB store, five puts of 1 MiB evict it, and task B
   reads it: A must be rebuilt from the node's own copy of its record.
   Once the gate opens, the log must hold everything: A's rebuild, and B
   finished. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024 * 1024)
#define T_CHECK_M 1000003 /* t_check answers (seed + size) mod this (t/lib/testmod.c M) */

int
main(void)
{
    char gate[PATH_MAX], hold[PATH_MAX + 8], dir[PATH_MAX], hex[33];
    setenv("LUX_LOG", "error", 0);
    snprintf(gate, sizeof gate, "%s/agate", tap_tmpdir());
    snprintf(hold, sizeof hold, "%s/hold", gate);
    mkdir(gate, 0700);
    setenv("LUX_TEST_APPEND_GATE", gate, 1);
    lux_t *lx = graph_unrecorded(NULL, 1, 4 * MB);

    fx_gate_touch(gate, "hold", ""); /* from now on the log takes nothing */
    int64_t seed = 11, size = MB, got = 0;
    lux_ref_t a, b, q;
    int ready = 0;
    int rc = lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&size, 8)}, 1, &a);
    if (!rc && lux_wait(lx, 1, &a, 1, 60000, &ready) != 1)
        rc = LUX_ETIMEDOUT;
    ok(rc == 0, "with the log taking nothing, task A makes 1 MiB (%s)", rc ? lux_errmsg() : "ok");
    uint8_t *buf = calloc(1, MB);
    for (int i = 0; i < 5 && !rc; i++) {
        memset(buf, 'p' + i, MB);
        rc = lux_put(lx, buf, MB, &q);
    }
    free(buf);
    ok(rc == 0, "five puts of 1 MiB in the 4 MiB store evict it (%s)", rc ? lux_errmsg() : "ok");

    rc = lux_call(lx, "t_check", 1, (lux_arg_t[]) {LUX_REF(a)}, 1, &b);
    rc = rc ? rc : graph_get8(lx, &b, &got);
    ok(rc == 0 && got == (seed + size) % T_CHECK_M, "task B reads A, rebuilt before the log "
       "has its record (%s)", rc ? lux_errmsg() : "ok");

    unlink(hold);
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);
    db_query_t *qy = fx_query_open(dir);
    snprintf(hex, sizeof hex, "%s", lux_ref_hex(&a, (char[2 * LUX_REF_LEN + 1]) {0}));
    hex[32] = '\0'; /* the task's ID: the ref's first 16 bytes */
    is_int(fx_count(qy, "SELECT count(*) FROM retries WHERE task_id = '%s' AND reason LIKE "
                    "'rebuild%%'", hex),
           1, "the gate open, the log has A's rebuild");
    snprintf(hex, sizeof hex, "%s", lux_ref_hex(&b, (char[2 * LUX_REF_LEN + 1]) {0}));
    hex[32] = '\0';
    is_int(fx_count(qy, "SELECT count(*) FROM tasks WHERE task_id = '%s' AND status = 'finished'",
                    hex),
           1, "and B finished");
    db_query_close(&qy);
    return done_testing();
}

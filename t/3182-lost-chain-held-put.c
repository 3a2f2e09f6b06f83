/* 3182-lost-chain-held-put: a rebuild that reaches a freed put whose
   object_put event the node still holds (its blob being written) or has
   not had acknowledged names the put as the root cause, as it does once
   the event is in the log's file (t/3107).

   The node's map of records not yet in the log (exec_node_log.c,
   `unacked`) is keyed by task ID, and a put's object_put is recorded
   under its own (the put's ID's task part). nm_log_lookup took whatever
   record it found there, or in the log client's queue, as the task's
   task_submitted: a put's object_put did not decode as a task, and the
   chain's root was "the log's record of a task to rebuild is malformed"
   (t/3107 failed so in CI, stop 46, when its 8-byte put's event was not
   yet acknowledged). Here LUX_TEST_BLOB_GATE holds the blob's write of a
   1 MiB put Y, so its object_put (and all after it) stays held: X on Y,
   X2 on X, all three freed, then a task on X2 (this part passed before
   too: the lookup waited 5 s for the held record, then the put was in
   the file). Then with an 8-byte put, whose object_put waits in the log
   client's queue while LUX_TEST_APPEND_GATE drops every append: before,
   check 12 failed, the root "was never created" (nm_log_was_put read the
   file only). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_fs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* X on the put y, X2 on X, all three freed once read, then a task Z on
   X2: it must fail naming X2, X and y, a put freed (4 checks). */
static void
s_chain(lux_t *lx, const lux_ref_t *y, const char *when)
{
    lux_ref_t x, x2, z;
    lux_val_t v;
    int rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(*y)}, 1, &x);
    rc = rc ? rc : lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(x)}, 1, &x2);
    rc = rc ? rc : lux_get(lx, &x2, &v, 60000);
    is_int(rc, 0, "%s: a task on the put and a task on that%s%s", when, rc ? ": " : "",
           rc ? lux_errmsg() : "");
    lux_get(lx, &x, &v, 60000);
    lux_free(lx, 1, y);
    lux_free(lx, 1, &x);
    lux_free(lx, 1, &x2);
    rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(x2)}, 1, &z);
    rc = rc ? rc : lux_get(lx, &z, &v, 60000);
    is_int(rc, LUX_ETASK, "%s: a task on the freed result fails", when);
    const char *m = lux_errmsg();
    ok(rc == LUX_ETASK && !strstr(m, "malformed"), "%s: not saying a record is malformed", when);
    ok(rc == LUX_ETASK && graph_says(m, "the argument", &x2, "was lost and its rebuild failed") &&
           graph_says(m, "its argument", &x, "was lost and its rebuild failed") &&
           graph_says(m, "the root", y, "was made by lux_put and then freed"),
       "%s: the chain is named to the put: %s", when, m);
}

int
main(void)
{
    char gate[PATH_MAX], waiting[PATH_MAX + 16];
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    snprintf(waiting, sizeof waiting, "%s.waiting", gate);
    setenv("LUX_TEST_BLOB_GATE", gate, 1);
    char agate[PATH_MAX], ahold[PATH_MAX + 8];
    snprintf(agate, sizeof agate, "%s/agate", tap_tmpdir());
    snprintf(ahold, sizeof ahold, "%s/hold", agate);
    mkdir(agate, 0700);
    setenv("LUX_TEST_APPEND_GATE", agate, 1);
    lux_t *lx = graph_embedded(2, 64 << 20, "start the embedded default (puts recorded)");

    size_t n = 1 << 20;
    uint8_t *buf = calloc(1, n);
    memcpy(buf, &(int64_t) {5}, 8);
    lux_ref_t y;
    int rc = lux_put(lx, buf, n, &y);
    free(buf);
    is_int(rc, 0, "a put of 1 MiB");
    ok(fx_wait_file(waiting, 120000), "its blob's write has begun and is held");
    s_chain(lx, &y, "its event held");
    util_write_file(gate, "", 0, 0600); /* the write goes on */

    /* the same with an 8-byte put (its bytes in its event: nothing held)
       while the log's head drops every append: its object_put waits in
       the log client's queue, unacknowledged */
    fx_gate_touch(agate, "hold", "");
    rc = lux_put(lx, &(int64_t) {5}, 8, &y);
    is_int(rc, 0, "with the log taking nothing, a put of 8 bytes");
    s_chain(lx, &y, "its event unacknowledged");
    unlink(ahold); /* the log takes them again */
    lux_shutdown(&lx);
    return done_testing();
}

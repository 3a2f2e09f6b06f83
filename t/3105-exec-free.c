/* 3105-exec-free: refs freed before their tasks finish. A driver that
   calls and frees at once (it wanted the side effect, or gave up on the
   value) must not leave the outputs owned in the node manager for ever:
   once made and handed to whoever waits for them, they go. Here 48 tasks
   each make 1 MB in a 16 MB store and are freed as soon as called; then
   24 more are called and read one by one. Were the first outputs kept,
   the store would have to drop them (object_lost in the log) to make
   room for the others; none may be dropped, and every value read must be
   right. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "util/util_err.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define S_MB (1 << 20)

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 16 << 20,
                        .workers = 2};
    char dir[PATH_MAX];
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default with a 16 MB object store");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());

    int bad = 0;
    for (int i = 0; i < 48; i++) {
        lux_ref_t ref;
        if (graph_call_big(lx, 1000 + i, S_MB, &ref)) {
            bad++;
            continue;
        }
        lux_free(lx, 1, &ref);
    }
    is_int(bad, 0, "48 calls of a 1 MB task, each ref freed at once");

    int wrong = 0;
    for (int i = 0; i < 24; i++) {
        lux_ref_t ref;
        lux_val_t v;
        if (graph_call_big(lx, 5000 + i, S_MB, &ref) || lux_get(lx, &ref, &v, 60000)) {
            diag("task %d: %s", i, lux_errmsg());
            wrong++;
            continue;
        }
        wrong += !graph_big_ok(&v, 5000 + i, S_MB);
        lux_free(lx, 1, &ref);
    }
    is_int(wrong, 0, "then 24 more, each read and checked before the next");
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    db_query_t *q = fx_query_open(dir);
    ok(q != NULL, "open the run's log");
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE function = 't_big' AND "
                       "status = 'finished'"),
           72, "all 72 tasks finished");
    is_int(fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_lost'"), 0,
           "no output was dropped to make room: the freed ones were gone");
    db_query_close(&q);
    return done_testing();
}

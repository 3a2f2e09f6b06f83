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
#include "db/db_query.h"
#include "util/util_err.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#define S_MB (1 << 20)

static int
s_call_big(lux_t *lx, int64_t seed, lux_ref_t *ref)
{
    int64_t n = S_MB;
    lux_arg_t args[2] = {LUX_VAL(&seed, 8), LUX_VAL(&n, 8)};
    return lux_call(lx, "t_big", 2, args, 1, ref);
}

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
        if (s_call_big(lx, 1000 + i, &ref)) {
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
        int64_t seed = 5000 + i, got = 0;
        if (s_call_big(lx, seed, &ref) || lux_get(lx, &ref, &v, 60000)) {
            diag("task %d: %s", i, lux_errmsg());
            wrong++;
            continue;
        }
        if (v.size == S_MB)
            memcpy(&got, v.data, 8);
        const uint8_t *p = v.data;
        bool same = v.size == S_MB && got == seed;
        for (size_t k = 8; same && k < S_MB; k++)
            same = p[k] == (uint8_t) (seed * 31 + (int64_t) k);
        wrong += !same;
        lux_free(lx, 1, &ref);
    }
    is_int(wrong, 0, "then 24 more, each read and checked before the next");
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    db_cluster_t c;
    if (db_cluster_load(&c, dir))
        bail("%s", lux_errmsg());
    db_query_t *q = db_query_open(&c);
    ok(q != NULL, "open the run's log");
    if (!q)
        bail("%s", lux_errmsg());
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE function = 't_big' AND "
                       "status = 'finished'"),
           72, "all 72 tasks finished");
    is_int(fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_lost'"), 0,
           "no output was dropped to make room: the freed ones were gone");
    db_query_close(&q);
    return done_testing();
}

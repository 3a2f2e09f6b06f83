/* 3101-exec-graph: random task graphs (chains, fan-out and fan-in, nested
   submission, values and refs mixed, two returns, blobs in the store)
   run on the embedded default with a small object store, so objects are
   evicted, spilled and rebuilt along the way; every output must equal
   the same computation done here, sequentially; and the log must show
   the evictions, spills and rebuilds. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "db/db_query.h"
#include "util/util_err.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 16 << 20,
                        .workers = 2};
    char why[600], dir[PATH_MAX];
    graph_t g;
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default with a 16 MB object store");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    for (int round = 0; round < 2; round++) {
        int rc = graph_submit(lx, &g, 400, 1234 + (uint64_t) round, 1500000);
        is_int(rc, 0, "round %d: submit a random graph of 400 tasks and puts", round);
        if (rc)
            diag("%s", lux_errmsg());
        diag("puts %d, big puts %d, mix %d, split %d, big %d, check %d, nested %d",
             g.counts[G_PUT], g.counts[G_BIGPUT], g.counts[G_MIX], g.counts[G_SPLIT],
             g.counts[G_BIG], g.counts[G_CHECK], g.counts[G_NESTED]);
        int bad = graph_check(lx, &g, why, sizeof why);
        is_int(bad, 0, "round %d: every output equals the sequential computation%s%s", round,
               bad ? ": " : "", why);
        graph_free(&g);
    }
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    db_cluster_t c;
    if (db_cluster_load(&c, dir))
        bail("%s", lux_errmsg());
    db_query_t *q = db_query_open(&c);
    ok(q != NULL, "open the run's log");
    if (!q)
        bail("%s", lux_errmsg());
    ok(fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_lost'") > 0,
       "task outputs were dropped to make room (%lld)",
       (long long) fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_lost'"));
    ok(fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_spilled'") > 0,
       "puts were spilled to disk (%lld)",
       (long long) fx_count(q, "SELECT count(*) FROM events WHERE kind = 'object_spilled'"));
    ok(fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%'") > 0,
       "lost objects were rebuilt from their lineage (%lld)",
       (long long) fx_count(q, "SELECT count(*) FROM retries WHERE reason LIKE 'rebuild%%'"));
    is_int(fx_count(q, "SELECT count(*) FROM tasks WHERE status != 'finished'"), 0,
           "every task finished");
    ok(fx_count(q, "SELECT count(DISTINCT function) FROM tasks") >= 5,
       "the log has tasks of every function");
    ok(fx_count(q, "SELECT count(*) FROM tasks WHERE parent_id IN (SELECT task_id FROM tasks "
                  "WHERE function = 't_nested')") > 0,
       "nested tasks name their parent");
    db_query_close(&q);
    return done_testing();
}

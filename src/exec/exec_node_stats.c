/*  exec_node_stats - the node manager's state in a few "key value" lines,
    for its daemon's heartbeat (exec_members.h) and `lux status`: its ID,
    resources total and free, the store's use, workers and the queue.
    Asked by "STATS" on the node's command pipe (exec_node.h).
*/
#include "exec_node_stats.h"
#include "exec_node_int.h"

#include <stdio.h>
#include <unistd.h>

static size_t
s_res(const nm_t *nm, bool free_, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < nm->nres && k < n; i++)
        k += (size_t) snprintf(out + k, n - k, "%s%s=%g", i ? "," : "", nm->res[i].name,
                               (free_ ? nm->res[i].free : nm->res[i].total) / 1000.0);
    return k;
}

void
nm_stats_send(nm_t *nm)
{
    char hex[UTIL_ID_HEX], total[512], free_[512], text[2048];
    int busy = 0, actors = 0;
    uint64_t queued = nm->nready;
    for (nm_worker_t *w = nm->workers; w; w = w->next) {
        if (w->actor)
            actors++;
        else if (w->queue)
            busy++;
        queued += w->queued > 1 ? w->queued - 1 : 0; /* behind the running one */
    }
    s_res(nm, false, total, sizeof total);
    s_res(nm, true, free_, sizeof free_);
    snprintf(text, sizeof text,
             "node %s\npid %d\nendpoint %s\nresources %s\nfree %s\nstore_used %llu\n"
             "store_bytes %llu\nworkers %d\nbusy %d\nactors %d\nqueue %llu\n"
             "submitted %llu\nfinished %llu\nfailed %llu\ntable_waits %llu\n",
             util_id_hex(&nm->node, hex), (int) getpid(), nm->endpoint, total, free_,
             (unsigned long long) (exec_arena_used(nm->arena) + nm->inline_bytes),
             (unsigned long long) nm->store_bytes, nm->nworkers, busy, actors,
             (unsigned long long) queued, (unsigned long long) nm->n_submitted,
             (unsigned long long) nm->n_finished, (unsigned long long) nm->n_failed,
             (unsigned long long) nm->n_table_waits);
    zstr_send(nm->pipe, text);
}

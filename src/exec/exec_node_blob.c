/*  exec_node_blob - the node manager's half of recording puts for replay.

    Each new put is kept in the cluster's blob store (exec_blob.h) when it
    is no larger than the cluster's record_puts, before its object_put
    event is appended; the event's info says what became of its bytes
    (recorded, there already, over the limit, or the error), so that
    `lux replay` can say why a put it needs is missing. The write happens
    on the node's loop: a put is written once, and the limit bounds how
    long it takes (doc/DESIGN.md section 9 has the cost).
*/
#include "exec_node_int.h"
#include "exec_blob.h"
#include "../util/util_err.h"

#include <inttypes.h>
#include <stdio.h>

void
nm_blob_record(nm_t *nm, nm_obj_t *o, char *info, size_t n)
{
    uint64_t lim = nm->cluster.record_puts;
    if (o->size > lim) {
        snprintf(info, n, "not recorded: %" PRIu64 " bytes, over record_puts %" PRIu64,
                 o->size, lim);
        return;
    }
    char dir[PATH_MAX + 8];
    snprintf(dir, sizeof dir, "%s/blobs", nm->cluster.dir);
    const void *data = o->where == EXEC_W_ARENA ? (const void *) (exec_arena_base(nm->arena) + o->off)
                                                : (const void *) o->bytes;
    int fresh;
    if (exec_blob_write(dir, o->fp, data, (size_t) o->size, &fresh))
        snprintf(info, n, "not recorded: %s", lux_errmsg());
    else
        snprintf(info, n, fresh ? "recorded" : "recorded (the same bytes were before)");
}

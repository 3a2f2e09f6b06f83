/*  exec_xfer - objects between nodes (see exec_xfer.h). */
#include "exec_xfer.h"
#include "exec_peer.h"
#include "../util/util_err.h"

#include <stdlib.h>

struct nm_xfer {
    uint64_t n_done, n_failed, bytes;
};

int
nm_xfer_open(nm_t *nm)
{
    if (!nm_peer_up(nm))
        return 0;
    if (!(nm->xfer = calloc(1, sizeof *nm->xfer)))
        return util_err(LUX_ENOMEM, "out of memory");
    return 0;
}

void
nm_xfer_close(nm_t *nm)
{
    free(nm->xfer);
    nm->xfer = NULL;
}

bool
nm_xfer_on(nm_t *nm)
{
    return nm->xfer != NULL;
}

int
nm_xfer_pull(nm_t *nm, const lux_ref_t *id, int prio, nm_xfer_done_fn *done, void *arg)
{
    (void) id, (void) prio, (void) done, (void) arg;
    if (!nm_xfer_on(nm))
        return util_err(LUX_EINVAL, "this node has no tcp endpoint: objects do not move "
                        "between the nodes of an ipc cluster");
    return util_err(LUX_ENOSYS, "pulling objects from other nodes is not built yet");
}

void
nm_xfer_forget(nm_t *nm, nm_xfer_done_fn *done, void *arg)
{
    (void) nm, (void) done, (void) arg;
}

void
nm_xfer_tick(nm_t *nm)
{
    (void) nm;
}

void
nm_xfer_counts(nm_t *nm, uint64_t *done, uint64_t *failed, uint64_t *bytes)
{
    struct nm_xfer *x = nm->xfer;
    *done = x ? x->n_done : 0;
    *failed = x ? x->n_failed : 0;
    *bytes = x ? x->bytes : 0;
}

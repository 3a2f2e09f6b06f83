/*  exec_head - the embedded default (DESIGN section 2): lux_init with no
    address starts a private cluster inside the calling process - the chain
    master, one replica of each log shard, and a node manager with a worker
    process per core - in a new run directory, and lux_shutdown stops it.
    The run directory, with its log, stays: `lux sql --dir` it afterwards.
*/
#ifndef EXEC_HEAD_H_INCLUDED
#define EXEC_HEAD_H_INCLUDED

#include "../lux.h"
#include "../db/db_cluster.h"

#include <czmq.h>

typedef struct exec_head exec_head_t;

/* Start one. NULL with the message set. */
exec_head_t *exec_head_start(const lux_config_t *cfg);
void exec_head_stop(exec_head_t **self_p);
/* The node manager's endpoint for a client in this process. */
const char *exec_head_endpoint(exec_head_t *self);
const db_cluster_t *exec_head_cluster(exec_head_t *self);

#endif

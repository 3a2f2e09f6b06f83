/*  exec_node - the node manager (DESIGN sections 2, 7, 8): a component that
    runs a node's tasks.

    It takes task submissions from clients (drivers, and workers submitting
    nested tasks), keeps them until their arguments are ready and a worker
    with the resources is free, hands them to worker processes in batches,
    owns the node's shared-memory object store (eviction, spilling), tells
    each client about the objects it owns or asked for, retries tasks whose
    worker died, rebuilds lost objects from the lineage in the log, and
    records every task and object as events in the log, without making any
    task wait for the log.

    Clients on its machine connect to the unix socket SOCKDIR/node
    (net_link); it spawns `lux worker` processes.
*/
#ifndef EXEC_NODE_H_INCLUDED
#define EXEC_NODE_H_INCLUDED

#include "../db/db_cluster.h"

#include <czmq.h>

typedef struct {
    const db_cluster_t *cluster; /* the cluster (copied) */
    int workers;                 /* worker processes to keep (0: one per core) */
    uint64_t store_bytes;        /* object store size (0: default) */
    const char *resources;       /* "CPU=2,GPU=1" (NULL: CPU = cores; GPU, when not
                                    given, is what exec_gpu_detect finds) */
    const char *address;         /* the node's address in node_joined (NULL: its
                                    socket's path) */
} exec_node_opts_t;

/* Start a node manager; NULL with the message set. Its pipe takes
   "STATS", answered with one string: its state as "key value" lines
   (node ID, pid, resources total and free, store used and size, workers,
   queue: exec_node_stats.c), what its daemon's heartbeat carries. */
zactor_t *exec_node_new(const exec_node_opts_t *opts);

/* The endpoint clients connect to (ipc), into out[n]. */
char *exec_node_endpoint(const db_cluster_t *c, char *out, size_t n);

/* The default object store size on this machine (a quarter of RAM, at
   most 8 GiB). */
uint64_t exec_node_default_store(void);

/* --- for the node manager's parts (exec_node_int.h) --------------------------------- */

struct nm;
struct nm_client;
struct nm_conn;

/* A client left or died: drop its pins, grants and waiting ALLOCs, disown
   its objects, and free it. */
void nm_client_gone(struct nm *nm, struct nm_client *c);

/* Read what a dead worker's connection still holds (its last results). */
void nm_conn_drain(struct nm *nm, struct nm_conn *conn);

#endif

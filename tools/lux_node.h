/*  lux_node - a cluster's machines, for the lux command (lux_node.c). */
#ifndef LUX_NODE_H_INCLUDED
#define LUX_NODE_H_INCLUDED

#include "lux_opt.h"
#include "db/db_cluster.h"
#include "exec/exec_node.h"
#include "net/net_ep.h"

#include <czmq.h>
#include <stdbool.h>

/* The node manager's options every command that runs one takes (lux node,
   lux supervise): --workers N (w), --store-mb N (m), --resources R (R),
   checked (lux_opt_uint, lux_opt_resources) into *no. For option o (its
   optarg): 1 when it was one of them, 0 when not, -1 after a usage error
   (exit status 2). p is the command's lux_opt_t. */
int lux_node_opt(lux_opt_t *p, int o, exec_node_opts_t *no);

/* DIR/token, the file that lets a machine join (0600). */
char *lux_token_path(const db_cluster_t *c, char *out, size_t n);
/* Write the token of the tcp cluster c: its settings, its master's
   address and its CURVE key pair. 0 or a code. */
int lux_token_write(const db_cluster_t *c);

/* What `lux start --address` was given. */
typedef struct {
    const char *address;    /* the head's HOST:PORT */
    const char *dir;        /* the node's directory */
    const char *token_file; /* the cluster's token */
    const char *node_ip;    /* this node's address (NULL: the one that reaches the head) */
    unsigned workers;
    unsigned long store_mb;
    const char *resources;
    int timeout_ms;         /* for the head's answer and the node's joining */
    bool quiet;             /* print nothing (lux bench) */
} lux_join_args_t;

/* Start a node that joins the head: check the head answers with the
   token's keys, spawn `lux node`, wait until the head took its first
   heartbeat. 0 (a line printed) or a code with the message. */
int lux_node_start(const lux_join_args_t *a);
/* Whether dir is a node's directory (cluster.conf says "role node"). */
bool lux_node_dir(const char *dir);
/* Stop the node in dir (it leaves the cluster: node_left). */
int lux_node_stop(const char *dir, int timeout_ms);

/* The cluster to ask: from dir (a head's or a node's), or from the head's
   address and a token. *sec gets the keys (NULL for an ipc cluster). */
int lux_node_cluster(const char *dir, const char *address, const char *token, db_cluster_t *c,
                     net_sec_t **sec);
/* `lux status` away from the head's directory: chains from the master
   and nodes from the membership monitor. *events: the events the log
   holds (each chain's head's last seq, summed), for --watch's rate. */
int lux_node_status(const db_cluster_t *c, net_sec_t *sec, const char *address, bool json,
                    bool watch, uint64_t *events);
/* The nodes, from the membership monitor: a table, or `, "nodes": [...]`
   inside an object. rates (--watch): the table gets a column of the tasks
   each node finished a second since the call before. 0, or the code after
   printing why they are unknown. */
int lux_nodes_print(const db_cluster_t *c, net_sec_t *sec, bool json, bool rates);

/* A daemon's heartbeat to the head for its node manager node. */
typedef struct lux_beat lux_beat_t;
lux_beat_t *lux_beat_new(const db_cluster_t *c, net_sec_t *sec, const char *address,
                         const char *role);
void lux_beat_destroy(lux_beat_t **self_p);
/* Beat when due, read the answers; joined_file (or NULL) is written with
   the node's ID at the first OK. 0, or LUX_EDEAD when the head declared
   the node dead (the daemon stops). */
int lux_beat_tick(lux_beat_t *self, zactor_t *node, const char *joined_file);
/* The node's ID (hex), once known. */
/* Sleep until the next beat is due or the head answers (or a signal). */
void lux_beat_wait(lux_beat_t *self);
const char *lux_beat_node(const lux_beat_t *self);

int cmd_node(int argc, char **argv); /* internal: a joined node's daemon */

#endif

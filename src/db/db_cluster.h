/*  db_cluster - a log cluster's directory, its settings and its layout.

    `lux start --head --dir DIR` creates DIR with:
        cluster.conf          settings below, "key value" lines
        keys/                 the cluster's CURVE key pair (mode 0700)
        sock/                 ipc sockets (mode 0700), unless the path would
                              be too long for a Unix socket; then a private
                              directory under /tmp, named in cluster.conf
        log/                  one log file per daemon
        run/                  pid files
        master.state          the chain master's configuration (epochs and
                              chain order of every shard)
        shard-S/replica-I.db  the SQLite file of replica I of shard S
        blobs/                the puts recorded for replay, one LZ4 frame
                              each, named by the fingerprint of its bytes
                              (exec_node_blob.c)
    Every path of a cluster is computed here and nowhere else.
*/
#ifndef DB_CLUSTER_H_INCLUDED
#define DB_CLUSTER_H_INCLUDED

#include "../util/util_id.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define DB_MAX_SHARDS 256
#define DB_MAX_REPLICAS 7
#define DB_EP_MAX 160

enum db_ep_kind { DB_EP_APPEND, DB_EP_CHAIN, DB_EP_READ, DB_EP_PUB, DB_EP_N };

typedef struct {
    char dir[PATH_MAX];      /* the cluster directory (absolute) */
    util_id_t id;            /* cluster ID */
    uint32_t shards;         /* S */
    uint32_t replicas;       /* R */
    bool sync_full;          /* synchronous=FULL */
    int heartbeat_ms;        /* replica -> master heartbeat period */
    int dead_ms;             /* silence after which a replica is dead */
    char listen[DB_EP_MAX];  /* "ipc", or "tcp://HOST" for CURVE tcp */
    int master_port;         /* tcp port of the master (tcp only) */
    char sock_dir[PATH_MAX]; /* where ipc sockets live */
    bool node;               /* a node's directory (`lux start --address`): no log here;
                                listen and master_port are the head's */
    uint64_t record_puts;    /* the largest put recorded in blobs/ for replay, in
                                bytes (0: none; UINT64_MAX: every one) */
} db_cluster_t;

/* What `lux replay` needs of a put (its bytes) is recorded up to this size
   by default: 256 MiB holds ES's 64 MiB noise table with room, and bounds
   the node's one-off write of a put to about half a second (doc/DESIGN.md
   section 9). */
#define DB_RECORD_PUTS_DEFAULT ((uint64_t) 256 << 20)

/* Settings for a new cluster: defaults, then overrides. */
void db_cluster_defaults(db_cluster_t *c);

/* Create the directory tree, key pair and cluster.conf of a new cluster
   at c->dir (which must not hold one already). */
int db_cluster_create(db_cluster_t *c);

/* Parse a --record-puts LIMIT: a size in bytes with an optional K, M, G
   or T suffix (powers of 1024), "none" (0) or "all" (UINT64_MAX). 0, or
   LUX_EINVAL. */
int db_cluster_parse_size(const char *s, uint64_t *out);

/* Create the directory of a node that joins the head whose master is at
   c->listen (tcp://HOST) and c->master_port: cluster.conf ("role node"),
   log/, run/ and its own sock/. The keys are the caller's (net_sec_import
   into DIR/keys). 0 or a code with the message. */
int db_cluster_create_node(db_cluster_t *c);

/* Read DIR/cluster.conf; 0, or LUX_ENOTFOUND / LUX_ECORRUPT. */
int db_cluster_load(db_cluster_t *c, const char *dir);

/* Paths and endpoints. All write into out[n] and return out. */
char *db_cluster_path(const db_cluster_t *c, char *out, size_t n, const char *rel);
char *db_cluster_replica_db(const db_cluster_t *c, uint32_t shard, uint32_t index, char *out,
                            size_t n);
/* The endpoint a replica binds for kind (for tcp, HOST:* - the port is
   chosen at bind, and the replica reports it to the master with an
   address peers can connect to: net_advertise). */
char *db_cluster_replica_ep(const db_cluster_t *c, uint32_t shard, uint32_t index, int kind,
                            char *out, size_t n);
/* The master's ROUTER and PUB, to connect to (for tcp on a wildcard
   listen host such as 0.0.0.0, this machine's address: net_host_address). */
char *db_cluster_master_ep(const db_cluster_t *c, char *out, size_t n);
char *db_cluster_master_pub(const db_cluster_t *c, char *out, size_t n);
/* The master's ROUTER (pub false) or PUB, to bind: the listen host as it is. */
char *db_cluster_master_bind(const db_cluster_t *c, bool pub, char *out, size_t n);
bool db_cluster_tcp(const db_cluster_t *c);
/* The membership endpoint of the head (exec_members: nodes' heartbeats,
   `lux status`): tcp on master_port + 2, else ipc SOCKDIR/members. bind:
   the listen host as it is, else the address to connect to. */
char *db_cluster_members_ep(const db_cluster_t *c, bool bind, char *out, size_t n);

/* A node manager's own tcp endpoint (exec_peer.h: objects and tasks
   between nodes) is on its node's address at the head's --port plus this,
   on every node: one port for a firewall to open on each machine. */
#define DB_NODE_PORT_OFFSET 3
/* That endpoint for the node at host (its address): tcp://HOST:PORT, or
   NULL when the cluster is not tcp or host is empty. */
char *db_cluster_node_ep(const db_cluster_t *c, const char *host, char *out, size_t n);
/* The head's node manager's endpoint, to connect to (as
   db_cluster_master_ep: a wildcard listen host becomes this machine's
   address); NULL when the cluster is not tcp. */
char *db_cluster_head_node_ep(const db_cluster_t *c, char *out, size_t n);

#endif

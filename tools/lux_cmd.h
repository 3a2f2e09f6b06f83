/*  lux_cmd - the subcommands of the lux command, and what they share. */
#ifndef LUX_CMD_H_INCLUDED
#define LUX_CMD_H_INCLUDED

#include "db/db_ckpt.h"
#include "db/db_cluster.h"
#include "net/net_ep.h"

#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/types.h>

int cmd_start(int argc, char **argv);
int cmd_stop(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_sql(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_compact(int argc, char **argv);
int cmd_replay(int argc, char **argv);
/* lux pull's work, for the command and `lux bench`: copy the log of the
   cluster in dir (through the protocol when address is set or its head
   runs, else from its files) into out. 0 or a code with the message. */
typedef struct {
    const char *dir;   /* the cluster's directory */
    bool address;      /* through the protocol even if no head is found */
    const char *job;   /* keep one job's events (32 hex digits), or NULL */
    uint64_t since;    /* a new file starts each shard here (0, 1: from 1) */
    const char *out;   /* the file */
    const char *witness;    /* signed checkpoints: this file, or NULL for DIR/witness */
    const db_ckpt_keys_t *keys; /* the keys believed (every --public-key given),
                                   or NULL for the cluster's own */
} lux_pull_opts_t;
typedef struct {
    uint64_t verified, kept; /* events read and verified, and stored */
    uint64_t checkpoints;    /* signed checkpoints verified against them */
    bool unsigned_;          /* a witness but no public key: none checked */
    uint32_t shards;
    bool net;                /* read through the protocol */
    double seconds;
    char dir[PATH_MAX];
    char lasts[512];         /* each shard's last seq, ", " between */
    uint64_t blobs, blob_bytes; /* recorded puts copied into blobs/ beside the file */
    uint64_t blobs_missing;  /* puts the log says were recorded, not in DIR/blobs */
} lux_pull_stats_t;
int lux_pull_run(const lux_pull_opts_t *o, lux_pull_stats_t *stats);

/* `lux audit OUT.db [--public-key K]`: verify a file `lux pull` wrote
   (with pk, DB_CKPT_PK_LEN bytes or NULL, the signatures of the
   checkpoints it holds); the exit status. */
int lux_pull_audit(const char *path, const db_ckpt_keys_t *keys);
/* A value of a pulled file's meta table (false when it has none). */
bool lux_pull_meta_get(sqlite3 *db, const char *key, char *out, size_t n);
int cmd_lineage(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_supervise(int argc, char **argv); /* internal: the head's daemon */
int cmd_replica(int argc, char **argv);   /* internal: one replica's daemon */
int cmd_run(int argc, char **argv);
/* lux_run_remote.c: `lux run --address HOST:PORT` starts a node of its own
   that joins the cluster there (token: the cluster's token file, or NULL;
   node_ip: the address it is reached at, or NULL), its directory into
   dir[n]: 0, or a code with the message (the join's own reason). */
bool lux_run_is_remote(const char *address);
int lux_run_node_up(const char *address, const char *token, const char *node_ip, char *dir,
                    size_t n);
/* Stop that node (node_left) and remove its directory. */
void lux_run_node_down(const char *node_dir);
int cmd_worker(int argc, char **argv);    /* internal: a node manager's worker */
int cmd_bench_client(int argc, char **argv); /* internal: a driver for multi_client_tasks_async */

/* Print "lux CMD: message" to stderr; returns 1 (the exit status). */
int lux_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print a usage error and return 2. */
int lux_usage(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write a JSON string literal. */
void lux_json_str(FILE *f, const char *s);

/* The head's own node manager: what `lux start` passes to its supervisor. */
typedef struct {
    bool log_only;           /* no node manager: the log alone */
    unsigned workers;        /* 0: one per core */
    unsigned long store_mb;  /* 0: the default */
    const char *resources;   /* NULL: CPU = cores */
    const char *witness;     /* signed checkpoints' witness file (NULL: DIR/witness) */
    long checkpoint_s;       /* a checkpoint at least this often (0: the default, 10;
                                -1: only at a clean stop) */
    long checkpoint_events;  /* ...and every so many events (0: the default, 100000;
                                -1: not by count) */
    const char *compact_after; /* lux compact --before this AGE, run in the background
                                  (NULL: never) */
} lux_node_args_t;

/* "30s", "10m", "1h", "2d" -> ns; false when not an age (lux_compact.c) */
bool lux_parse_age(const char *v, int64_t *ns);

/* Start a head in dir (created if new with the settings in c, else the
   existing one), wait until every chain serves; 0 or a LUX_E* code. Used
   by `lux start` and by benchmarks and tests that need a private cluster.
   node: the head's node manager (NULL: the defaults). */
int lux_head_start(db_cluster_t *c, bool create, int timeout_ms, const lux_node_args_t *node);
/* Stop the head in dir; 0 or a code. */
int lux_head_stop(const char *dir, int timeout_ms);
/* Whether the head of dir is running (its supervisor's pid, or 0). */
int lux_head_pid(const char *dir);
/* The keys of a cluster on TCP (NULL on ipc, or when they cannot be read). */
net_sec_t *lux_head_sec(const db_cluster_t *c);
/* The pid of replica s.i left running by an earlier supervisor (its
   pidfile names a live process that holds its lock), or 0. */
pid_t lux_head_replica_running(const db_cluster_t *c, uint32_t s, uint32_t i);
/* Free bytes on its disk for a failed replica to retry. */
#define LUX_REPLICA_ROOM (1u << 20)

/* The pids of a running head's replicas (shard * R + index; 0 when not
   known) and of its master. 0 or a code. */
int lux_head_pids(const db_cluster_t *c, int *replica_pids, int *master_pid);

/* Parse a positive integer option; false (with a message) if malformed. */
bool lux_parse_uint(const char *cmd, const char *opt, const char *s, unsigned long max,
                    unsigned long *out);

#endif

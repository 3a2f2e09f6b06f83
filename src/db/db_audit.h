/*  db_audit - checks a cluster's log across the replicas of each shard and
    against the signed checkpoints of a witness file (`lux audit`, and the
    warnings of `lux sql`). Run on a stopped cluster for a verdict; on a
    running one the files move under it, and what it says is a snapshot.

    What counts as a problem (each reported with shard, file and seq):
      - a file that is missing, will not open, or whose hash chain breaks;
      - a fork: a file holding other events than the longest chain member
        at a common seq (reported at the first such seq), unless the file
        is out of the chain and the fork lies past what the chain had
        committed when the master removed it (master.state's out line,
        db_chain.h): a head's events never forwarded, dropped when it
        rejoins, a note;
      - a chain member that ends before the tail (a member holds whatever
        its successors hold: commit before forward);
      - a file more than `window` events behind the longest one;
      - a chain member or the tail ending before the newest signed
        checkpoint (events were cut), or any file whose hash at a
        checkpoint's seq is not the signed one (rewritten); the signed
        checkpoints are the witness's and the log's own `checkpoint`
        events (kind 20);
      - a witness line that does not parse, is another cluster's, or
        whose signature does not verify with any of the public keys;
      - a checkpoint event whose info is not a checkpoint of this cluster
        and shard signing a seq below its own (its idx), whose signature
        fails, that signs another hash than the witness at the same seq,
        or that the witness lacks although it holds a later checkpoint of
        the shard (lines removed from the witness). */
#ifndef DB_AUDIT_H_INCLUDED
#define DB_AUDIT_H_INCLUDED

#include "db_ckpt.h"

/* The head stops taking appends with this many events in flight beyond
   the tail (db_replica.c): how far a replica may lag legitimately. */
#define DB_AUDIT_WINDOW 262144

typedef struct {
    const db_cluster_t *cluster;
    const db_ckpt_keys_t *keys; /* the public keys believed (a signature verifies
                                   with any), or NULL: no checkpoint checks */
    const char *witness;        /* a witness file, or NULL */
    uint64_t window;            /* 0: DB_AUDIT_WINDOW */
    bool quick;                 /* no hash-chain verification, no fork search: last
                                   seqs and checkpoints only (lux sql) */
    /* every finding (problem true) and note, one line without newline */
    void (*say)(void *arg, bool problem, const char *line);
    void *arg;
} db_audit_opts_t;

typedef struct {
    uint32_t tail;           /* the tail's index (master.state), UINT32_MAX unknown */
    uint64_t tail_last;      /* its last seq */
    uint64_t max_last;       /* the longest file's last seq */
    uint64_t ckpt_seq;       /* the newest verified checkpoint's seq, 0 none */
    char ckpt_src[PATH_MAX + 64]; /* where it is: a witness line, or a checkpoint event */
} db_audit_shard_t;

/* Audit every shard. Returns the number of problems (0: the log passed),
   or a negative LUX_E* code when the audit itself could not run.
   shards: cluster->shards entries filled in, or NULL. */
int db_audit_run(const db_audit_opts_t *o, db_audit_shard_t *shards);

#endif

/*  db_archive - old events of a shard moved out of its live replica files
    into one archive file beside them (doc/DESIGN.md section 4, "Retention"),
    compressed with lz4 at rest (db_archive.c).

    The archive of shard S is DIR/shard-S/archive.db: a log file of the same
    format as a replica's (sql/schema.sql, db_store), holding seq 1..A of
    the shard, so that its chain verifies from the genesis with the same
    code. A replica file whose events up to B (B <= A) were archived says
    so in its meta table (base_seq B, base_hash: the chain hash at B); its
    own chain continues from that hash. Readers take the archive's events
    up to B and the file's after B: db_store reads, hash lookups and
    verification do (db_store.c), `lux sql` attaches both (db_query.c).

    Compaction (db_archive_compact) is crash-safe in three steps, each
    committed before the next: the events are appended to the archive;
    each replica's base moves up; the replica's rows at or below its base
    are deleted in small transactions. Killed between any two, the log
    reads the same (rows at or below the base are ignored), and a second
    run finishes the job.

    It runs beside a running cluster: the replicas keep appending (each
    step takes the file's write lock for one short transaction), and a
    db_store handle that misses rows a compaction deleted under it reads
    the base again and goes to the archive (db_store.c s_base_moved). Rows
    above the file's seen_seq stay until a later run (see s_trim). One
    compaction at a time per cluster: lux compact holds DIR/run/compact.lock.
*/
#ifndef DB_ARCHIVE_H_INCLUDED
#define DB_ARCHIVE_H_INCLUDED

#include "db_cluster.h"
#include "db_event.h"
#include "../util/util_buf.h"

#include <stdbool.h>
#include <stdint.h>

/* The archive beside a replica file (its directory's archive.db; at rest
   its lz4 frame archive.db.lz4, see db_archive.c). */
char *db_archive_path_of(const char *replica_path, char *out, size_t n);

/* Whether the replica file has an archive beside it (either form). */
bool db_archive_present(const char *replica_path);

/* The SQLite file an archive's lz4 frame (zpath) holds, decompressed
   (its checksum verified) into *image (sqlite3_malloc64'd, for
   sqlite3_deserialize or db_store's image option; its header marked as a
   rollback-journal file). 0, or an error naming the file. */
int db_archive_image(const char *zpath, void **image, size_t *len);

/* Events from..upto of the archive beside replica_path, as db_store_read
   gives them (u32 length, record), at most max and about max_bytes.
   LUX_ENOTFOUND when there is no archive or it ends before upto. */
int db_archive_read(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                    uint64_t from, uint64_t upto, uint32_t max, size_t max_bytes,
                    util_buf_t *out, uint32_t *count);

/* The chain hash at seq in the archive beside replica_path. */
int db_archive_hash_at(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                       uint64_t seq, uint8_t out[DB_HASH_LEN]);

/* db_store_find and db_store_actor_events in the archive beside
   replica_path (LUX_ENOTFOUND when there is none); the actor's events only
   up to `upto` (the live file's base), *stopped when cb asked to stop. */
int db_archive_find(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                    const util_id_t *task, int kind, util_buf_t *out, uint64_t *seq);
int db_archive_actor_events(const char *replica_path, const util_id_t *cluster, uint32_t shard,
                            const util_id_t *actor, int kind, uint64_t after, uint64_t upto,
                            int (*cb)(void *arg, const db_event_t *e), void *arg, bool *stopped);

typedef struct {
    uint64_t before_seq;  /* move events with seq < this (0: not by seq) */
    int64_t before_ns;    /* ...or with ts < this, ns since the epoch (0: not by time) */
    uint32_t batch;       /* rows deleted per transaction (0: 4096) */
    bool stop_after_archive; /* for tests: stop after step 1 (a cut-short compaction) */
    void (*hold)(const char *step); /* for tests: called after "archive" (step 1 of a shard),
                                       "base" (step 2 of a file) and "delete" (each full
                                       batch of step 3), where a test kills the process */
} db_archive_opts_t;

typedef struct {
    uint64_t moved;       /* events appended to archives */
    uint64_t deleted;     /* rows deleted from replica files */
    double seconds;
} db_archive_stats_t;

/* Compact every shard of the cluster (see above). Never beyond the seq
   every replica file of the shard holds, nor the tail's. 0 or a code
   naming the shard and file. */
int db_archive_compact(const db_cluster_t *c, const db_archive_opts_t *o,
                       db_archive_stats_t *stats);

/* Verify shard's archive (its chain from the genesis) and that it
   continues into the replica file at path (its base hash is the archive's
   hash there). 0 (also when there is no archive and the file has no
   base), or LUX_ECORRUPT naming the seq in *bad_seq. */
int db_archive_verify(const db_cluster_t *c, uint32_t shard, const char *replica_path,
                      uint64_t *bad_seq, uint64_t *events);

#endif

/*  db_store - one replica of one shard of the log: a SQLite file.

    A store appends events in seq order inside transactions (the caller
    groups batches into one transaction: group commit), reads ranges back
    as canonical records, truncates a suffix that was never acknowledged
    (when a restarted replica rejoins), and verifies the hash chain.

    One db_store_t is used by one thread. Several stores (in several threads
    or processes) may open the same file: one writer, any number of readers
    (WAL mode).
*/
#ifndef DB_STORE_H_INCLUDED
#define DB_STORE_H_INCLUDED

#include "db_event.h"

#include <sqlite3.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct db_store_t db_store_t;

typedef struct {
    const char *path;        /* the SQLite file */
    util_id_t cluster;       /* the file must belong to this cluster... */
    uint32_t shard;          /* ...and shard (checked, recorded when new) */
    bool readonly;           /* open read-only (`lux sql`, tests) */
    bool reader;             /* open read-write but leave the schema alone:
                                the replica's thread that serves reads and
                                runs checkpoints (which need write access) */
    bool sync_full;          /* synchronous=FULL instead of NORMAL */
    bool external_checkpoint; /* another connection runs checkpoints */
    void *image;             /* with readonly: the file's bytes, not read from path
                                (which names them in messages): sqlite3_malloc64'd,
                                taken by the store (freed at close or on failure);
                                a rollback-journal header (bytes 18-19 are 1, not WAL's 2) */
    size_t image_len;
} db_store_opts_t;

/* Open or create a store. NULL on failure, with the error message set
   (missing file when read-only, not a Lux file, another cluster's file). */
db_store_t *db_store_open(const db_store_opts_t *opts);
void db_store_close(db_store_t **self_p);

/* The last seq in the store (0 when empty) and its chain hash (the
   genesis when empty). Kept current by this handle's writes; a reader
   calls db_store_refresh() to see other connections' commits. */
uint64_t db_store_last_seq(db_store_t *self);
const uint8_t *db_store_last_hash(db_store_t *self);
int db_store_refresh(db_store_t *self);

/* Where this file's events start: the events up to the returned seq were
   moved into the shard's archive (db_archive.h; 0: none), and hash (may be
   NULL) gets the chain hash at that seq (the genesis when 0). Reads and
   hash_at below it go to the archive; verify starts after it. */
uint64_t db_store_base(db_store_t *self, uint8_t hash[DB_HASH_LEN]);

/* The genesis hash of this store's shard. */
const uint8_t *db_store_genesis(db_store_t *self);

/* Write path: begin, put records in seq order, commit. db_store_put takes
   one canonical record whose seq must be last_seq + 1; LUX_EGAP when not,
   LUX_ECORRUPT when it does not decode. On any error the caller rolls back.
   Commit also records the newest event ID of each client seen. */
int db_store_begin(db_store_t *self);
int db_store_put(db_store_t *self, uint64_t seq, const uint8_t *rec, size_t n);
int db_store_commit(db_store_t *self);
void db_store_rollback(db_store_t *self);

/* Read up to max events from seq `from`, appending each as (u32 length,
   record) to out, stopping early once out has grown by max_bytes. Sets
   *count to the number read. 0, or LUX_ECORRUPT when a row is damaged. */
int db_store_read(db_store_t *self, uint64_t from, uint32_t max, size_t max_bytes,
                  util_buf_t *out, uint32_t *count);

/* The first event of `kind` about `task` (by the task index): its record
   appended to out (as a bare record, no length), its seq in *seq. 0 or
   LUX_ENOTFOUND. */
int db_store_find(db_store_t *self, const util_id_t *task, int kind, util_buf_t *out,
                  uint64_t *seq);

/* Every event of `kind` about actor (by the actor index) whose idx is
   above after, in log order: cb(arg, e) for each (e's pointers valid
   during the call; cb returns nonzero to stop). 0 or a code. */
int db_store_actor_events(db_store_t *self, const util_id_t *actor, int kind, uint64_t after,
                          int (*cb)(void *arg, const db_event_t *e), void *arg);

/* The chain hash stored at seq; LUX_ENOTFOUND when there is no such seq. */
int db_store_hash_at(db_store_t *self, uint64_t seq, uint8_t out[DB_HASH_LEN]);

/* Delete every event after seq (an unacknowledged suffix) and rebuild the
   client table from what remains. */
int db_store_truncate(db_store_t *self, uint64_t after);

/* The newest (cseq, seq) recorded for each client. fn returns nonzero to
   stop. 0, the code of a failed read of the table, or what fn returned
   when it stopped. */
int db_store_clients(db_store_t *self,
                     int (*fn)(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq),
                     void *arg);

/* Verify the whole chain: seqs dense from 1, each row re-encodes to a
   record whose chain hash is the stored one. 0, or LUX_ECORRUPT with the
   first bad seq in *bad_seq and a message saying what is wrong. */
int db_store_verify(db_store_t *self, uint64_t *bad_seq);

/* Copy the WAL back into the file, from a connection that is not
   writing. PASSIVE (full false) copies what it can without holding the
   writer up. FULL holds the writer off while it copies the rest, if it
   can take the locks at once (else it copies what it can, as PASSIVE):
   the writer's next transaction then starts the WAL again from its
   beginning instead of growing it (unless a reader is still in it).
   *copied (may be NULL): how many of the WAL's frames are copied back
   now, from its start.
   Returns 0, or 1 when a lock it needed was busy (it copied what it could:
   not an error), or an error code. */
int db_store_checkpoint(db_store_t *self, bool full, int *copied);

/* After every commit on this connection, store the WAL's size in pages in
   *pages (for a checkpointing thread to decide when to run). */
void db_store_watch_wal(db_store_t *self, _Atomic uint64_t *pages);
/* The WAL's length in frames after this connection's last commit, as
   watched (0 when db_store_watch_wal was not called). */
uint64_t db_store_wal_frames(const db_store_t *self);

/* The cluster ID and shard recorded in the file. */
const util_id_t *db_store_cluster(db_store_t *self);
uint32_t db_store_shard(db_store_t *self);
const char *db_store_path(db_store_t *self);

/* The mapping between an event and the columns of `event` (sql/schema.sql),
   for other files of the same columns (`lux pull`'s): bind seq and e to
   parameters 1 to 23 of st, in the order seq, ts, kind, client, cseq, job,
   task, parent, actor, node, idx, worker, attempt, status, t_start, t_end,
   size, name, info, fp, deps, body, hash (the pointers must outlive the
   step); and rebuild e from result columns 0 to 22 of st in that order
   (0, or LUX_ECORRUPT naming where; e's pointers valid until the next
   step). */
void db_store_bind_event(sqlite3_stmt *st, uint64_t seq, const db_event_t *e);
int db_store_row_event(sqlite3_stmt *st, db_event_t *e, const char *where);

/* Embedded text of the files in sql/ (generated by tools/sql2c.sh). */
extern const char db_sql_base[];
extern const char db_sql_schema[];
extern const char db_sql_views[];
extern const char db_sql_lineage[];

#endif

/*  db_seen - the newest event ID of each client in a log store.

    A store (db_store.c) keeps, for each client that appends to its shard,
    the newest event ID (cseq) it holds from that client and its seq: the
    replica decides by it what a resent event is (db_replica_append.c,
    IDEMPOTENCE). This is that table: a map in memory, and the table
    client_seen in the file (sql/schema.sql) with meta seen_seq, the seq up
    to which client_seen is exact.

    The store's transaction stages each event's ID (db_seen_note); its
    commit merges them into the map and, when due, writes the changed rows
    and seen_seq inside the same transaction (db_seen_commit); its rollback
    reads the map again from the file (db_seen_rollback).

    One db_seen_t belongs to one db_store_t and is used by its thread.
*/
#ifndef DB_SEEN_H_INCLUDED
#define DB_SEEN_H_INCLUDED

#include "../util/util_id.h"

#include <sqlite3.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct db_seen_t db_seen_t;

/* A table for the store on connection db, whose file is path (both
   borrowed: they outlive it). Nothing is read yet. NULL when memory ran
   out, with the error message set. */
db_seen_t *db_seen_new(sqlite3 *db, const char *path);
void db_seen_destroy(db_seen_t **self_p);

/* (Re)build the map from the file: client_seen, then the events after
   seen_seq (at most a few seconds' worth). 0, or a code with a message
   (the map is then not loaded, and the next call that needs it loads it
   again). */
int db_seen_load(db_seen_t *self);

/* A new transaction: forget what the last one staged. */
void db_seen_begin(db_seen_t *self);

/* The open transaction holds event (client, cseq) at seq. 0, or
   LUX_ENOMEM. */
int db_seen_note(db_seen_t *self, const util_id_t *client, uint64_t cseq, uint64_t seq);

/* Inside the store's open transaction, whose newest event is last_seq,
   before its COMMIT: merge the staged IDs into the map and, when due (a
   number of events or a time since the last write, or `now`), write the
   changed rows of client_seen and seen_seq = last_seq. 0, or a code
   naming what failed: then the store must roll back (db_seen_rollback).
   When a write fails, SQLite may have rolled the transaction back by
   itself (on a full disk or an I/O error); this then writes nothing more,
   so that nothing runs, and commits, outside the transaction. */
int db_seen_commit(db_seen_t *self, uint64_t last_seq, bool now);

/* After the store's transaction was rolled back: read the map again from
   the file (a failed commit may have merged its events and marked rows
   written); when that fails, the next commit or db_seen_each loads it. */
void db_seen_rollback(db_seen_t *self);

/* Whether the map is loaded and client_seen in the file is exact only up
   to an event before last_seq (a commit with now would write it). */
bool db_seen_behind(db_seen_t *self, uint64_t last_seq);

/* Each client's newest (cseq, seq), loading the map when it is not. fn
   returns nonzero to stop. 0, the load's code, or what fn returned when
   it stopped. */
int db_seen_each(db_seen_t *self,
                 int (*fn)(void *arg, const util_id_t *client, uint64_t cseq, uint64_t seq),
                 void *arg);

#endif

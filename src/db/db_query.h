/*  db_query - the whole log as one read-only SQLite database.

    An in-memory database attaches the tail file of every shard read-only
    (as s0, s1, ...; the tail holds exactly the committed events), and
    defines temporary views of the same names as the per-shard views of
    sql/views.sql that span all shards, with a `shard` column in front:
    events, tasks, retries, objects, task_deps, actors, actor_calls, actor_restarts, nodes,
    jobs, and `event` for the raw rows. It also registers the table-valued
    function lineage(object_id), which walks from an object (40 hex digits,
    or 32 for a task) to every task it depends on, across shards, using the
    task index of each shard.

    It works whether the cluster runs or not: which replica is each shard's
    tail is read from master.state, which the chain master writes before it
    tells anyone.
*/
#ifndef DB_QUERY_H_INCLUDED
#define DB_QUERY_H_INCLUDED

#include "db_cluster.h"

#include <sqlite3.h>
#include <stdbool.h>

typedef struct db_query_t db_query_t;

/* Open the cluster's log; NULL with the message set. */
db_query_t *db_query_open(const db_cluster_t *cluster);
void db_query_close(db_query_t **self_p);

/* Open a file `lux pull` wrote (sql/pull.sql): attached read-only, its own
   views (the same names and columns, `shard` in front) and lineage(). NULL
   with the message set when it is missing or not such a file. */
db_query_t *db_query_open_pulled(const char *path);

/* The views of sql/views.sql for an `event` table (or view) with a
   `shard` column: views.sql's text with its shard markers expanded (see
   its header); `temp` makes them CREATE TEMP VIEW, else the views are
   made in the file. `view` non-NULL: only the statement that creates
   that view. A malloc'd string, or NULL (out of memory, or no such
   view). */
char *db_query_shardify(bool temp, const char *view);

/* A read of the log as it is now, until db_query_end: every statement
   between them sees the same events, each exactly once, whatever a
   compaction does meanwhile (the files' bases are read in one snapshot,
   held until the end, and the log is opened again first when an archive
   attached before ends below them). Without it each statement reads its
   own snapshot, and one whose base moved past the archive attached at
   prepare time fails ("run the query again") rather than miss events.
   0 or a code; a no-op on a pulled file. */
int db_query_begin(db_query_t *self);
int db_query_end(db_query_t *self);

/* Prepare one statement; refuses anything that would write (LUX_EREADONLY)
   and reports SQL errors with SQLite's message (LUX_ESQL). *tail is set
   past the statement, for scripts of several statements. */
int db_query_prepare(db_query_t *self, const char *sql, sqlite3_stmt **st, const char **tail);

/* The connection, for reading results (db_query_begin and
   db_query_prepare may open the log again: ask after them). */
sqlite3 *db_query_db(db_query_t *self);

/* How many shards. */
uint32_t db_query_shards(db_query_t *self);

/* Which replica file each shard's tail is, as attached. */
const char *db_query_file(db_query_t *self, uint32_t shard);

#endif

/*  lux_hist - a run's history as one read-only SQLite connection, whatever
    holds it: a cluster's (or a run's) directory, read through db_query
    (every shard's tail file attached), or a file made by `lux pull`
    (sql/pull.sql). Either way the connection has `event` with a `shard`
    column in front and the views of sql/views.sql over all shards, so the
    history commands (timeline, lineage) write their SQL once. */
#ifndef LUX_HIST_H_INCLUDED
#define LUX_HIST_H_INCLUDED

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct lux_hist_t lux_hist_t;

/* Open path: a directory with a cluster.conf, or a file `lux pull` wrote.
   NULL with the message set (lux_errmsg) saying which it took it for and
   what is wrong. */
lux_hist_t *lux_hist_open(const char *path);
void lux_hist_close(lux_hist_t **self_p);

/* The connection (read-only). */
sqlite3 *lux_hist_db(lux_hist_t *self);
/* How many shards the history has. */
uint32_t lux_hist_shards(lux_hist_t *self);
/* What was opened, for messages and metadata: "cluster DIR" or "file F". */
const char *lux_hist_what(lux_hist_t *self);

/* Prepare sql on the connection; NULL with the message set (LUX_ESQL). */
sqlite3_stmt *lux_hist_prepare(lux_hist_t *self, const char *sql);

/* Every later question about the same events, each once, whatever a
   compaction does meanwhile (db_query_begin): for a command that reads a
   run once; not for one that waits for new events. 0 or a code. */
int lux_hist_snapshot(lux_hist_t *self);

/* Test hook: LUX_TEST_SQL_GATE=DIR holds the command at `at`: "open"
   (lux sql between opening the log and its first statement; timeline,
   lineage and replay in lux_hist_snapshot, before it reads) or, when
   DIR/at says so, "statement" (lux sql's first statement begun and
   prepared, before its first row): it writes DIR/held and waits (up to
   120 s) until DIR/go exists, so that a test can end a compaction in that
   window (t/9156, t/9158). */
void lux_hist_test_gate(const char *at);

#endif

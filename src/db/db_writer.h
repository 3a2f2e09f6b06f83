/*  db_writer - the thread that writes a replica's SQLite file.

    Group commit: the writer takes the first batch it is given, then every
    batch already queued behind it (up to DB_WRITER_GROUP events), and
    commits them in one transaction. When idle, a single batch commits at
    once; under load, transactions grow by themselves. This keeps SQLite,
    the slowest step of an append, on a thread of its own while the
    replica's network thread decodes, hashes and forwards.

    The protocol on the actor's pipe is private to db_writer.c: use the
    functions below. A batch handed to db_writer_write stays the owner's,
    alive and unchanged, until a reply reports it committed.
*/
#ifndef DB_WRITER_H_INCLUDED
#define DB_WRITER_H_INCLUDED

#include "db_store.h"
#include "../net/net_wire.h"

#include <czmq.h>

#define DB_WRITER_GROUP 16384

/* Start a writer on store, which stays the caller's (close it after the
   writer is destroyed). The writer uses the store only between receiving a
   request and sending its reply, so the caller may use it directly
   whenever no request is outstanding: that is how a replica commits a
   small batch at once when the writer is idle, without a thread hop. */
zactor_t *db_writer_new(db_store_t *store);

/* Put every record of b into store's open transaction (what the writer
   does with each batch). 0 or the store's error. */
int db_writer_put(db_store_t *store, const net_batch_t *b);

/* Ask for a batch to be written. */
void db_writer_write(zactor_t *w, const net_batch_t *b);
/* Ask for everything after seq `after` to be deleted. */
void db_writer_truncate(zactor_t *w, uint64_t after);

/* Read one reply (call when the writer's socket is readable):
     'C'  committed; *seq the last seq committed
     'T'  truncated; *seq the last seq left, *code 0 or the error
     'E'  a write failed (*code, text): the writer writes no more
   Returns the reply's letter, or 0 for nothing or garbage. */
char db_writer_reply(zactor_t *w, uint64_t *seq, int *code, char *text, size_t n);

#endif

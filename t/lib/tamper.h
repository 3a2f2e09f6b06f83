/*  tamper - what the audit tests do to a stopped cluster's files, as
    someone who can write them would: copies of the cluster directory,
    SQL run on a replica file, and forgeries whose hash chain verifies
    (records edited, every hash after them recomputed with
    db_event_chain). Bails out (tap.h) on any failure: these build the
    case under test, they are not what is tested. */
#ifndef T_LIB_TAMPER_H_INCLUDED
#define T_LIB_TAMPER_H_INCLUDED

#include "db/db_event.h"
#include "db/db_store.h"
#include "util/util_buf.h"
#include "util/util_id.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Run a shell command; bail when it fails. */
void tamper_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fresh copy of the directory src named name under the test's scratch
   directory; its path in out. The audit builds every path from --dir, so
   a copy audits as the original. */
char *tamper_copy(const char *src, const char *name, char *out, size_t n);

/* DIR/shard-S/replica-I.db into out. */
char *tamper_db(const char *dir, uint32_t shard, uint32_t index, char *out, size_t n);

/* Run SQL on a replica file (read-write, outside any lux process). */
void tamper_exec(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last seq a replica file holds (0: none or unreadable). */
uint64_t tamper_last(const char *path);

/* The newest checkpoint event (kind 20) of the replica file at path: its
   seq in *at and the seq it signs (its idx) in *signs; false when the
   file holds none. */
bool tamper_newest_ckpt(const char *path, uint64_t *at, uint64_t *signs);

/* Called for each record of a file being forged: write a replacement
   record (its hash field is recomputed after) into out and return true,
   or return false to keep rec as it is. */
typedef bool(tamper_edit_fn)(void *arg, uint64_t seq, const uint8_t *rec, size_t n,
                             util_buf_t *out);

/* Rewrite the replica file at path with edit applied to its records and
   every chain hash recomputed from the genesis: a file that verifies on
   its own. */
void tamper_forge(const char *path, const util_id_t *cluster, uint32_t shard, tamper_edit_fn *edit,
                  void *arg);

/* Fills event i (0..n-1) of a tamper_store_append at seq (e is zeroed). */
typedef void(tamper_make_fn)(void *arg, int i, uint64_t seq, db_event_t *e);

/* Append n events made by make onto the end of the open store st in one
   transaction, each chained on the one before: what a replica's writer
   would have written (the store's tests check it, the audit tests plant
   a fork or an unknown kind with it). 0 or the store's code; nothing of
   the batch is kept on failure. Does not bail: the store's tests test
   the code. */
int tamper_store_append(db_store_t *st, int n, tamper_make_fn *make, void *arg);

/* One client of the log, writing notes: a tamper_make_fn whose arg is a
   tamper_client_t makes the client's next event (cseq counts up). */
typedef struct {
    util_id_t id;
    uint64_t cseq; /* the last cseq made */
} tamper_client_t;
tamper_make_fn tamper_client_make;

/* The client's row of st's client table: its newest (cseq, seq) in *cseq
   and *seq, both 0 when it has none. */
void tamper_client_seen(db_store_t *st, const util_id_t *client, uint64_t *cseq, uint64_t *seq);

/* An edit: the event at seq *(uint64_t *) arg one nanosecond later. */
tamper_edit_fn tamper_edit_ts;

#endif

/* 5014-checkpoint-event: a signed checkpoint is recorded in the log too
   (issue 26), as a `checkpoint` event of its own shard, whose info is the
   witness line: the log carries proofs of its own past that the public
   key alone checks.

   A 2-shard, 2-replica cluster signs a checkpoint every 40 events; the
   test appends 300 notes, then waits (30 s at most) until every shard's
   tail holds a checkpoint event, and checks for each one found: it is in
   the shard it names, its signature verifies with DIR/keys/checkpoint.public,
   its seq (idx) is below the event's own, the hash it signs is the
   file's at that seq, and the witness file has the same line. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;

static void
s_append(int n)
{
    db_client_t *cl = fx_client(&s_c, 16, 0);
    fx_notes_spread(cl, n, "an event to checkpoint", 50);
    db_client_destroy(&cl);
}

/* The newest checkpoint event of shard s in the tail's file (replica
   index tail): its seq, idx and info; false when there is none yet. */
static bool
s_find(uint32_t s, uint32_t tail, int64_t *seq, int64_t *idx, char *info, size_t n)
{
    char path[PATH_MAX];
    sqlite3 *db;
    sqlite3_stmt *st;
    bool found = false;
    db_cluster_replica_db(&s_c, s, tail, path, sizeof path);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return false;
    }
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_prepare_v2(db, "SELECT seq, idx, info FROM event WHERE kind = 20 ORDER BY seq "
                           "DESC LIMIT 1", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *seq = sqlite3_column_int64(st, 0);
        *idx = sqlite3_column_int64(st, 1);
        snprintf(info, n, "%s", (const char *) sqlite3_column_text(st, 2));
        found = true;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return found;
}

int
main(void)
{
    fx_start(&s_c, 2, 2, "--log-only --checkpoint-events 40 --checkpoint-s 0");
    if (!fx_wait_chain(&s_c, 0, 2, 60000) || !fx_wait_chain(&s_c, 1, 2, 60000))
        bail("the chains did not form");
    s_append(300);

    char pkpath[PATH_MAX], witness[PATH_MAX];
    uint8_t pk[DB_CKPT_PK_LEN];
    db_ckpt_public_path(&s_c, pkpath, sizeof pkpath);
    db_ckpt_witness_path(&s_c, witness, sizeof witness);
    if (db_ckpt_load_public(pkpath, pk))
        bail("public key: %s", lux_errmsg());

    for (uint32_t s = 0; s < 2; s++) {
        int64_t seq = 0, idx = 0;
        char info[512] = "";
        bool found = false;
        /* the supervisor signs once a second at most: wait for it */
        for (int64_t t0 = util_mono_ms(); !found && util_mono_ms() - t0 < 30000;) {
            found = s_find(s, 1, &seq, &idx, info, sizeof info) ||
                    s_find(s, 0, &seq, &idx, info, sizeof info);
            if (!found)
                usleep(100000);
        }
        if (!ok(found, "shard %u: a checkpoint event is in the log", s)) {
            skip("no event to check");
            skip("no event to check");
            skip("no event to check");
            skip("no event to check");
            continue;
        }
        db_ckpt_t c;
        bool parsed = db_ckpt_parse(info, &c) == 0;
        ok(parsed && c.shard == s && util_id_eq(&c.cluster, &s_c.id) && (int64_t) c.seq == idx,
           "shard %u: its info is a checkpoint of this cluster and shard at seq idx=%lld: %s", s,
           (long long) idx, info);
        ok(parsed && db_ckpt_verify(&c, pk), "shard %u: its signature verifies with the public "
           "key", s);
        /* the hash it signs is the file's at that seq */
        char path[PATH_MAX];
        uint8_t h[DB_HASH_LEN];
        db_cluster_replica_db(&s_c, s, 0, path, sizeof path);
        db_store_opts_t so = {.path = path, .cluster = s_c.id, .shard = s, .readonly = true};
        db_store_t *st = db_store_open(&so);
        bool same = st && parsed && db_store_hash_at(st, c.seq, h) == 0 &&
                    memcmp(h, c.hash, DB_HASH_LEN) == 0;
        db_store_close(&st);
        ok(same && idx < seq, "shard %u: it signs seq %lld, before its own seq %lld, with the "
           "hash the replica holds there", s, (long long) idx, (long long) seq);
        char *text = util_read_file(witness, NULL);
        ok(text && strstr(text, info), "shard %u: the witness file has the same line", s);
        free(text);
    }
    fx_stop(&s_c);
    return done_testing();
}

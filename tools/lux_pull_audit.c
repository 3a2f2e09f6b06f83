/*  lux_pull_audit - `lux audit OUT.db`: a file made by lux pull verified on
    its own, with no cluster: each shard's hash chain from the anchor the
    pull recorded, the job file's gaps, and the signed checkpoints the pull
    kept (their signatures with --public-key, and each signed hash against
    the event's), and the log's own checkpoint events the same way. Apart from lux_pull.c, which makes the file, because
    checking it needs none of the protocol. */

#include "lux_cmd.h"
#include "db/db_chain.h"
#include "db/db_ckpt.h"
#include "db/db_event.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_hash.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* --- lux audit OUT.db ------------------------------------------------------------------ */

/* The file's checkpoint table: each signature (with pk, when given) and
   each signed hash against the event's in the file. Problems printed;
   their count returned. */
static int
s_audit_checkpoints(sqlite3 *db, const util_id_t *cluster, const db_ckpt_keys_t *pk)
{
    sqlite3_stmt *st;
    int bad = 0, n = 0;
    /* a file of an older pull has no such table: nothing to check */
    if (sqlite3_prepare_v2(db, "SELECT c.shard, c.seq, c.hash, c.ts, c.sig, e.hash FROM"
                               " checkpoint c LEFT JOIN event e ON e.shard = c.shard AND"
                               " e.seq = c.seq ORDER BY c.shard, c.seq", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        db_ckpt_t c = {.cluster = *cluster, .shard = (uint32_t) sqlite3_column_int(st, 0),
                       .seq = (uint64_t) sqlite3_column_int64(st, 1),
                       .ts = sqlite3_column_int64(st, 3)};
        n++;
        if (sqlite3_column_bytes(st, 2) != 16 || sqlite3_column_bytes(st, 4) != DB_CKPT_SIG_LEN) {
            printf("shard %u: BROKEN: the checkpoint at seq %llu is malformed\n", c.shard,
                   (unsigned long long) c.seq);
            bad++;
            continue;
        }
        memcpy(c.hash, sqlite3_column_blob(st, 2), 16);
        memcpy(c.sig, sqlite3_column_blob(st, 4), DB_CKPT_SIG_LEN);
        if (pk && !db_ckpt_keys_verify(&c, pk)) {
            printf("shard %u: BROKEN at seq %llu: the checkpoint's signature fails (forged, "
                   "altered, or signed with another key)\n", c.shard,
                   (unsigned long long) c.seq);
            bad++;
        } else if (sqlite3_column_bytes(st, 5) == 16 &&
                   memcmp(sqlite3_column_blob(st, 5), c.hash, 16) != 0) {
            printf("shard %u: BROKEN at seq %llu: the event's hash is not the signed one: "
                   "events at or before it were changed\n", c.shard,
                   (unsigned long long) c.seq);
            bad++;
        }
    }
    sqlite3_finalize(st);
    if (n && !bad)
        printf("%d signed checkpoint%s match the events%s\n", n, n == 1 ? "" : "s",
               pk ? ", every signature verified" : " (signatures not checked: give --public-key)");
    return bad;
}

/* The log's own checkpoint events (kind 20) in the file, checked as
   `lux audit --dir` checks them (db_ckpt_check_event: this cluster, the
   shard it is in, a seq below its own that idx repeats, the signature
   with pk when given) and the hash each signs against the file's event at
   that seq, when the file holds it (a --job or --since pull may not).
   Problems printed; their count returned. */
static int
s_audit_ckpt_events(sqlite3 *db, const util_id_t *cluster, const db_ckpt_keys_t *pk)
{
    sqlite3_stmt *st;
    int bad = 0, n = 0, hashed = 0;
    if (sqlite3_prepare_v2(db, "SELECT c.shard, c.seq, c.idx, c.info, e.hash FROM event c LEFT"
                               " JOIN event e ON e.shard = c.shard AND e.seq = c.idx WHERE"
                               " c.kind = ?1 ORDER BY c.shard, c.seq", -1, &st, NULL) !=
        SQLITE_OK) {
        printf("%s: reading its checkpoint events: %s\n", sqlite3_db_filename(db, "main"),
               sqlite3_errmsg(db));
        return 1;
    }
    sqlite3_bind_int(st, 1, DB_K_checkpoint);
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint32_t shard = (uint32_t) sqlite3_column_int(st, 0);
        uint64_t at = (uint64_t) sqlite3_column_int64(st, 1);
        int64_t idx = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        db_ckpt_t c;
        n++;
        if (db_ckpt_check_event(cluster, shard, at, idx, (const char *) sqlite3_column_text(st, 3),
                                pk, &c)) {
            printf("shard %u: BROKEN at seq %llu: a checkpoint event that does not hold: %s\n",
                   shard, (unsigned long long) at, lux_errmsg());
            bad++;
        } else if (sqlite3_column_bytes(st, 4) == DB_HASH_LEN) {
            hashed++;
            if (memcmp(sqlite3_column_blob(st, 4), c.hash, DB_HASH_LEN) != 0) {
                printf("shard %u: BROKEN at seq %llu: the hash there is not the one the"
                       " checkpoint event at seq %llu signs: events at or before it were"
                       " changed\n", shard, (unsigned long long) c.seq, (unsigned long long) at);
                bad++;
            }
        }
    }
    sqlite3_finalize(st);
    if (n && !bad)
        printf("%d checkpoint event%s of the log hold (%d signed hash%s matched)%s\n", n,
               n == 1 ? "" : "s", hashed, hashed == 1 ? "" : "es",
               pk ? ", every signature verified" : " (signatures not checked: give --public-key)");
    return bad;
}

int
lux_pull_audit(const char *path, const db_ckpt_keys_t *pk)
{
    sqlite3 *db = NULL;
    char *uri = sqlite3_mprintf("file:%s?mode=ro", path);
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    sqlite3_free(uri);
    char v[64];
    if (rc != SQLITE_OK || !lux_pull_meta_get(db, "format", v, sizeof v) ||
        strcmp(v, "lux-pull-1") != 0) {
        printf("%s: not a file `lux pull` wrote\n", path);
        sqlite3_close(db);
        return 1;
    }
    int bad = 0;
    char job[64] = "", cl[64] = "";
    bool job_file = lux_pull_meta_get(db, "job", job, sizeof job) && job[0];
    util_id_t cluster = {0};
    if (!lux_pull_meta_get(db, "cluster", cl, sizeof cl) || util_id_parse(&cluster, cl)) {
        printf("%s: its meta table has no cluster ID\n", path);
        sqlite3_close(db);
        return 1;
    }
    sqlite3_stmt *sst, *st;
    sqlite3_prepare_v2(db, "SELECT shard, genesis, first_seq, anchor, last_seq, last_hash FROM"
                           " shard_state ORDER BY shard", -1, &sst, NULL);
    sqlite3_prepare_v2(db, "SELECT seq, ts, kind, client, cseq, job, task, parent, actor, node,"
                           " idx, worker, attempt, status, t_start, t_end, size, name, info, fp,"
                           " deps, body, hash, prev FROM event WHERE shard = ?1 ORDER BY seq",
                       -1, &st, NULL);
    if (!sst || !st) {
        printf("%s: %s\n", path, sqlite3_errmsg(db));
        sqlite3_finalize(sst);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return 1;
    }
    util_buf_t rec;
    util_buf_init(&rec);
    while (sqlite3_step(sst) == SQLITE_ROW) {
        int s = sqlite3_column_int(sst, 0);
        uint64_t first = (uint64_t) sqlite3_column_int64(sst, 2);
        uint64_t last_seq = (uint64_t) sqlite3_column_int64(sst, 4);
        uint8_t prev[16], h[16];
        const void *anchor = sqlite3_column_blob(sst, 3);
        if (sqlite3_column_bytes(sst, 3) != 16 || sqlite3_column_bytes(sst, 5) != 16) {
            printf("shard %d: BROKEN: its state row is malformed\n", s);
            bad++;
            continue;
        }
        memcpy(prev, anchor, 16);
        uint8_t gen[16];
        db_event_genesis(gen, &cluster, (uint32_t) s);
        if (first == 1 && memcmp(gen, anchor, 16) != 0) {
            printf("shard %d: BROKEN: its chain does not start from the genesis of cluster %s\n",
                   s, cl);
            bad++;
            continue;
        }
        uint64_t expect = first, n = 0, gaps = 0, bad_seq = 0;
        char why[300] = "";
        sqlite3_bind_int(st, 1, s);
        while (sqlite3_step(st) == SQLITE_ROW) {
            db_event_t e;
            char where[64];
            snprintf(where, sizeof where, "shard %d", s);
            if (db_store_row_event(st, &e, where)) {
                bad_seq = (uint64_t) sqlite3_column_int64(st, 0);
                snprintf(why, sizeof why, "%s", lux_errmsg());
                break;
            }
            const void *rp = sqlite3_column_blob(st, 23);
            if (sqlite3_column_bytes(st, 23) != 16) {
                bad_seq = e.seq;
                snprintf(why, sizeof why, "its prev column is not 16 bytes");
                break;
            }
            if (e.seq != expect || memcmp(rp, prev, 16) != 0) {
                if (!job_file || e.seq < expect ||
                    (e.seq == expect && memcmp(rp, prev, 16) != 0)) {
                    bad_seq = e.seq;
                    if (e.seq != expect)
                        snprintf(why, sizeof why, "seq %" PRIu64 " is missing or out of order "
                                 "(the next row is %" PRIu64 ")", expect, e.seq);
                    else
                        snprintf(why, sizeof why, "it does not follow seq %" PRIu64 " (its "
                                 "prev hash is not that event's hash)", expect - 1);
                    break;
                }
                gaps++; /* a --job file: events of other jobs left out */
                memcpy(prev, rp, 16);
            }
            rec.len = 0;
            db_event_encode(&e, &rec);
            db_event_chain(h, prev, e.seq, rec.data, rec.len);
            if (memcmp(h, e.hash, 16) != 0) {
                bad_seq = e.seq;
                snprintf(why, sizeof why, "its bytes do not hash to its hash (changed after "
                         "the pull)");
                break;
            }
            memcpy(prev, h, 16);
            expect = e.seq + 1;
            n++;
        }
        sqlite3_reset(st);
        if (!bad_seq && !job_file && expect != last_seq + 1 && n) {
            bad_seq = expect;
            snprintf(why, sizeof why, "events up to seq %" PRIu64 " were verified when pulled, "
                     "the file has them up to %" PRIu64, last_seq, expect - 1);
        }
        if (!bad_seq && !job_file && memcmp(prev, sqlite3_column_blob(sst, 5), 16) != 0 && n) {
            bad_seq = last_seq;
            snprintf(why, sizeof why, "the last hash is not the one recorded when pulled");
        }
        if (bad_seq) {
            printf("shard %d: BROKEN at seq %" PRIu64 ": %s\n", s, bad_seq, why);
            bad++;
        } else if (job_file) {
            printf("shard %d: %" PRIu64 " events verified, each against the hash before it "
                   "(%" PRIu64 " gaps: a --job pull keeps one job's events)\n",
                   s, n, gaps);
        } else {
            printf("shard %d: %" PRIu64 " events (seq %" PRIu64 "..%" PRIu64 "), hash chain "
                   "verified from %s\n",
                   s, n, first, expect - 1, first == 1 ? "the genesis" : "the anchor of --since");
        }
    }
    util_buf_free(&rec);
    sqlite3_finalize(sst);
    sqlite3_finalize(st);
    bad += s_audit_checkpoints(db, &cluster, pk);
    bad += s_audit_ckpt_events(db, &cluster, pk);
    sqlite3_close(db);
    if (bad) {
        printf("%d problem%s found: %s failed the audit\n", bad, bad == 1 ? "" : "s", path);
        return 1;
    }
    printf("every shard's hash chain in %s verified\n", path);
    return 0;
}

/* 1003-db-writer: the group-committing writer thread: batches queued
   behind each other commit together, truncation, and a write error is
   reported, not fatal. */
#include "tap.h"
#include "db/db_writer.h"
#include "net/net_wire.h"
#include "util/util_err.h"

#include <stdio.h>
#include <string.h>

static util_id_t s_cluster;

/* A batch of n note events from seq first, chained from prev. */
static void
s_batch(util_buf_t *b, net_batch_t *nb, uint64_t first, uint32_t n, uint8_t prev[DB_HASH_LEN])
{
    util_buf_t rec;
    util_buf_init(&rec);
    net_batch_begin(b, first);
    for (uint32_t i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note, .ts = 1};
        db_event_set_info(&e, "x");
        rec.len = 0;
        db_event_encode(&e, &rec);
        db_event_chain(rec.data + rec.len - DB_HASH_LEN, prev, first + i, rec.data, rec.len);
        memcpy(prev, rec.data + rec.len - DB_HASH_LEN, DB_HASH_LEN);
        net_batch_add(b, rec.data, rec.len);
    }
    net_batch_end(b, n);
    net_batch_parse(nb, b->data, b->len);
    util_buf_free(&rec);
}

int
main(void)
{
    char path[512];
    util_id_random(&s_cluster);
    snprintf(path, sizeof path, "%s/w.db", tap_tmpdir());
    db_store_opts_t o = {.path = path, .cluster = s_cluster, .shard = 0};
    db_store_t *st = db_store_open(&o);
    if (!st)
        bail("%s", lux_errmsg());
    uint8_t prev[DB_HASH_LEN];
    memcpy(prev, db_store_genesis(st), DB_HASH_LEN);
    zactor_t *w = db_writer_new(st);
    ok(w != NULL, "start a writer");

    util_buf_t bufs[50];
    net_batch_t nbs[50];
    for (int i = 0; i < 50; i++) {
        util_buf_init(&bufs[i]);
        s_batch(&bufs[i], &nbs[i], 1 + (uint64_t) i * 100, 100, prev);
    }
    for (int i = 0; i < 50; i++)
        db_writer_write(w, &nbs[i]);
    char cmd, text[256];
    uint64_t seq = 0;
    int code, replies = 0;
    zsock_set_rcvtimeo(zactor_sock(w), 10000);
    while (seq < 5000) {
        cmd = db_writer_reply(w, &seq, &code, text, sizeof text);
        replies++;
        if (cmd != 'C')
            break;
    }
    is_int((int64_t) seq, 5000, "all 50 batches committed");
    ok(replies < 50, "in fewer transactions than batches (%d)", replies);
    db_writer_truncate(w, 4321);
    cmd = db_writer_reply(w, &seq, &code, text, sizeof text);
    ok(cmd == 'T' && code == 0 && seq == 4321, "truncate after 4321 (%c %llu %d %s)", cmd,
       (unsigned long long) seq, code, text);
    /* a gap: the writer reports an error and stops writing */
    util_buf_t gap;
    net_batch_t gnb;
    util_buf_init(&gap);
    s_batch(&gap, &gnb, 9000, 5, prev);
    db_writer_write(w, &gnb);
    cmd = db_writer_reply(w, &seq, &code, text, sizeof text);
    ok(cmd == 'E' && code == LUX_EGAP, "a gap is reported: %s", text);
    zactor_destroy(&w);
    ok(w == NULL, "the writer stops");
    db_store_close(&st);

    st = db_store_open(&o);
    uint64_t bad;
    ok(st && db_store_last_seq(st) == 4321, "the file has 4321 events");
    is_int(db_store_verify(st, &bad), 0, "and verifies");
    db_store_close(&st);
    for (int i = 0; i < 50; i++)
        util_buf_free(&bufs[i]);
    util_buf_free(&gap);
    return done_testing();
}

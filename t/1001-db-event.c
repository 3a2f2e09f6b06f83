/* 1001-db-event: the canonical record: round trip, garbage, the chain. */
#include "tap.h"
#include "db/db_event.h"
#include "util/util_err.h"

#include <stdlib.h>
#include <string.h>

static void
s_fill(db_event_t *e)
{
    memset(e, 0, sizeof *e);
    e->ts = 1234567890123LL;
    e->kind = DB_K_task_submitted;
    util_id_random(&e->client);
    e->cseq = 42;
    e->mask |= DB_F_CLIENT;
    util_id_t j;
    util_id_random(&j);
    DB_SET_ID(e, job, DB_F_JOB, &j);
    DB_SET_ID(e, task, DB_F_TASK, &j);
    DB_SET_INT(e, idx, DB_F_IDX, 2);
    DB_SET_INT(e, status, DB_F_STATUS, -3);
    db_event_set_name(e, "es.rollout");
    db_event_set_info(e, "");
    static const uint8_t deps[40] = {1, 2, 3};
    e->deps = deps;
    e->deps_len = 40;
    e->mask |= DB_F_DEPS;
    e->body = (const uint8_t *) "args";
    e->body_len = 4;
    e->mask |= DB_F_BODY;
    memset(e->hash, 0xab, DB_HASH_LEN);
}

int
main(void)
{
    db_event_t e, d;
    util_buf_t b, b2;

    s_fill(&e);
    util_buf_init(&b);
    db_event_encode(&e, &b);
    ok(!b.oom && b.len > DB_REC_MIN, "encoded %zu bytes", b.len);
    is_int(db_event_decode(&d, b.data, b.len), 0, "decodes");
    ok(d.ts == e.ts && d.kind == e.kind && d.mask == e.mask, "header fields");
    ok(util_id_eq(&d.client, &e.client) && d.cseq == 42, "event ID");
    ok(util_id_eq(&d.task, &e.task) && d.idx == 2 && d.status == -3, "ids and ints");
    ok(d.name_len == 10 && memcmp(d.name, "es.rollout", 10) == 0, "name");
    ok(d.info_len == 0 && (d.mask & DB_F_INFO), "empty info is present, not absent");
    ok(d.deps_len == 40 && d.body_len == 4, "deps and body");
    ok(memcmp(d.hash, e.hash, DB_HASH_LEN) == 0, "hash");
    util_buf_init(&b2);
    db_event_encode(&d, &b2);
    ok(b2.len == b.len && memcmp(b2.data, b.data, b.len) == 0, "re-encoding is canonical");
    ok(db_event_key(&e) == &e.task, "task events are keyed by task");
    {
        db_event_t k = e;
        k.mask &= ~(uint32_t) DB_F_TASK; /* the field holds an ID, but is absent */
        ok(util_id_is_zero(db_event_key(&k)), "without its key field, an event's key is the zero ID");
        k.kind = 999;
        ok(db_event_key(&k) == &k.job, "a kind this version does not know is keyed by its job");
    }
    is_str(db_kind_name(DB_K_actor_call), "actor_call", "kind names");
    is_int(db_kind_code("node_died"), DB_K_node_died, "kind codes");

    /* garbage: every truncation, flipped mask bits, random bytes */
    int refused = 0;
    for (size_t cut = 0; cut < b.len; cut++)
        refused += db_event_decode(&d, b.data, cut) == LUX_ECORRUPT;
    is_int(refused, (int64_t) b.len, "every truncation is refused");
    uint8_t *bad = malloc(b.len);
    memcpy(bad, b.data, b.len);
    bad[13] |= 0x80;
    is_int(db_event_decode(&d, bad, b.len), LUX_ECORRUPT, "unknown field bits refused");
    ok(strstr(lux_errmsg(), "unknown field") != NULL, "message: %s", lux_errmsg());
    memcpy(bad, b.data, b.len);
    bad[8] = 200;
    is_int(db_event_decode(&d, bad, b.len), 0,
           "a kind this version does not know decodes: replicas and readers carry it through");
    ok(d.kind == 200 && db_kind_name(200) == NULL && util_id_eq(&d.task, &e.task),
       "its number and fields are kept; it has no name");
    srand(7);
    int crashes = 0;
    for (int i = 0; i < 20000; i++) {
        uint8_t junk[96];
        size_t n = (size_t) (rand() % (int) sizeof junk);
        for (size_t k = 0; k < n; k++)
            junk[k] = (uint8_t) rand();
        if (rand() % 2 && n > 14) { /* plausible header, random body */
            junk[8] = DB_K_task_finished;
            junk[9] = 0;
        }
        int rc = db_event_decode(&d, junk, n);
        crashes += rc != 0 && rc != LUX_ECORRUPT;
    }
    is_int(crashes, 0, "20000 random records decode or are refused, nothing else");
    free(bad);

    /* the chain */
    uint8_t g[DB_HASH_LEN], h1[DB_HASH_LEN], h2[DB_HASH_LEN], h3[DB_HASH_LEN];
    util_id_t cl;
    util_id_random(&cl);
    db_event_genesis(g, &cl, 0);
    db_event_genesis(h1, &cl, 1);
    ok(memcmp(g, h1, DB_HASH_LEN) != 0, "shards have different genesis hashes");
    db_event_chain(h1, g, 1, b.data, b.len);
    db_event_chain(h2, g, 2, b.data, b.len);
    ok(memcmp(h1, h2, DB_HASH_LEN) != 0, "the seq is part of the hash");
    memset(b.data + b.len - DB_HASH_LEN, 0, DB_HASH_LEN);
    db_event_chain(h3, g, 1, b.data, b.len);
    ok(memcmp(h1, h3, DB_HASH_LEN) == 0, "the stored hash is not part of the hash");
    b.data[20] ^= 1;
    db_event_chain(h3, g, 1, b.data, b.len);
    ok(memcmp(h1, h3, DB_HASH_LEN) != 0, "a changed byte changes the hash");
    util_buf_free(&b);
    util_buf_free(&b2);
    return done_testing();
}

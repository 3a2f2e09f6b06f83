/* 5005-unknown-kind: a chain of mixed versions carries a kind that only
   its head knows (doc/protocol.md 13).

   A newer head takes an event of a kind this version does not know; it
   stands in here as a record written straight into the head's file while
   the cluster is stopped, hashed onto the chain. Restarted, the head
   forwards it: the middle and the tail (this version) must store and
   forward it rather than refuse the batch, a subscriber must receive it
   with its kind number, every replica's chain must verify, `lux sql`
   must show it as kind#N, and the chain must go on taking appends. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "db/db_sub.h"
#include "util/util_err.h"
#include "util/util_time.h"

#include <stdio.h>
#include <string.h>

#define S_NEW_KIND 999 /* a kind of a later version */

static db_cluster_t s_c;
static util_id_t s_job;

static int
s_append(db_client_t *cl, int n)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &s_job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        db_event_set_info(&e, "known kind");
        if (db_client_append(cl, &e))
            return -1;
    }
    return db_client_sync(cl, 20000);
}

/* Write count events onto the end of the file at path: the first of a
   kind this version does not know, the others notes. */
static void
s_make_newer(void *arg, int i, uint64_t seq, db_event_t *e)
{
    (void) seq;
    e->kind = i == 0 ? S_NEW_KIND : DB_K_note;
    e->ts = util_now_ns();
    e->client = *(const util_id_t *) arg;
    e->cseq = (uint64_t) i + 1;
    e->mask |= DB_F_CLIENT;
    DB_SET_ID(e, job, DB_F_JOB, &s_job);
    DB_SET_INT(e, size, DB_F_SIZE, 4242);
    db_event_set_info(e, i == 0 ? "from a newer version" : "after it");
}
static int
s_write_newer(const char *path, int count)
{
    db_store_opts_t o = {.path = path, .cluster = s_c.id, .shard = 0};
    db_store_t *st = db_store_open(&o);
    util_id_t client;
    if (!st)
        return LUX_EIO;
    util_id_random(&client);
    int rc = tamper_store_append(st, count, s_make_newer, &client);
    db_store_close(&st);
    return rc;
}

/* fx_chain_follow's look at each record: the newer kind where it was
   written, with its fields */
typedef struct {
    uint64_t at;
    int kind_at;
} s_newer_t;
static void
s_newer_seen(void *arg, uint64_t seq, const uint8_t *rec, size_t len)
{
    s_newer_t *nw = arg;
    db_event_t e;
    if (seq == nw->at && db_event_decode(&e, rec, len) == 0 && e.kind == S_NEW_KIND &&
        e.size == 4242 && db_kind_name(e.kind) == NULL)
        nw->kind_at = (int) seq;
}

int
main(void)
{
    char out[4096], err[4096];
    util_id_random(&s_job);
    /* --log-only: no node manager, so the shard holds only our events */
    fx_start(&s_c, 1, 3, "--log-only");
    db_client_opts_t co = {.cluster = &s_c};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    is_int(s_append(cl, 20), 0, "20 events appended");
    uint64_t before = db_client_acked_seq(cl, 0);
    db_client_destroy(&cl);
    ok(fx_wait_chain(&s_c, 0, 3, 20000), "the chain of three is whole");
    fx_stop(&s_c);

    db_chain_t chain[1];
    char head[600];
    db_chain_load_state(&s_c, chain);
    db_cluster_replica_db(&s_c, 0, chain[0].m[0].index, head, sizeof head);
    int rc = s_write_newer(head, 2);
    is_int(rc, 0, "a kind-%d event and a note written onto the head's file (replica %u) at seq "
           "%llu and %llu: %s", S_NEW_KIND, chain[0].m[0].index, (unsigned long long) before + 1,
           (unsigned long long) before + 2, rc ? lux_errmsg() : "ok");

    rc = fx_lux(NULL, 0, err, sizeof err, "start --head --log-only --dir %s", s_c.dir);
    is_int(rc, 0, "the cluster restarts %s", rc ? err : "");
    if (rc)
        return done_testing();

    /* a subscriber from the genesis gets both, through the middle and the tail */
    db_sub_t *sub = db_sub_new(&s_c, NULL, 0, 0);
    fx_chain_t ck;
    s_newer_t nw = {.at = before + 1};
    fx_chain_init(&ck, &s_c, 0);
    if (sub)
        fx_chain_follow(sub, &ck, before + 2, 0, 20000, s_newer_seen, &nw);
    int broken = ck.bad, kind_at = nw.kind_at;
    ok(sub && db_sub_last(sub) >= before + 2 && broken == 0,
       "the tail published seq %llu and %llu, chained (subscriber at %llu)",
       (unsigned long long) before + 1, (unsigned long long) before + 2,
       (unsigned long long) (sub ? db_sub_last(sub) : 0));
    ok(kind_at == (int) before + 1, "seq %llu reached the subscriber with kind %d and its fields",
       (unsigned long long) before + 1, S_NEW_KIND);
    db_sub_destroy(&sub);

    /* the chain still takes appends after it */
    cl = db_client_new(&co);
    rc = cl ? s_append(cl, 10) : -1;
    uint64_t now_last = cl ? db_client_acked_seq(cl, 0) : 0;
    ok(rc == 0 && now_last == before + 12, "10 more events appended after it, up to seq %llu",
       (unsigned long long) now_last);
    db_client_destroy(&cl);

    rc = fx_lux(out, sizeof out, err, sizeof err, "sql --dir %s --csv \"SELECT kind FROM events "
                "WHERE seq = %llu\"", s_c.dir, (unsigned long long) before + 1);
    for (char *p = out; *p; p++)
        if (*p == '\n')
            *p = ' ';
    ok(rc == 0 && strstr(out, "kind#999"), "lux sql shows it as kind#999 (%s)", rc ? err : out);
    fx_stop(&s_c);
    for (uint32_t k = 0; k < chain[0].n; k++) {
        char path[600];
        uint64_t bad = 0;
        db_cluster_replica_db(&s_c, 0, chain[0].m[k].index, path, sizeof path);
        db_store_opts_t o = {.path = path, .readonly = true};
        db_store_t *st = db_store_open(&o);
        uint64_t last = st ? db_store_last_seq(st) : 0;
        int v = st ? db_store_verify(st, &bad) : -1;
        ok(last == before + 12 && v == 0, "replica %u holds %llu events and its chain verifies%s%s",
           chain[0].m[k].index, (unsigned long long) last, v ? ": " : "", v ? lux_errmsg() : "");
        db_store_close(&st);
    }
    rc = fx_lux(out, sizeof out, err, sizeof err, "audit --dir %s", s_c.dir);
    is_int(rc, 0, "lux audit verifies every replica %s", rc ? err : "");
    return done_testing();
}

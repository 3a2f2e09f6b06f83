/* 3176-put-record-bytes: the bytes of a small put's object_put record, and
   of the encoder and reader under every record, are what they were.

   A small put's bytes ride in its object_put event (DESIGN "Recording
   puts"), and the record is canonical: the log's chain hashes it, a row
   read back re-encodes to it, replay checks it. util_buf's puts and
   reads were made inline (stop 46, for the per-put cost, issue 24); this
   pins what they write:
     1. an object_put record as nm_log_put and db_client_append make it
        (node, t_end, task, job, idx, size, info "recorded in this event",
        fp, an 8-byte body, client and cseq) is byte for byte the record
        of before (its hex taken from the encoder of main bc3f5b6), and
        decodes back to the same fields, and re-encodes to the same bytes;
        every shorter prefix of it is refused;
     2. a record with every field set (negative and extreme integers,
        name, deps, body, hash) likewise;
     3. util_buf against a byte-by-byte reference: values put across the
        buffer's growth, little-endian at any alignment, read back at every
        alignment; after an allocation failure (oom) every put is ignored.
*/
#include "tap.h"
#include "db/db_event.h"
#include "util/util_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void
s_put_event(db_event_t *e)
{
    static const uint8_t zero8[8];
    util_id_t id;
    memset(e, 0, sizeof *e);
    e->kind = DB_K_object_put;
    for (int i = 0; i < 16; i++)
        id.b[i] = (uint8_t) (0x10 + i);
    DB_SET_ID(e, node, DB_F_NODE, &id);
    DB_SET_INT(e, t_end, DB_F_T_END, 1795000000123456789LL);
    for (int i = 0; i < 16; i++)
        id.b[i] = (uint8_t) (0xa0 + i);
    DB_SET_ID(e, task, DB_F_TASK, &id);
    for (int i = 0; i < 16; i++)
        id.b[i] = (uint8_t) (0x30 + i);
    DB_SET_ID(e, job, DB_F_JOB, &id);
    DB_SET_INT(e, idx, DB_F_IDX, 0);
    DB_SET_INT(e, size, DB_F_SIZE, 8);
    for (int i = 0; i < 16; i++)
        e->fp[i] = (uint8_t) (0xf0 ^ i);
    e->mask |= DB_F_FP;
    e->body = zero8;
    e->body_len = 8;
    e->mask |= DB_F_BODY;
    db_event_set_info(e, "recorded in this event");
    /* as db_client_append gives it */
    for (int i = 0; i < 16; i++)
        e->client.b[i] = (uint8_t) (0xc0 + i);
    e->cseq = 0x0102030405060708ULL;
    e->mask |= DB_F_CLIENT;
}

static void
s_full_event(db_event_t *e, uint8_t *deps)
{
    util_id_t id;
    memset(e, 0, sizeof *e);
    e->ts = -2;
    e->kind = DB_K_task_submitted;
    for (int i = 0; i < 16; i++)
        e->client.b[i] = (uint8_t) (0x01 * i);
    e->cseq = 0xfffffffffffffffeULL;
    e->mask |= DB_F_CLIENT;
#define ID(f, bit, base)                                                                           \
    for (int i = 0; i < 16; i++)                                                                   \
        id.b[i] = (uint8_t) ((base) + 3 * i);                                                      \
    DB_SET_ID(e, f, bit, &id);
    ID(job, DB_F_JOB, 0x11)
    ID(task, DB_F_TASK, 0x22)
    ID(parent, DB_F_PARENT, 0x33)
    ID(actor, DB_F_ACTOR, 0x44)
    ID(node, DB_F_NODE, 0x55)
#undef ID
    DB_SET_INT(e, idx, DB_F_IDX, 3);
    DB_SET_INT(e, worker, DB_F_WORKER, 4242);
    DB_SET_INT(e, attempt, DB_F_ATTEMPT, -1);
    DB_SET_INT(e, status, DB_F_STATUS, -5);
    DB_SET_INT(e, t_start, DB_F_T_START, INT64_MIN);
    DB_SET_INT(e, t_end, DB_F_T_END, INT64_MAX);
    DB_SET_INT(e, size, DB_F_SIZE, 0x7fffffff80000001LL);
    db_event_set_name(e, "fn.name");
    db_event_set_info(e, "CPU=2,gpu");
    for (int i = 0; i < 16; i++)
        e->fp[i] = (uint8_t) (0x0f * i);
    e->mask |= DB_F_FP;
    for (int i = 0; i < 40; i++)
        deps[i] = (uint8_t) (0x80 + i);
    e->deps = deps;
    e->deps_len = 40;
    e->mask |= DB_F_DEPS;
    e->body = (const uint8_t *) "argument bytes";
    e->body_len = 14;
    e->mask |= DB_F_BODY;
    for (int i = 0; i < DB_HASH_LEN; i++)
        e->hash[i] = (uint8_t) (0xe0 + i);
}

/* The records as the encoder of main bc3f5b6 wrote them. */
static const char s_put_hex[] = "0000000000000000080067d80200c0c1c2c3c4c5c6c7c8c9cacbcccdcecf0807"
                                "060504030201303132333435363738393a3b3c3d3e3fa0a1a2a3a4a5a6a7a8a9"
                                "aaabacadaeaf101112131415161718191a1b1c1d1e1f0000000000000000154d"
                                "2f63fd1ee9180800000000000000160000007265636f7264656420696e207468"
                                "6973206576656e74f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff0800000000000000"
                                "0000000000000000000000000000000000000000";
static const char s_full_hex[] = "feffffffffffffff0400ffff0300000102030405060708090a0b0c0d0e0ffeff"
                                 "ffffffffffff1114171a1d202326292c2f3235383b3e2225282b2e3134373a3d"
                                 "404346494c4f3336393c3f4245484b4e5154575a5d6044474a4d505356595c5f"
                                 "6265686b6e7155585b5e6164676a6d707376797c7f8203000000000000009210"
                                 "000000000000fffffffffffffffffbffffffffffffff0000000000000080ffff"
                                 "ffffffffff7f01000080ffffff7f0700666e2e6e616d65090000004350553d32"
                                 "2c677075000f1e2d3c4b5a69788796a5b4c3d2e1280000008081828384858687"
                                 "88898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7"
                                 "0e000000617267756d656e74206279746573e0e1e2e3e4e5e6e7e8e9eaebeced"
                                 "eeef";

static size_t
s_unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; h[0] && h[1] && n < cap; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        out[n++] = (uint8_t) v;
    }
    return n;
}

/* Encode e; compare with the pinned hex; decode, compare, re-encode. */
static void
s_check_record(const char *what, const db_event_t *e, const char *hex)
{
    uint8_t want[1024];
    size_t n = s_unhex(hex, want, sizeof want);
    util_buf_t b;
    util_buf_init(&b);
    db_event_encode(e, &b);
    ok(!b.oom && b.len == n && memcmp(b.data, want, n) == 0,
       "%s: the record is the pinned %zu bytes (got %zu)", what, n, b.len);
    if (b.len == n)
        for (size_t i = 0; i < n; i++)
            if (b.data[i] != want[i]) {
                diag("first difference at byte %zu: %02x, pinned %02x", i, b.data[i], want[i]);
                break;
            }
    db_event_t d;
    is_int(db_event_decode(&d, want, n), 0, "%s: the pinned record decodes", what);
    ok(d.kind == e->kind && d.mask == (e->mask & DB_F_ALL) && d.ts == e->ts && d.cseq == e->cseq &&
           memcmp(d.client.b, e->client.b, 16) == 0 && memcmp(d.job.b, e->job.b, 16) == 0 &&
           memcmp(d.task.b, e->task.b, 16) == 0 && memcmp(d.parent.b, e->parent.b, 16) == 0 &&
           memcmp(d.actor.b, e->actor.b, 16) == 0 && memcmp(d.node.b, e->node.b, 16) == 0 &&
           d.idx == e->idx && d.worker == e->worker && d.attempt == e->attempt &&
           d.status == e->status && d.t_start == e->t_start && d.t_end == e->t_end &&
           d.size == e->size && memcmp(d.fp, e->fp, 16) == 0 &&
           memcmp(d.hash, e->hash, DB_HASH_LEN) == 0,
       "%s: its fixed fields decode back", what);
    ok(d.name_len == e->name_len && (!d.name_len || memcmp(d.name, e->name, d.name_len) == 0) &&
           d.info_len == e->info_len && memcmp(d.info, e->info, d.info_len) == 0 &&
           d.deps_len == e->deps_len && (!d.deps_len || memcmp(d.deps, e->deps, d.deps_len) == 0) &&
           d.body_len == e->body_len && memcmp(d.body, e->body, d.body_len) == 0,
       "%s: its name, info, deps and body decode back", what);
    util_buf_t again;
    util_buf_init(&again);
    db_event_encode(&d, &again);
    ok(again.len == n && memcmp(again.data, want, n) == 0, "%s: and re-encode to the same bytes",
       what);
    int refused = 0;
    for (size_t cut = 0; cut < n; cut++) {
        uint8_t short_rec[1024];
        memcpy(short_rec, want, cut);
        refused += db_event_decode(&d, short_rec, cut) != 0;
    }
    is_int(refused, (int64_t) n, "%s: each of its %zu shorter prefixes is refused", what, n);
    util_buf_free(&again);
    util_buf_free(&b);
}

/* The reference: v as k little-endian bytes, one at a time. */
static void
s_ref_le(uint8_t *p, uint64_t v, int k)
{
    for (int i = 0; i < k; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
s_ref_rd(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v |= (uint64_t) p[i] << (8 * i);
    return v;
}

int
main(void)
{
    db_event_t e;
    uint8_t deps[40];
    s_put_event(&e);
    s_check_record("a small put's object_put", &e, s_put_hex);
    s_full_event(&e, deps);
    s_check_record("every field", &e, s_full_hex);

    /* 3. values of each width put one after another from an empty buffer,
       so that they fall at every alignment and across each growth */
    util_buf_t b;
    static uint8_t ref[1 << 16];
    size_t rn = 0;
    uint64_t s = 3176, v;
    util_buf_init(&b);
    for (int i = 0; i < 4000; i++) {
        v = tap_rand(&s);
        switch (v % 7) {
        case 0:
            util_buf_put_u8(&b, (uint8_t) v);
            s_ref_le(ref + rn, v, 1);
            rn += 1;
            break;
        case 1:
            util_buf_put_u16(&b, (uint16_t) v);
            s_ref_le(ref + rn, v, 2);
            rn += 2;
            break;
        case 2:
            util_buf_put_u32(&b, (uint32_t) v);
            s_ref_le(ref + rn, v, 4);
            rn += 4;
            break;
        case 3:
            util_buf_put_u64(&b, v);
            s_ref_le(ref + rn, v, 8);
            rn += 8;
            break;
        case 4:
            util_buf_put_str(&b, "abc", (size_t) (v >> 8) % 4);
            s_ref_le(ref + rn, (v >> 8) % 4, 2);
            memcpy(ref + rn + 2, "abc", (size_t) (v >> 8) % 4);
            rn += 2 + (v >> 8) % 4;
            break;
        case 5:
            util_buf_put_blob(&b, "defgh", (size_t) (v >> 8) % 6);
            s_ref_le(ref + rn, (v >> 8) % 6, 4);
            memcpy(ref + rn + 4, "defgh", (size_t) (v >> 8) % 6);
            rn += 4 + (v >> 8) % 6;
            break;
        default:
            util_buf_put(&b, &v, (size_t) (v >> 8) % 9);
            memcpy(ref + rn, &v, (v >> 8) % 9);
            rn += (v >> 8) % 9;
            break;
        }
    }
    ok(!b.oom && b.len == rn && memcmp(b.data, ref, rn) == 0,
       "4,000 mixed puts across the growth write the reference's %zu bytes", rn);
    int bad = 0;
    for (size_t at = 0; at + 8 <= rn && at < 4096; at++) {
        util_rd_t r;
        util_rd_init(&r, b.data + at, 8);
        uint16_t a16 = util_rd_u16(&r);
        util_rd_init(&r, b.data + at, 8);
        uint32_t a32 = util_rd_u32(&r);
        util_rd_init(&r, b.data + at, 8);
        uint64_t a64 = util_rd_u64(&r);
        bad += a16 != s_ref_rd(ref + at, 2) || a32 != s_ref_rd(ref + at, 4) ||
               a64 != s_ref_rd(ref + at, 8) || util_rd16(b.data + at) != a16 ||
               util_rd32(b.data + at) != a32 || util_rd64(b.data + at) != a64 || r.bad;
        uint8_t w[16] = {0};
        util_le32(w + (at % 8), (uint32_t) a64);
        util_le64(w + (at % 8) + 1, a64);
        bad += w[at % 8] != (uint8_t) a64 || s_ref_rd(w + (at % 8) + 1, 8) != a64;
    }
    is_int(bad, 0, "reads at every alignment give the reference's values");
    bad = 0;
    for (size_t at = 0; at < 8; at++) {
        util_rd_t r;
        size_t n;
        util_rd_init(&r, b.data + at, 1);
        bad += util_rd_u16(&r) != 0 || !r.bad;
        util_rd_init(&r, b.data + at, 3);
        bad += util_rd_u32(&r) != 0 || !r.bad;
        util_rd_init(&r, b.data + at, 7);
        bad += util_rd_u64(&r) != 0 || !r.bad;
        util_rd_init(&r, b.data + at, 7);
        bad += util_rd_take(&r, 8) != NULL || !r.bad || util_rd_u8(&r) != 0;
        uint8_t blob[4 + 3] = {4, 0, 0, 0, 'a', 'b', 'c'}; /* says 4, has 3 */
        util_rd_init(&r, blob, sizeof blob);
        bad += util_rd_blob(&r, &n) != NULL || n != 0 || !r.bad;
        uint8_t str[2 + 1] = {2, 0, 'a'};
        util_rd_init(&r, str, sizeof str);
        bad += util_rd_str(&r, &n) != NULL || n != 0 || !r.bad;
    }
    is_int(bad, 0, "a read of one byte more than is left gives 0 and sets bad");

    /* after an allocation failure the buffer keeps what it had */
    size_t had = b.len;
    b.oom = true;
    util_buf_put_u8(&b, 1);
    util_buf_put_u16(&b, 1);
    util_buf_put_u32(&b, 1);
    util_buf_put_u64(&b, 1);
    util_buf_put(&b, "x", 1);
    util_buf_put_str(&b, "x", 1);
    util_buf_put_blob(&b, "x", 1);
    ok(b.len == had && !util_buf_reserve(&b, 1), "after oom every put is ignored");
    b.oom = false;
    util_buf_free(&b);
    return done_testing();
}

/*  db_event - the canonical event record and the hash chain.

    RECORD FORMAT (version 1). All integers little-endian.

        offset  size  field
        0       8     ts      i64, ns since the Unix epoch (set by the head)
        8       2     kind    u16, enum db_kind; a code this version does
                              not know decodes too (the layout does not
                              depend on the kind), so that replicas and
                              readers carry a newer version's kinds through
        10      4     mask    u32, presence bits of the optional fields
        14      ...   the optional fields whose bit is set, in this order:
                        client  16 bytes + cseq u64   (DB_F_CLIENT)
                        job     16                    (DB_F_JOB)
                        task    16                    (DB_F_TASK)
                        parent  16                    (DB_F_PARENT)
                        actor   16                    (DB_F_ACTOR)
                        node    16                    (DB_F_NODE)
                        idx, worker, attempt, status,
                        t_start, t_end, size
                                i64 each              (DB_F_IDX .. DB_F_SIZE)
                        name    u16 length + bytes    (DB_F_NAME)
                        info    u32 length + bytes    (DB_F_INFO)
                        fp      16                    (DB_F_FP)
                        deps    u32 length + bytes, a multiple of 20:
                                one object ID per dependency, task ID
                                16 + return index u32 BIG-endian (so the
                                hex of an object ID reads task, index)
                        body    u32 length + bytes    (DB_F_BODY)
        n-16    16    hash    the chain hash (zero in a client's append)

    The seq of a record is not inside it: records travel in batches that
    say the seq of their first record (src/net/net_wire.h), and rows in
    SQLite have it as their rowid. The encoding is canonical: a record is a
    pure function of the fields, so a row read back from SQLite re-encodes to
    the same bytes, and the chain can be checked from the database alone.

    HASH CHAIN. hash(seq) = BLAKE2b-128(hash(seq-1) || seq as u64 LE ||
    record without its last 16 bytes), with hash(0) the shard's genesis,
    BLAKE2b-128("lux-genesis-v1" || cluster ID || shard as u32 LE). A
    changed field, a dropped event or two swapped events all change every
    hash from that point on.
*/
#include "db_event.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"

#include <string.h>

static const char *s_kind_names[DB_K_MAX] = {
#define X(name, code, key) [code] = #name,
    DB_KINDS(X)
#undef X
};

const char *
db_kind_name(int kind)
{
    if (kind <= 0 || kind >= DB_K_MAX)
        return NULL;
    return s_kind_names[kind];
}

int
db_kind_code(const char *name)
{
    for (int k = 1; k < DB_K_MAX; k++)
        if (s_kind_names[k] && strcmp(s_kind_names[k], name) == 0)
            return k;
    return 0;
}

/* The presence bit of each key field, for DB_KINDS' third column. */
#define S_BIT_job DB_F_JOB
#define S_BIT_task DB_F_TASK
#define S_BIT_actor DB_F_ACTOR
#define S_BIT_node DB_F_NODE

const util_id_t *
db_event_key(const db_event_t *e)
{
    static const util_id_t zero;
    switch (e->kind) {
#define X(name, code, keyf)                                                   \
    case code:                                                                \
        return (e->mask & S_BIT_##keyf) ? &e->keyf : &zero;
        DB_KINDS(X)
#undef X
    }
    return (e->mask & DB_F_JOB) ? &e->job : &zero;
}

void
db_event_set_name(db_event_t *e, const char *s)
{
    e->name = s;
    e->name_len = (uint32_t) strlen(s);
    if (e->name_len > 65535)
        e->name_len = 65535;
    e->mask |= DB_F_NAME;
}

void
db_event_set_info(db_event_t *e, const char *s)
{
    e->info = s;
    e->info_len = (uint32_t) strlen(s);
    e->mask |= DB_F_INFO;
}

/* The 64-bit fields in encoding order, so encode and decode share a table. */
#define S_INTS(X)                                                             \
    X(DB_F_IDX, idx)                                                          \
    X(DB_F_WORKER, worker)                                                    \
    X(DB_F_ATTEMPT, attempt)                                                  \
    X(DB_F_STATUS, status)                                                    \
    X(DB_F_T_START, t_start)                                                  \
    X(DB_F_T_END, t_end)                                                      \
    X(DB_F_SIZE, size)
#define S_IDS(X)                                                              \
    X(DB_F_JOB, job)                                                          \
    X(DB_F_TASK, task)                                                        \
    X(DB_F_PARENT, parent)                                                    \
    X(DB_F_ACTOR, actor)                                                      \
    X(DB_F_NODE, node)

void
db_event_encode(const db_event_t *e, util_buf_t *b)
{
    size_t n = 14 + DB_HASH_LEN + 24 + 5 * 16 + 7 * 8 + 2 + e->name_len + 4 + e->info_len +
               DB_FP_LEN + 4 + e->deps_len + 4 + e->body_len;
    if (!util_buf_reserve(b, n))
        return;
    util_buf_put_u64(b, (uint64_t) e->ts);
    util_buf_put_u16(b, e->kind);
    util_buf_put_u32(b, e->mask & DB_F_ALL);
    if (e->mask & DB_F_CLIENT) {
        util_buf_put(b, e->client.b, 16);
        util_buf_put_u64(b, e->cseq);
    }
#define X(bit, f)                                                             \
    if (e->mask & bit)                                                        \
        util_buf_put(b, e->f.b, 16);
    S_IDS(X)
#undef X
#define X(bit, f)                                                             \
    if (e->mask & bit)                                                        \
        util_buf_put_u64(b, (uint64_t) e->f);
    S_INTS(X)
#undef X
    if (e->mask & DB_F_NAME)
        util_buf_put_str(b, e->name, e->name_len);
    if (e->mask & DB_F_INFO)
        util_buf_put_blob(b, e->info, e->info_len);
    if (e->mask & DB_F_FP)
        util_buf_put(b, e->fp, DB_FP_LEN);
    if (e->mask & DB_F_DEPS)
        util_buf_put_blob(b, e->deps, e->deps_len);
    if (e->mask & DB_F_BODY)
        util_buf_put_blob(b, e->body, e->body_len);
    util_buf_put(b, e->hash, DB_HASH_LEN);
}

int
db_event_decode(db_event_t *e, const uint8_t *p, size_t n)
{
    util_rd_t r;
    size_t len;

    if (n < DB_REC_MIN)
        return util_err(LUX_ECORRUPT, "event record of %zu bytes is shorter than %d", n,
                        DB_REC_MIN);
    memset(e, 0, sizeof *e);
    util_rd_init(&r, p, n - DB_HASH_LEN);
    e->ts = (int64_t) util_rd_u64(&r);
    e->kind = util_rd_u16(&r);
    e->mask = util_rd_u32(&r);
    if (e->mask & ~(uint32_t) DB_F_ALL)
        return util_err(LUX_ECORRUPT, "event record has unknown field bits 0x%x",
                        e->mask & ~(uint32_t) DB_F_ALL);
    if (e->mask & DB_F_CLIENT) {
        const uint8_t *c = util_rd_take(&r, 16);
        if (c)
            memcpy(e->client.b, c, 16);
        e->cseq = util_rd_u64(&r);
    }
#define X(bit, f)                                                             \
    if (e->mask & bit) {                                                      \
        const uint8_t *q = util_rd_take(&r, 16);                              \
        if (q)                                                                \
            memcpy(e->f.b, q, 16);                                            \
    }
    S_IDS(X)
#undef X
#define X(bit, f)                                                             \
    if (e->mask & bit)                                                        \
        e->f = (int64_t) util_rd_u64(&r);
    S_INTS(X)
#undef X
    if (e->mask & DB_F_NAME) {
        e->name = util_rd_str(&r, &len);
        e->name_len = (uint32_t) len;
    }
    if (e->mask & DB_F_INFO) {
        e->info = (const char *) util_rd_blob(&r, &len);
        e->info_len = (uint32_t) len;
    }
    if (e->mask & DB_F_FP) {
        const uint8_t *q = util_rd_take(&r, DB_FP_LEN);
        if (q)
            memcpy(e->fp, q, DB_FP_LEN);
    }
    if (e->mask & DB_F_DEPS) {
        e->deps = util_rd_blob(&r, &len);
        e->deps_len = (uint32_t) len;
        if (len % DB_DEP_LEN)
            return util_err(LUX_ECORRUPT, "event record deps of %zu bytes is not a multiple of %d",
                            len, DB_DEP_LEN);
    }
    if (e->mask & DB_F_BODY) {
        e->body = util_rd_blob(&r, &len);
        e->body_len = (uint32_t) len;
    }
    if (r.bad)
        return util_err(LUX_ECORRUPT, "event record of %zu bytes is truncated (kind %u)", n,
                        e->kind);
    if (util_rd_left(&r) != 0)
        return util_err(LUX_ECORRUPT, "event record has %zu trailing bytes", util_rd_left(&r));
    memcpy(e->hash, p + n - DB_HASH_LEN, DB_HASH_LEN);
    return 0;
}

void
db_event_chain(uint8_t out[DB_HASH_LEN], const uint8_t prev[DB_HASH_LEN], uint64_t seq,
               const uint8_t *rec, size_t n)
{
    util_blake_t h;
    uint8_t s[8];
    util_le64(s, seq);
    util_blake_init(&h, DB_HASH_LEN);
    util_blake_update(&h, prev, DB_HASH_LEN);
    util_blake_update(&h, s, 8);
    util_blake_update(&h, rec, n - DB_HASH_LEN);
    util_blake_final(&h, out, DB_HASH_LEN);
}

void
db_event_genesis(uint8_t out[DB_HASH_LEN], const util_id_t *cluster, uint32_t shard)
{
    uint8_t in[14 + 16 + 4];
    memcpy(in, "lux-genesis-v1", 14);
    memcpy(in + 14, cluster->b, 16);
    util_le32(in + 30, shard);
    util_blake(out, DB_HASH_LEN, in, sizeof in);
}

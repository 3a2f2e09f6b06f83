/*  db_chain - chain configuration and heartbeat encodings (see db_chain.h
    and doc/protocol.md for the byte layouts). Decoding bounds every count
    and length, so a CONFIG or HEARTBEAT of garbage is LUX_EPROTO and never
    overruns a fixed array. */
#include "db_chain.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

int
db_chain_find(const db_chain_t *c, uint32_t index)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->m[i].index == index)
            return (int) i;
    return -1;
}

const char *
db_replica_state_name(int state)
{
    switch (state) {
    case DB_RS_STARTING:
        return "starting";
    case DB_RS_CHAIN:
        return "serving";
    case DB_RS_JOINING:
        return "joining";
    case DB_RS_FAILED:
        return "failed";
    }
    return "unknown";
}

static void
s_put_ep(util_buf_t *b, const char *s)
{
    util_buf_put_str(b, s, strlen(s));
}

static void
s_get_ep(util_rd_t *r, char *out, size_t max)
{
    size_t n;
    const char *s = util_rd_str(r, &n);
    if (n >= max) {
        r->bad = true;
        n = 0;
    }
    if (s)
        memcpy(out, s, n);
    out[n] = '\0';
}

void
db_chain_encode(util_buf_t *b, const util_id_t *cluster, const db_chain_t *chains, uint32_t count)
{
    util_buf_put(b, cluster->b, UTIL_ID_LEN);
    util_buf_put_u32(b, count);
    for (uint32_t i = 0; i < count; i++) {
        const db_chain_t *c = &chains[i];
        util_buf_put_u32(b, c->shard);
        util_buf_put_u64(b, c->epoch);
        util_buf_put_u8(b, (uint8_t) c->n);
        for (uint32_t k = 0; k < c->n; k++) {
            util_buf_put_u32(b, c->m[k].index);
            for (int e = 0; e < DB_EP_N; e++)
                s_put_ep(b, c->m[k].ep[e]);
        }
    }
}

int
db_chain_decode(const uint8_t *p, size_t n, util_id_t *cluster, db_chain_t *chains, uint32_t max,
                uint32_t *count)
{
    util_rd_t r;
    const uint8_t *id;
    util_rd_init(&r, p, n);
    *count = 0;
    if ((id = util_rd_take(&r, UTIL_ID_LEN)))
        memcpy(cluster->b, id, UTIL_ID_LEN);
    uint32_t cnt = util_rd_u32(&r);
    if (cnt > max)
        return util_err(LUX_EPROTO, "CONFIG with %u chains, at most %u expected", cnt, max);
    for (uint32_t i = 0; i < cnt && !r.bad; i++) {
        db_chain_t *c = &chains[i];
        memset(c, 0, sizeof *c);
        c->shard = util_rd_u32(&r);
        c->epoch = util_rd_u64(&r);
        c->n = util_rd_u8(&r);
        if (c->n > DB_MAX_REPLICAS)
            return util_err(LUX_EPROTO, "CONFIG chain of %u members", c->n);
        for (uint32_t k = 0; k < c->n; k++) {
            c->m[k].index = util_rd_u32(&r);
            for (int e = 0; e < DB_EP_N; e++)
                s_get_ep(&r, c->m[k].ep[e], DB_EP_MAX);
        }
    }
    if (r.bad || util_rd_left(&r))
        return util_err(LUX_EPROTO, "CONFIG of %zu bytes is malformed", n);
    *count = cnt;
    return 0;
}

void
db_beat_encode(util_buf_t *b, const db_beat_t *beat)
{
    util_buf_put_u32(b, beat->shard);
    util_buf_put_u32(b, beat->index);
    util_buf_put_u32(b, beat->pid);
    util_buf_put_u64(b, beat->epoch);
    util_buf_put_u64(b, beat->last);
    util_buf_put_u8(b, beat->state);
    for (int e = 0; e < DB_EP_N; e++)
        s_put_ep(b, beat->ep[e]);
    s_put_ep(b, beat->path);
}

int
db_beat_decode(db_beat_t *beat, const uint8_t *p, size_t n)
{
    util_rd_t r;
    memset(beat, 0, sizeof *beat);
    util_rd_init(&r, p, n);
    beat->shard = util_rd_u32(&r);
    beat->index = util_rd_u32(&r);
    beat->pid = util_rd_u32(&r);
    beat->epoch = util_rd_u64(&r);
    beat->last = util_rd_u64(&r);
    beat->state = util_rd_u8(&r);
    for (int e = 0; e < DB_EP_N; e++)
        s_get_ep(&r, beat->ep[e], DB_EP_MAX);
    s_get_ep(&r, beat->path, sizeof beat->path);
    if (r.bad || util_rd_left(&r))
        return util_err(LUX_EPROTO, "HEARTBEAT of %zu bytes is malformed", n);
    if (beat->state > DB_RS_FAILED)
        return util_err(LUX_EPROTO, "HEARTBEAT with unknown state %u", beat->state);
    return 0;
}

/* Parse an "out shard S replica I epoch E committed T" line into chains;
   0, or LUX_ECORRUPT with what is wrong in why. */
static int
s_out_line(const db_cluster_t *c, const char *line, db_chain_t *chains, const bool *seen,
           char *why, size_t n)
{
    unsigned s, i;
    char de[32], dt[32], *end;
    int off = 0;
    if (sscanf(line, "out shard %u replica %u epoch %31[0-9] committed %31[0-9]%n", &s, &i, de,
               dt, &off) != 4 ||
        line[off]) {
        snprintf(why, n, "expected \"out shard S replica I epoch E committed T\", got \"%.60s\"",
                 line);
        return LUX_ECORRUPT;
    }
    if (s >= c->shards || !seen[s]) {
        snprintf(why, n, s >= c->shards ? "shard %u, but the cluster has %u"
                                        : "an out line of shard %u before its shard line",
                 s, c->shards);
        return LUX_ECORRUPT;
    }
    if (i >= c->replicas) {
        snprintf(why, n, "shard %u: replica %u, but the cluster has %u per shard", s, i,
                 c->replicas);
        return LUX_ECORRUPT;
    }
    if (db_chain_find(&chains[s], i) >= 0 || chains[s].out[i].epoch) {
        snprintf(why, n, "shard %u: replica %u is %s", s, i,
                 chains[s].out[i].epoch ? "out twice" : "out and a member");
        return LUX_ECORRUPT;
    }
    errno = 0;
    uint64_t epoch = strtoull(de, &end, 10), committed = 0;
    if (!errno && !*end)
        committed = strtoull(dt, &end, 10);
    if (errno || *end || epoch == 0 || epoch > chains[s].epoch) {
        snprintf(why, n, "shard %u: replica %u out at epoch %s, not in 1..%llu", s, i, de,
                 (unsigned long long) chains[s].epoch);
        return LUX_ECORRUPT;
    }
    chains[s].out[i].epoch = epoch;
    chains[s].out[i].committed = committed;
    return 0;
}

/* Parse one line of master.state into chains; 0, or LUX_ECORRUPT with
   what is wrong in why. seen marks the shards already read. */
static int
s_state_line(const db_cluster_t *c, const char *line, db_chain_t *chains, bool *seen, char *why,
             size_t n)
{
    unsigned s, v;
    unsigned long long epoch;
    char digits[32], *end;
    int off = 0, used;
    uint32_t idx[DB_MAX_REPLICAS], k = 0;
    if (sscanf(line, "shard %u epoch %31[0-9] chain%n", &s, digits, &off) != 2 || off == 0) {
        snprintf(why, n, "expected \"shard S epoch E chain I...\", got \"%.60s\"", line);
        return LUX_ECORRUPT;
    }
    errno = 0;
    epoch = strtoull(digits, &end, 10);
    if (errno || *end) {
        snprintf(why, n, "epoch %s is out of range", digits);
        return LUX_ECORRUPT;
    }
    if (s >= c->shards) {
        snprintf(why, n, "shard %u, but the cluster has %u", s, c->shards);
        return LUX_ECORRUPT;
    }
    if (seen[s]) {
        snprintf(why, n, "a second line for shard %u", s);
        return LUX_ECORRUPT;
    }
    if (epoch == 0) {
        snprintf(why, n, "shard %u: epoch 0 (epochs start at 1)", s);
        return LUX_ECORRUPT;
    }
    const char *p = line + off;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (sscanf(p, "%u%n", &v, &used) != 1 || (p[used] && p[used] != ' ' && p[used] != '\t')) {
            snprintf(why, n, "shard %u: \"%.20s\" is not a replica index", s, p);
            return LUX_ECORRUPT;
        }
        if (v >= c->replicas) {
            snprintf(why, n, "shard %u: replica %u, but the cluster has %u per shard", s, v,
                     c->replicas);
            return LUX_ECORRUPT;
        }
        for (uint32_t j = 0; j < k; j++)
            if (idx[j] == v) {
                snprintf(why, n, "shard %u: replica %u twice in one chain", s, v);
                return LUX_ECORRUPT;
            }
        if (k == DB_MAX_REPLICAS) {
            snprintf(why, n, "shard %u: more than %d members", s, DB_MAX_REPLICAS);
            return LUX_ECORRUPT;
        }
        idx[k++] = v;
        p += used;
    }
    if (k == 0) {
        snprintf(why, n, "shard %u: a chain with no member", s);
        return LUX_ECORRUPT;
    }
    seen[s] = true;
    chains[s].epoch = epoch;
    chains[s].n = k;
    for (uint32_t j = 0; j < k; j++)
        chains[s].m[j].index = idx[j];
    return 0;
}

int
db_chain_load_state(const db_cluster_t *c, db_chain_t *chains)
{
    char path[PATH_MAX + 32], why[200];
    int rc = 0, lineno = 0;
    for (uint32_t s = 0; s < c->shards; s++) {
        memset(&chains[s], 0, sizeof chains[s]);
        chains[s].shard = s;
        chains[s].epoch = 1;
        chains[s].n = c->replicas;
        for (uint32_t k = 0; k < c->replicas; k++)
            chains[s].m[k].index = k;
    }
    char *text = util_read_file(db_cluster_path(c, path, sizeof path, "master.state"), NULL);
    if (!text)
        return 0;
    bool *seen = calloc(c->shards, sizeof *seen);
    if (!seen) {
        free(text);
        return util_err(LUX_ENOMEM, "out of memory");
    }
    for (char *line = text, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if ((rc = strncmp(line, "out ", 4) == 0
                      ? s_out_line(c, line, chains, seen, why, sizeof why)
                      : s_state_line(c, line, chains, seen, why, sizeof why)))
            util_err(rc, "%s line %d: %s", path, lineno, why);
    }
    for (uint32_t s = 0; s < c->shards && !rc; s++)
        if (!seen[s])
            rc = util_err(LUX_ECORRUPT, "%s: no line for shard %u (a shard's chain is never "
                          "guessed: it would restart at epoch 1 with every replica)", path, s);
    free(seen);
    free(text);
    return rc;
}

int
db_chain_save_state(const db_cluster_t *c, const db_chain_t *chains)
{
    char path[PATH_MAX + 32], line[256];
    util_buf_t b;
    int rc;
    util_buf_init(&b);
    util_buf_put(&b, "# Lux chain master state: shard, epoch, chain from head to tail\n", 64);
    for (uint32_t s = 0; s < c->shards; s++) {
        int n = snprintf(line, sizeof line, "shard %u epoch %llu chain", s,
                         (unsigned long long) chains[s].epoch);
        for (uint32_t k = 0; k < chains[s].n; k++)
            n += snprintf(line + n, sizeof line - (size_t) n, " %u", chains[s].m[k].index);
        line[n++] = '\n';
        util_buf_put(&b, line, (size_t) n);
        for (uint32_t i = 0; i < c->replicas && i < DB_MAX_REPLICAS; i++) {
            const db_out_t *o = &chains[s].out[i];
            if (!o->epoch || db_chain_find(&chains[s], i) >= 0)
                continue;
            n = snprintf(line, sizeof line, "out shard %u replica %u epoch %llu committed %llu\n",
                         s, i, (unsigned long long) o->epoch, (unsigned long long) o->committed);
            util_buf_put(&b, line, (size_t) n);
        }
    }
    rc = b.oom ? util_err(LUX_ENOMEM, "out of memory")
               : util_write_file(db_cluster_path(c, path, sizeof path, "master.state"), b.data,
                                 b.len, 0600);
    util_buf_free(&b);
    return rc;
}

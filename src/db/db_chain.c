/*  db_chain - chain configuration and heartbeat encodings (see db_chain.h
    and doc/protocol.md for the byte layouts). Decoding bounds every count
    and length, so a CONFIG or HEARTBEAT of garbage is LUX_EPROTO and never
    overruns a fixed array. */
#include "db_chain.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"

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

int
db_chain_load_state(const db_cluster_t *c, db_chain_t *chains)
{
    char path[PATH_MAX + 32], *text, *line, *save = NULL;
    for (uint32_t s = 0; s < c->shards; s++) {
        memset(&chains[s], 0, sizeof chains[s]);
        chains[s].shard = s;
        chains[s].epoch = 1;
        chains[s].n = c->replicas;
        for (uint32_t k = 0; k < c->replicas; k++)
            chains[s].m[k].index = k;
    }
    text = util_read_file(db_cluster_path(c, path, sizeof path, "master.state"), NULL);
    if (!text)
        return 0;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned s, idx[DB_MAX_REPLICAS], v;
        unsigned long long epoch;
        int off = 0, n = 0, used;
        if (line[0] == '#' || sscanf(line, "shard %u epoch %llu chain%n", &s, &epoch, &off) != 2 ||
            s >= c->shards)
            continue;
        for (char *p = line + off; n < DB_MAX_REPLICAS && sscanf(p, " %u%n", &v, &used) == 1;
             p += used) {
            if (v >= c->replicas)
                break;
            idx[n++] = v;
        }
        if (n == 0)
            continue;
        chains[s].epoch = epoch;
        chains[s].n = (uint32_t) n;
        for (int k = 0; k < n; k++)
            chains[s].m[k].index = idx[k];
    }
    free(text);
    return 0;
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
    }
    rc = b.oom ? util_err(LUX_ENOMEM, "out of memory")
               : util_write_file(db_cluster_path(c, path, sizeof path, "master.state"), b.data,
                                 b.len, 0600);
    util_buf_free(&b);
    return rc;
}

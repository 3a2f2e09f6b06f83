/*  db_ckpt - signed checkpoints and the witness file (see db_ckpt.h).

    WHAT IS SIGNED. Ed25519 (libsodium crypto_sign_detached) over 84 bytes:
        "luxckpt1"  8 bytes, the format's name and version
        cluster    16 bytes, the cluster ID
        shard       4 bytes, u32 little-endian
        seq         8 bytes, u64 little-endian
        hash       16 bytes, the chain hash of event seq (db_event_chain)
        ts          8 bytes, i64 little-endian, ns since the Unix epoch
        24 bytes of zero, reserved
    Because the chain hash at seq covers every event up to seq, the
    signature covers them too: an event changed, dropped or inserted at or
    before seq changes the hash there, whatever hashes follow it.

    THE WITNESS FILE. Text, one checkpoint a line, appended and fsync'd:
        lux-checkpoint 1 CLUSTER SHARD SEQ HASH TS SIG
    CLUSTER, HASH and SIG in lower-case hex, the numbers in decimal. A
    reader skips nothing silently: a line that does not parse is reported
    to the caller as such. The file can live anywhere (lux start
    --witness): on another disk, another machine's mount, an append-only
    store; whoever can truncate it can hide checkpoints, not forge them.

    THE KEYS. One line of hex each: the secret key (64 bytes, libsodium's
    seed-and-public-key form) in a 0600 file that a loader refuses when
    others may read it, and the public key (32 bytes). */
#include "db_ckpt.h"
#include "db_chain.h"
#include "db_client.h"
#include "db_store.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_MSG_LEN 84

char *
db_ckpt_secret_path(const db_cluster_t *c, char *out, size_t n)
{
    return db_cluster_path(c, out, n, "keys/checkpoint.secret");
}

char *
db_ckpt_public_path(const db_cluster_t *c, char *out, size_t n)
{
    return db_cluster_path(c, out, n, "keys/checkpoint.public");
}

char *
db_ckpt_witness_path(const db_cluster_t *c, char *out, size_t n)
{
    return db_cluster_path(c, out, n, "witness");
}

static int
s_init(void)
{
    if (sodium_init() < 0)
        return util_err(LUX_EIO, "libsodium would not initialise");
    return 0;
}

/* Append the public key line hex (with its newline) to the history
   beside public_path unless it lists it already. */
static int
s_history_add(const char *public_path, const char *hex)
{
    char path[PATH_MAX];
    const char *slash = strrchr(public_path, '/');
    int dl = slash ? (int) (slash - public_path + 1) : 0;
    snprintf(path, sizeof path, "%.*scheckpoint.history", dl, public_path);
    size_t len = 0;
    char *text = util_exists(path) ? util_read_file(path, &len) : NULL;
    bool listed = text && strstr(text, hex) != NULL;
    free(text);
    if (listed)
        return 0;
    FILE *f = fopen(path, "a");
    int rc = f && fputs(hex, f) >= 0 ? 0 : LUX_EIO;
    if (f && fclose(f))
        rc = LUX_EIO;
    return rc ? util_err(LUX_EIO, "checkpoint key history %s: %s", path, strerror(errno)) : 0;
}

int
db_ckpt_keygen(const char *secret_path, const char *public_path)
{
    uint8_t pk[DB_CKPT_PK_LEN], sk[DB_CKPT_SK_LEN];
    char hex[2 * DB_CKPT_SK_LEN + 2];
    int rc;
    if (util_exists(secret_path))
        return 0;
    if ((rc = s_init()))
        return rc;
    /* a rotation: the key it replaces stays in the history, so that the
       checkpoints signed with it still verify (lux audit) */
    if (db_ckpt_load_public(public_path, pk) == 0) {
        util_hex(hex, pk, sizeof pk);
        strcat(hex, "\n");
        if ((rc = s_history_add(public_path, hex)))
            return rc;
    }
    crypto_sign_keypair(pk, sk);
    util_hex(hex, pk, sizeof pk);
    strcat(hex, "\n");
    if ((rc = s_history_add(public_path, hex)) ||
        (rc = util_write_file(public_path, hex, strlen(hex), 0644)))
        return util_err_ctx(rc, "checkpoint public key %s", public_path);
    util_hex(hex, sk, sizeof sk);
    strcat(hex, "\n");
    rc = util_write_file(secret_path, hex, strlen(hex), 0600);
    sodium_memzero(sk, sizeof sk);
    sodium_memzero(hex, sizeof hex);
    return rc ? util_err_ctx(rc, "checkpoint signing key %s", secret_path) : 0;
}

static int
s_load(const char *path, uint8_t *out, size_t n, bool secret)
{
    struct stat st;
    size_t len = 0;
    if (stat(path, &st) != 0)
        return util_err(errno == ENOENT ? LUX_ENOTFOUND : LUX_EIO, "%s: %s", path,
                        strerror(errno));
    if (secret && (st.st_mode & 077))
        return util_err(LUX_EAUTH, "%s: the signing key is readable by others (mode %03o);"
                        " chmod 600 it", path, (unsigned) (st.st_mode & 0777));
    char *text = util_read_file(path, &len);
    if (!text)
        return util_err(LUX_EIO, "%s: cannot read it", path);
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        text[--len] = '\0';
    int rc = len == 2 * n ? util_unhex(out, n, text) : LUX_EINVAL;
    if (secret)
        sodium_memzero(text, len);
    free(text);
    if (rc)
        return util_err(LUX_EINVAL, "%s: not a %s key (%zu hex digits expected)", path,
                        secret ? "checkpoint signing" : "checkpoint public", 2 * n);
    return 0;
}

int
db_ckpt_load_secret(const char *path, uint8_t sk[DB_CKPT_SK_LEN])
{
    return s_load(path, sk, DB_CKPT_SK_LEN, true);
}

int
db_ckpt_load_public(const char *path, uint8_t pk[DB_CKPT_PK_LEN])
{
    return s_load(path, pk, DB_CKPT_PK_LEN, false);
}

static void
s_message(const db_ckpt_t *c, uint8_t m[S_MSG_LEN])
{
    memset(m, 0, S_MSG_LEN);
    memcpy(m, "luxckpt1", 8);
    memcpy(m + 8, c->cluster.b, UTIL_ID_LEN);
    util_le32(m + 24, c->shard);
    util_le64(m + 28, c->seq);
    memcpy(m + 36, c->hash, DB_HASH_LEN);
    util_le64(m + 52, (uint64_t) c->ts);
    /* m + 60..83: reserved, zero */
}

void
db_ckpt_sign(db_ckpt_t *c, const uint8_t sk[DB_CKPT_SK_LEN])
{
    uint8_t m[S_MSG_LEN];
    if (s_init())
        return;
    s_message(c, m);
    crypto_sign_detached(c->sig, NULL, m, sizeof m, sk);
}

bool
db_ckpt_verify(const db_ckpt_t *c, const uint8_t pk[DB_CKPT_PK_LEN])
{
    uint8_t m[S_MSG_LEN];
    if (s_init())
        return false;
    s_message(c, m);
    return crypto_sign_verify_detached(c->sig, m, sizeof m, pk) == 0;
}

/* The witness line of c, with its newline: its length, or -1 when it
   does not fit. */
static int
s_line(const db_ckpt_t *c, char *line, size_t len)
{
    char cl[UTIL_ID_HEX], h[2 * DB_HASH_LEN + 1], sig[2 * DB_CKPT_SIG_LEN + 1];
    util_hex(cl, c->cluster.b, UTIL_ID_LEN);
    util_hex(h, c->hash, DB_HASH_LEN);
    util_hex(sig, c->sig, DB_CKPT_SIG_LEN);
    int n = snprintf(line, len, "lux-checkpoint 1 %s %u %llu %s %lld %s\n", cl, c->shard,
                     (unsigned long long) c->seq, h, (long long) c->ts, sig);
    return n < 0 || (size_t) n >= len ? -1 : n;
}

int
db_ckpt_append(const char *witness, const db_ckpt_t *c)
{
    char line[512];
    int n = s_line(c, line, sizeof line);
    if (n < 0)
        return util_err(LUX_EINVAL, "witness line too long");
    int fd = open(witness, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return util_err(LUX_EIO, "witness %s: %s", witness, strerror(errno));
    ssize_t w = write(fd, line, (size_t) n);
    int rc = w == n && fsync(fd) == 0 ? 0 : -1;
    int err = errno;
    close(fd);
    if (rc)
        return util_err(LUX_EIO, "witness %s: %s", witness,
                        w >= 0 && w != n ? "short write" : strerror(err));
    return 0;
}

static bool
s_parse(const char *line, db_ckpt_t *c)
{
    char cl[64], h[64], sig[160];
    unsigned shard;
    unsigned long long seq;
    long long ts;
    int end = 0;
    if (sscanf(line, "lux-checkpoint 1 %63s %u %llu %63s %lld %159s%n", cl, &shard, &seq, h, &ts,
               sig, &end) != 6)
        return false;
    if (line[end] && line[end] != '\n')
        return false;
    c->shard = shard;
    c->seq = seq;
    c->ts = ts;
    return strlen(cl) == 2 * UTIL_ID_LEN && util_unhex(c->cluster.b, UTIL_ID_LEN, cl) == 0 &&
           strlen(h) == 2 * DB_HASH_LEN && util_unhex(c->hash, DB_HASH_LEN, h) == 0 &&
           strlen(sig) == 2 * DB_CKPT_SIG_LEN && util_unhex(c->sig, DB_CKPT_SIG_LEN, sig) == 0;
}

int
db_ckpt_each(const char *witness, int (*fn)(void *arg, int line, const db_ckpt_t *c), void *arg)
{
    FILE *f = fopen(witness, "r");
    char line[1024];
    int no = 0;
    if (!f)
        return util_err(errno == ENOENT ? LUX_ENOTFOUND : LUX_EIO, "witness %s: %s", witness,
                        strerror(errno));
    while (fgets(line, sizeof line, f)) {
        db_ckpt_t c;
        memset(&c, 0, sizeof c);
        no++;
        if (fn(arg, no, s_parse(line, &c) ? &c : NULL))
            break;
    }
    fclose(f);
    return 0;
}

int
db_ckpt_take(const db_cluster_t *c, const uint8_t sk[DB_CKPT_SK_LEN], const char *witness,
             uint32_t shard, uint64_t after, uint64_t *seq, db_ckpt_t *out)
{
    char path[PATH_MAX];
    db_chain_t *chains = calloc(c->shards, sizeof *chains);
    int rc;
    *seq = after;
    if (!chains)
        return util_err(LUX_ENOMEM, "out of memory");
    rc = db_chain_load_state(c, chains);
    if (rc || shard >= c->shards || chains[shard].n == 0) {
        free(chains);
        return util_err(LUX_ENOTFOUND, "shard %u: no chain configuration to find the tail", shard);
    }
    db_cluster_replica_db(c, shard, chains[shard].m[chains[shard].n - 1].index, path, sizeof path);
    free(chains);
    db_store_opts_t so = {.path = path, .cluster = c->id, .shard = shard, .readonly = true};
    db_store_t *st = db_store_open(&so);
    if (!st)
        return util_err_ctx(LUX_EIO, "checkpoint of shard %u", shard);
    db_ckpt_t ck = {.cluster = c->id, .shard = shard, .seq = db_store_last_seq(st)};
    memcpy(ck.hash, db_store_last_hash(st), DB_HASH_LEN);
    db_store_close(&st);
    if (ck.seq <= after)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ck.ts = (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
    db_ckpt_sign(&ck, sk);
    if ((rc = db_ckpt_append(witness, &ck)))
        return rc;
    *seq = ck.seq;
    if (out)
        *out = ck;
    return 0;
}

void
db_ckpt_shard_key(const util_id_t *cluster, uint32_t shard, uint32_t shards, util_id_t *key)
{
    /* the first of a series of IDs made from (cluster, shard, k) that the
       shard function sends to shard: about `shards` tries */
    for (uint32_t k = 0;; k++) {
        uint8_t in[UTIL_ID_LEN + 8];
        memcpy(in, cluster->b, UTIL_ID_LEN);
        memcpy(in + UTIL_ID_LEN, &shard, 4);
        memcpy(in + UTIL_ID_LEN + 4, &k, 4);
        crypto_generichash(key->b, UTIL_ID_LEN, in, sizeof in, (const uint8_t *) "luxckpt", 7);
        if (util_id_shard(key, shards) == shard)
            return;
    }
}

int
db_ckpt_event(const db_ckpt_t *c, uint32_t shards, db_event_t *e, char *line, size_t n)
{
    util_id_t key;
    if (s_line(c, line, n) < 0)
        return util_err(LUX_EINVAL, "witness line too long");
    line[strcspn(line, "\n")] = '\0';
    db_ckpt_shard_key(&c->cluster, c->shard, shards, &key);
    memset(e, 0, sizeof *e);
    e->kind = DB_K_checkpoint;
    DB_SET_ID(e, job, DB_F_JOB, &key);
    DB_SET_INT(e, idx, DB_F_IDX, (int64_t) c->seq);
    db_event_set_info(e, line);
    return 0;
}

int
db_ckpt_parse(const char *line, db_ckpt_t *c)
{
    return s_parse(line, c) ? 0 : util_err(LUX_EINVAL, "not a checkpoint line: %.80s", line);
}

int
db_ckpt_log(db_client_t *log, const db_ckpt_t *c, uint32_t shards)
{
    char line[512];
    db_event_t e;
    int rc = db_ckpt_event(c, shards, &e, line, sizeof line);
    if (!rc)
        rc = db_client_append(log, &e);
    if (!rc)
        rc = db_client_flush(log);
    return rc;
}

int
db_ckpt_check_event(const util_id_t *cluster, uint32_t shard, uint64_t at, int64_t idx,
                    const char *info, const db_ckpt_keys_t *keys, db_ckpt_t *c)
{
    memset(c, 0, sizeof *c);
    if (!info || !s_parse(info, c))
        return util_err(LUX_ECORRUPT, "its info is not a checkpoint line (\"%.60s\")",
                        info ? info : "");
    if (!util_id_eq(&c->cluster, cluster))
        return util_err(LUX_ECORRUPT, "it is a checkpoint of another cluster");
    if (c->shard != shard)
        return util_err(LUX_ECORRUPT, "it signs shard %u, not the shard it is in", c->shard);
    if (idx < 0 || (uint64_t) idx != c->seq)
        return util_err(LUX_ECORRUPT, "its idx %lld is not the seq %llu it signs",
                        (long long) idx, (unsigned long long) c->seq);
    if (c->seq == 0 || c->seq >= at)
        return util_err(LUX_ECORRUPT, "it signs seq %llu, not a seq before its own",
                        (unsigned long long) c->seq);
    if (keys && !db_ckpt_keys_verify(c, keys))
        return util_err(LUX_EAUTH, "its signature of seq %llu fails with %s (forged, altered,"
                        " or signed with a key not given)", (unsigned long long) c->seq,
                        keys->n == 1 ? "the public key" : "every public key given");
    return 0;
}

char *
db_ckpt_history_path(const db_cluster_t *c, char *out, size_t n)
{
    return db_cluster_path(c, out, n, "keys/checkpoint.history");
}

int
db_ckpt_keys_add(db_ckpt_keys_t *k, const char *path)
{
    size_t len = 0;
    if (!util_exists(path))
        return util_err(LUX_ENOTFOUND, "%s: no such public key file", path);
    char *text = util_read_file(path, &len);
    if (!text)
        return util_err(LUX_EIO, "%s: cannot read it", path);
    int rc = 0, line = 0, added = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && !rc;
         l = strtok_r(NULL, "\n", &save)) {
        line++;
        size_t n = strlen(l);
        while (n && (l[n - 1] == '\r' || l[n - 1] == ' '))
            l[--n] = '\0';
        if (!n)
            continue;
        if (k->n >= DB_CKPT_KEYS_MAX)
            rc = util_err(LUX_EINVAL, "%s line %d: more than %d public keys", path, line,
                          DB_CKPT_KEYS_MAX);
        else if (n != 2 * DB_CKPT_PK_LEN || util_unhex(k->pk[k->n], DB_CKPT_PK_LEN, l))
            rc = util_err(LUX_EINVAL, "%s line %d: not a checkpoint public key (%d hex digits"
                          " expected)", path, line, 2 * DB_CKPT_PK_LEN);
        else {
            k->n++;
            added++;
        }
    }
    free(text);
    if (!rc && !added)
        rc = util_err(LUX_EINVAL, "%s: no public key in it", path);
    return rc;
}

bool
db_ckpt_keys_verify(const db_ckpt_t *c, const db_ckpt_keys_t *k)
{
    for (int i = 0; i < k->n; i++)
        if (db_ckpt_verify(c, k->pk[i]))
            return true;
    return false;
}

int
db_ckpt_keys_cluster(const db_cluster_t *c, db_ckpt_keys_t *k, char *from, size_t n)
{
    db_ckpt_history_path(c, from, n);
    if (!util_exists(from))
        db_ckpt_public_path(c, from, n);
    return db_ckpt_keys_add(k, from);
}

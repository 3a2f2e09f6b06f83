/*  db_cluster - cluster directory, settings file and paths.

    cluster.conf is "key value" lines, '#' comments, written once, whole,
    by db_cluster_create (a temporary file, fsync'd, renamed over). A key
    this version does not know is skipped with no error, so newer settings
    do not break an older reader; a line that is not "key value", a value
    out of its key's range, a key given twice or a required key missing
    is LUX_ECORRUPT naming the file and the line.
*/
#include "db_cluster.h"
#include "../net/net_ep.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
db_cluster_defaults(db_cluster_t *c)
{
    memset(c, 0, sizeof *c);
    c->shards = 4;
    c->replicas = 1;
    c->heartbeat_ms = 100;
    c->dead_ms = 1000;
    snprintf(c->listen, sizeof c->listen, "ipc");
    c->master_port = 6379 + 1000; /* 7379 */
    c->record_puts = DB_RECORD_PUTS_DEFAULT;
}

int
db_cluster_parse_size(const char *s, uint64_t *out)
{
    if (strcmp(s, "none") == 0) {
        *out = 0;
        return 0;
    }
    if (strcmp(s, "all") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (end != s && *end && !end[1])
        shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20
              : *end == 'G' || *end == 'g' ? 30 : *end == 'T' || *end == 't' ? 40 : -1;
    if (end == s || s[0] == '-' || errno || shift < 0 || (*end && shift == 0) ||
        (shift && v > (UINT64_MAX >> shift)))
        return util_err(LUX_EINVAL, "'%s' is not a size (a number of bytes, with K, M, G or T "
                        "for powers of 1024, or none, or all)", s);
    *out = (uint64_t) v << shift;
    return 0;
}

char *
db_cluster_path(const db_cluster_t *c, char *out, size_t n, const char *rel)
{
    snprintf(out, n, "%s/%s", c->dir, rel);
    return out;
}

char *
db_cluster_replica_db(const db_cluster_t *c, uint32_t shard, uint32_t index, char *out, size_t n)
{
    snprintf(out, n, "%s/shard-%u/replica-%u.db", c->dir, shard, index);
    return out;
}

bool
db_cluster_tcp(const db_cluster_t *c)
{
    return strncmp(c->listen, "tcp://", 6) == 0;
}

static const char *s_ep_names[DB_EP_N] = {"append", "chain", "read", "pub"};

char *
db_cluster_replica_ep(const db_cluster_t *c, uint32_t shard, uint32_t index, int kind, char *out,
                      size_t n)
{
    if (db_cluster_tcp(c))
        snprintf(out, n, "%s:*", c->listen);
    else
        snprintf(out, n, "ipc://%s/r%u.%u-%s", c->sock_dir, shard, index, s_ep_names[kind]);
    return out;
}

/* The master's tcp endpoint at port: to bind, the listen host as it is;
   to connect, an address of it (a wildcard such as 0.0.0.0 cannot be
   connected to, or reaches only this machine). */
static char *
s_master_tcp(const db_cluster_t *c, int port, bool bind, char *out, size_t n)
{
    char host[DB_EP_MAX];
    if (bind || net_host_address(c->listen + 6, host, sizeof host))
        snprintf(host, sizeof host, "%s", c->listen + 6);
    snprintf(out, n, "tcp://%s:%d", host, port);
    return out;
}

char *
db_cluster_master_ep(const db_cluster_t *c, char *out, size_t n)
{
    if (db_cluster_tcp(c))
        return s_master_tcp(c, c->master_port, false, out, n);
    snprintf(out, n, "ipc://%s/master", c->sock_dir);
    return out;
}

char *
db_cluster_master_pub(const db_cluster_t *c, char *out, size_t n)
{
    if (db_cluster_tcp(c))
        return s_master_tcp(c, c->master_port + 1, false, out, n);
    snprintf(out, n, "ipc://%s/master-pub", c->sock_dir);
    return out;
}

char *
db_cluster_master_bind(const db_cluster_t *c, bool pub, char *out, size_t n)
{
    if (db_cluster_tcp(c))
        return s_master_tcp(c, c->master_port + (pub ? 1 : 0), true, out, n);
    return pub ? db_cluster_master_pub(c, out, n) : db_cluster_master_ep(c, out, n);
}

char *
db_cluster_members_ep(const db_cluster_t *c, bool bind, char *out, size_t n)
{
    if (db_cluster_tcp(c))
        return s_master_tcp(c, c->master_port + 2, bind, out, n);
    snprintf(out, n, "ipc://%s/members", c->sock_dir);
    return out;
}

char *
db_cluster_node_ep(const db_cluster_t *c, const char *host, char *out, size_t n)
{
    if (!db_cluster_tcp(c) || !host || !*host)
        return NULL;
    snprintf(out, n, "tcp://%s:%d", host, c->master_port + DB_NODE_PORT_OFFSET);
    return out;
}

char *
db_cluster_head_node_ep(const db_cluster_t *c, char *out, size_t n)
{
    if (!db_cluster_tcp(c))
        return NULL;
    return s_master_tcp(c, c->master_port + DB_NODE_PORT_OFFSET, false, out, n);
}

/* Pick the socket directory: DIR/sock when ipc paths fit in a sockaddr_un
   (108 bytes, with room for the longest name), else a private /tmp one. */
static int
s_sock_dir(db_cluster_t *c)
{
    char hex[UTIL_ID_HEX];
    snprintf(c->sock_dir, sizeof c->sock_dir, "%s/sock", c->dir);
    if (strlen(c->sock_dir) + 24 >= 100) {
        util_id_hex(&c->id, hex);
        snprintf(c->sock_dir, sizeof c->sock_dir, "/tmp/lux-%d-%.12s", (int) getuid(), hex);
    }
    return util_private_dir(c->sock_dir);
}

static int
s_write_conf(const db_cluster_t *c, bool node)
{
    char path[PATH_MAX + 32], hex[UTIL_ID_HEX], buf[8192], when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    snprintf(buf, sizeof buf,
             "# Lux cluster settings, written by lux start on %s; see lux(1).\n"
             "%s"
             "cluster %s\nshards %u\nreplicas %u\nsync %s\nheartbeat_ms %d\ndead_ms %d\n"
             "listen %s\nmaster_port %d\nsock_dir %s\n"
             "# the largest put recorded in blobs/ for replay, in bytes\nrecord_puts %" PRIu64 "\n",
             when,
             node ? "# A node of the cluster whose head listens at 'listen' and 'master_port'.\n"
                    "role node\n"
                  : "",
             util_id_hex(&c->id, hex), c->shards, c->replicas,
             c->sync_full ? "full" : "normal", c->heartbeat_ms, c->dead_ms, c->listen,
             c->master_port, c->sock_dir, c->record_puts);
    return util_write_file(db_cluster_path(c, path, sizeof path, "cluster.conf"), buf,
                           strlen(buf), 0600);
}

int
db_cluster_create(db_cluster_t *c)
{
    char path[PATH_MAX + 32];
    int rc;

    if (c->shards < 1 || c->shards > DB_MAX_SHARDS)
        return util_err(LUX_EINVAL, "--shards must be 1..%d, not %u", DB_MAX_SHARDS, c->shards);
    if (c->replicas < 1 || c->replicas > DB_MAX_REPLICAS)
        return util_err(LUX_EINVAL, "--replicas must be 1..%d, not %u", DB_MAX_REPLICAS,
                        c->replicas);
    if (strcmp(c->listen, "ipc") != 0 && !db_cluster_tcp(c))
        return util_err(LUX_EINVAL, "--listen must be ipc or tcp://HOST, not '%s'", c->listen);
    if ((rc = util_private_dir(c->dir)))
        return rc;
    if (util_exists(db_cluster_path(c, path, sizeof path, "cluster.conf")))
        return util_err(LUX_EEXIST, "%s already holds a cluster (%s)", c->dir, path);
    if (util_id_is_zero(&c->id))
        util_id_random(&c->id);
    if ((rc = s_sock_dir(c)) ||
        (rc = util_private_dir(db_cluster_path(c, path, sizeof path, "log"))) ||
        (rc = util_private_dir(db_cluster_path(c, path, sizeof path, "run"))))
        return rc;
    for (uint32_t s = 0; s < c->shards; s++) {
        snprintf(path, sizeof path, "%s/shard-%u", c->dir, s);
        if ((rc = util_private_dir(path)))
            return rc;
    }
    if ((rc = net_sec_create(db_cluster_path(c, path, sizeof path, "keys"))))
        return rc;
    return s_write_conf(c, false);
}

int
db_cluster_create_node(db_cluster_t *c)
{
    char path[PATH_MAX + 32];
    int rc;
    if (!db_cluster_tcp(c))
        return util_err(LUX_EINVAL, "a node joins a head over tcp, not '%s'", c->listen);
    if ((rc = util_private_dir(c->dir)))
        return rc;
    if ((rc = s_sock_dir(c)) ||
        (rc = util_private_dir(db_cluster_path(c, path, sizeof path, "log"))) ||
        (rc = util_private_dir(db_cluster_path(c, path, sizeof path, "run"))))
        return rc;
    c->node = true;
    return s_write_conf(c, true);
}

/* The keys of cluster.conf: where each goes and what it may hold. */
enum { S_ID, S_U32, S_U64, S_INT, S_SYNC, S_ROLE, S_STR };
typedef struct {
    const char *key;
    int type;
    size_t off;           /* in db_cluster_t */
    size_t size;          /* S_STR: the field's size */
    unsigned long lo, hi; /* S_U32, S_INT: the range */
    bool required;
} s_key_t;

#define S_KEY(k, t, f, lo, hi, req)                                                                \
    {k, t, offsetof(db_cluster_t, f), sizeof(((db_cluster_t *) 0)->f), lo, hi, req}
static const s_key_t s_keys[] = {
    S_KEY("cluster", S_ID, id, 0, 0, true),
    S_KEY("shards", S_U32, shards, 1, DB_MAX_SHARDS, true),
    S_KEY("replicas", S_U32, replicas, 1, DB_MAX_REPLICAS, true),
    S_KEY("sync", S_SYNC, sync_full, 0, 0, false),
    S_KEY("heartbeat_ms", S_INT, heartbeat_ms, 1, 3600000, false),
    S_KEY("dead_ms", S_INT, dead_ms, 2, 36000000, false),
    S_KEY("listen", S_STR, listen, 0, 0, false),
    S_KEY("master_port", S_INT, master_port, 1, 65534, false),
    S_KEY("record_puts", S_U64, record_puts, 0, 0, false),
    S_KEY("sock_dir", S_STR, sock_dir, 0, 0, true),
    S_KEY("role", S_ROLE, node, 0, 0, false),
};
#define S_NKEYS (sizeof s_keys / sizeof s_keys[0])

/* Set the key's field from val; 0, or a message in why. */
static int
s_set(db_cluster_t *c, const s_key_t *k, const char *val, char *why, size_t n)
{
    char *field = (char *) c + k->off, *end;
    switch (k->type) {
    case S_ID:
        if (strlen(val) != 32 || util_id_parse((util_id_t *) (void *) field, val)) {
            snprintf(why, n, "'%s' is not a cluster ID (32 hex digits)", val);
            return -1;
        }
        return 0;
    case S_U32:
    case S_INT: {
        unsigned long v = strtoul(val, &end, 10);
        if (!*val || *end || *val == '-' || *val == '+' || v < k->lo || v > k->hi) {
            snprintf(why, n, "'%s' is not a number from %lu to %lu", val, k->lo, k->hi);
            return -1;
        }
        if (k->type == S_U32)
            *(uint32_t *) (void *) field = (uint32_t) v;
        else
            *(int *) (void *) field = (int) v;
        return 0;
    }
    case S_U64: {
        errno = 0;
        unsigned long long v = strtoull(val, &end, 10);
        if (!*val || *end || *val == '-' || *val == '+' || errno) {
            snprintf(why, n, "'%s' is not a number of bytes", val);
            return -1;
        }
        *(uint64_t *) (void *) field = (uint64_t) v;
        return 0;
    }
    case S_ROLE: /* a node's directory (db_cluster_create_node) */
        if (strcmp(val, "node")) {
            snprintf(why, n, "'%s' is not a role (node)", val);
            return -1;
        }
        *(bool *) (void *) field = true;
        return 0;
    case S_SYNC:
        if (strcmp(val, "full") && strcmp(val, "normal")) {
            snprintf(why, n, "'%s' is not normal or full", val);
            return -1;
        }
        *(bool *) (void *) field = strcmp(val, "full") == 0;
        return 0;
    default:
        if (strlen(val) >= k->size) {
            snprintf(why, n, "longer than %zu bytes", k->size - 1);
            return -1;
        }
        memcpy(field, val, strlen(val) + 1);
        return 0;
    }
}

int
db_cluster_load(db_cluster_t *c, const char *dir)
{
    char path[PATH_MAX + 32], why[PATH_MAX + 64];
    int at[S_NKEYS] = {0}; /* the line each key was read from */
    int lineno = 0, rc = 0;

    db_cluster_defaults(c);
    if (util_abspath(dir, c->dir, sizeof c->dir))
        return LUX_EINVAL;
    char *text = util_read_file(db_cluster_path(c, path, sizeof path, "cluster.conf"), NULL);
    if (!text)
        return util_err(LUX_ENOTFOUND, "%s: no cluster here (no cluster.conf; start one with "
                        "lux start --head --dir %s)", dir, dir);
    /* "key value" lines, '#' comments, blank lines; a key this version does
       not know is skipped (a newer writer's), anything else is an error
       naming the line */
    for (char *line = text, *next; line && *line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!*line || *line == '#')
            continue;
        size_t klen = strspn(line, "abcdefghijklmnopqrstuvwxyz_0123456789");
        const char *val = line + klen + strspn(line + klen, " \t");
        if (!klen || val == line + klen || !*val) {
            rc = util_err(LUX_ECORRUPT, "%s:%d: not a 'key value' line: '%.80s'", path, lineno,
                          line);
            break;
        }
        line[klen] = '\0';
        for (size_t k = 0; k < S_NKEYS; k++) {
            if (strcmp(line, s_keys[k].key) != 0)
                continue;
            if (at[k])
                rc = util_err(LUX_ECORRUPT, "%s:%d: %s given twice (first on line %d)", path,
                              lineno, line, at[k]);
            else if (s_set(c, &s_keys[k], val, why, sizeof why))
                rc = util_err(LUX_ECORRUPT, "%s:%d: %s: %s", path, lineno, line, why);
            at[k] = lineno;
            break;
        }
    }
    free(text);
    if (rc)
        return rc;
    for (size_t k = 0; k < S_NKEYS; k++)
        if (s_keys[k].required && !at[k])
            return util_err(LUX_ECORRUPT, "%s: no %s line", path, s_keys[k].key);
    if (c->dead_ms < 2 * c->heartbeat_ms)
        return util_err(LUX_ECORRUPT, "%s: dead_ms (%d) is less than twice heartbeat_ms (%d)",
                        path, c->dead_ms, c->heartbeat_ms);
    return 0;
}

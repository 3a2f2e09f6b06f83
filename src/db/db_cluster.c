/*  db_cluster - cluster directory, settings file and paths.

    cluster.conf is "key value" lines, '#' comments; unknown keys are kept
    by nobody and ignored with no error, so newer settings do not break an
    older reader. A missing required key is LUX_ECORRUPT naming it.
*/
#include "db_cluster.h"
#include "../net/net_ep.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"

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
    char path[PATH_MAX + 32], hex[UTIL_ID_HEX], buf[4096], when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    snprintf(buf, sizeof buf,
             "# Lux cluster settings, written by lux start on %s; see lux(1).\n"
             "%s"
             "cluster %s\nshards %u\nreplicas %u\nsync %s\nheartbeat_ms %d\ndead_ms %d\n"
             "listen %s\nmaster_port %d\nsock_dir %s\n",
             when,
             node ? "# A node of the cluster whose head listens at 'listen' and 'master_port'.\n"
                    "role node\n"
                  : "",
             util_id_hex(&c->id, hex), c->shards, c->replicas,
             c->sync_full ? "full" : "normal", c->heartbeat_ms, c->dead_ms, c->listen,
             c->master_port, c->sock_dir);
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

int
db_cluster_load(db_cluster_t *c, const char *dir)
{
    char path[PATH_MAX + 32];
    char *text, *line, *save = NULL;
    int have = 0;

    db_cluster_defaults(c);
    if (util_abspath(dir, c->dir, sizeof c->dir))
        return LUX_EINVAL;
    text = util_read_file(db_cluster_path(c, path, sizeof path, "cluster.conf"), NULL);
    if (!text)
        return util_err(LUX_ENOTFOUND, "%s: no cluster here (no cluster.conf; start one with "
                        "lux start --head --dir %s)", dir, dir);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char key[64], val[PATH_MAX];
        if (line[0] == '#' || sscanf(line, "%63s %4095[^\n]", key, val) != 2)
            continue;
        if (strcmp(key, "cluster") == 0) {
            if (util_id_parse(&c->id, val) == 0)
                have |= 1;
        } else if (strcmp(key, "shards") == 0) {
            c->shards = (uint32_t) strtoul(val, NULL, 10);
            have |= 2;
        } else if (strcmp(key, "replicas") == 0) {
            c->replicas = (uint32_t) strtoul(val, NULL, 10);
            have |= 4;
        } else if (strcmp(key, "sync") == 0) {
            c->sync_full = strcmp(val, "full") == 0;
        } else if (strcmp(key, "heartbeat_ms") == 0) {
            c->heartbeat_ms = atoi(val);
        } else if (strcmp(key, "dead_ms") == 0) {
            c->dead_ms = atoi(val);
        } else if (strcmp(key, "listen") == 0) {
            snprintf(c->listen, sizeof c->listen, "%s", val);
        } else if (strcmp(key, "master_port") == 0) {
            c->master_port = atoi(val);
        } else if (strcmp(key, "role") == 0) {
            c->node = strcmp(val, "node") == 0;
        } else if (strcmp(key, "sock_dir") == 0) {
            snprintf(c->sock_dir, sizeof c->sock_dir, "%s", val);
            have |= 8;
        }
    }
    free(text);
    if (have != 15)
        return util_err(LUX_ECORRUPT, "%s: cluster.conf lacks %s", dir,
                        !(have & 1)   ? "a valid cluster ID"
                        : !(have & 2) ? "shards"
                        : !(have & 4) ? "replicas"
                                      : "sock_dir");
    if (c->shards < 1 || c->shards > DB_MAX_SHARDS || c->replicas < 1 ||
        c->replicas > DB_MAX_REPLICAS || c->heartbeat_ms < 1 || c->dead_ms < 2 * c->heartbeat_ms)
        return util_err(LUX_ECORRUPT, "%s: cluster.conf has settings out of range", dir);
    return 0;
}

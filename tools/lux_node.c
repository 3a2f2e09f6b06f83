/*  lux_node - the machines of a cluster: the token a head writes, `lux
    start --address` (a node that joins a head), its daemon `lux node`,
    its heartbeat, `lux stop` of a node, and the nodes' part of `lux
    status`.

    A node's directory D holds cluster.conf ("role node": the head's
    cluster ID, shards and master address), keys/ (the cluster's CURVE
    pair, from the token), sock/ (its node manager's private socket),
    log/node.log, run/node.pid, run/node.joined (its node ID, once the
    head took its first heartbeat) and spill/. No log replica runs there:
    the node appends to the head's over CURVE.
*/
#include "lux_cmd.h"
#include "lux_node.h"
#include "lux_opt.h"
#include "db/db_chain.h"
#include "db/db_master.h"
#include "db/db_replica.h"
#include "exec/exec_gpu.h"
#include "exec/exec_members.h"
#include "exec/exec_node.h"
#include "net/net_ep.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_log.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- the token ------------------------------------------------------------------------- */

char *
lux_token_path(const db_cluster_t *c, char *out, size_t n)
{
    return db_cluster_path(c, out, n, "token");
}

int
lux_token_write(const db_cluster_t *c)
{
    char keys[PATH_MAX + 32], path[PATH_MAX + 32], hex[UTIL_ID_HEX], ep[DB_EP_MAX], text[1024];
    net_sec_t *sec = net_sec_load(db_cluster_path(c, keys, sizeof keys, "keys"));
    if (!sec)
        return LUX_EAUTH;
    snprintf(text, sizeof text,
             "# Lux cluster token, written by lux start --head: it lets a machine join the\n"
             "# cluster (lux start --address HOST:PORT --token-file THIS). It holds the\n"
             "# cluster's CURVE secret key: keep it 0600, copy it only to your machines.\n"
             "cluster %s\nshards %u\nreplicas %u\nsync %s\nheartbeat_ms %d\ndead_ms %d\n"
             "head %s\npublic %s\nsecret %s\n",
             util_id_hex(&c->id, hex), c->shards, c->replicas, c->sync_full ? "full" : "normal",
             c->heartbeat_ms, c->dead_ms, db_cluster_master_ep(c, ep, sizeof ep),
             net_sec_public(sec), net_sec_secret(sec));
    net_sec_destroy(&sec);
    int rc = util_write_file(lux_token_path(c, path, sizeof path), text, strlen(text), 0600);
    chmod(path, 0600); /* an older one may have had another mode */
    return rc;
}

/* Read a token into c (the cluster's settings; master address from
   address HOST:PORT) and the two keys. */
static int
s_token_read(const char *file, const char *address, db_cluster_t *c, char *pub, char *secret)
{
    struct stat st;
    if (stat(file, &st) < 0)
        return util_err(LUX_ENOTFOUND, "token file %s: %s", file, strerror(errno));
    if (st.st_mode & 077)
        return util_err(LUX_EAUTH, "token file %s is readable by others (mode %o): it holds the "
                        "cluster's secret key; chmod 600 it", file, st.st_mode & 0777);
    char *text = util_read_file(file, NULL);
    if (!text)
        return util_err(LUX_EIO, "token file %s: cannot read it", file);
    char v[256];
    db_cluster_defaults(c);
    int rc = 0;
    if (!exec_members_get(text, "cluster", v, sizeof v) || util_id_parse(&c->id, v))
        rc = util_err(LUX_EINVAL, "token file %s has no cluster ID: not a Lux token", file);
    else if (!exec_members_get(text, "public", pub, 41) || strlen(pub) != 40 ||
             !exec_members_get(text, "secret", secret, 41) || strlen(secret) != 40)
        rc = util_err(LUX_EINVAL, "token file %s lacks the cluster's key pair", file);
    if (!rc) {
        if (exec_members_get(text, "shards", v, sizeof v))
            c->shards = (uint32_t) strtoul(v, NULL, 10);
        if (exec_members_get(text, "replicas", v, sizeof v))
            c->replicas = (uint32_t) strtoul(v, NULL, 10);
        if (exec_members_get(text, "sync", v, sizeof v))
            c->sync_full = strcmp(v, "full") == 0;
        if (exec_members_get(text, "heartbeat_ms", v, sizeof v))
            c->heartbeat_ms = atoi(v);
        if (exec_members_get(text, "dead_ms", v, sizeof v))
            c->dead_ms = atoi(v);
    }
    free(text);
    if (rc)
        return rc;
    /* HOST:PORT: the head's chain master */
    const char *colon = strrchr(address, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == address || *end || port < 1 || port > 65533)
        return util_err(LUX_EINVAL, "--address %s is not HOST:PORT (the head's, as lux start "
                        "--head printed it)", address);
    snprintf(c->listen, sizeof c->listen, "tcp://%.*s", (int) (colon - address), address);
    c->master_port = (int) port;
    return 0;
}

/* The address of this machine that reaches host (the source address a
   datagram to it would take; nothing is sent). */
static int
s_local_ip_to(const char *host, char *out, size_t n)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai;
    if (getaddrinfo(host, "9", &hints, &ai) != 0)
        return util_err(LUX_ENOTFOUND, "cannot resolve %s", host);
    int fd = socket(AF_INET, SOCK_DGRAM, 0), rc = LUX_EIO;
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *) &me, &len) == 0 &&
        inet_ntop(AF_INET, &me.sin_addr, out, (socklen_t) n))
        rc = 0;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return rc ? util_err(rc, "no local address reaches %s", host) : 0;
}

/* --- heartbeats ------------------------------------------------------------------------- */

struct lux_beat {
    zsock_t *dealer;
    char ep[DB_EP_MAX];
    char extra[1024];      /* lines of the daemon's own: address, host, dir, gpus */
    char node[UTIL_ID_HEX];
    int64_t next_ms, ok_ms, warned_ms;
    bool joined;
};

lux_beat_t *
lux_beat_new(const db_cluster_t *c, net_sec_t *sec, const char *address, const char *role)
{
    lux_beat_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    db_cluster_members_ep(c, false, b->ep, sizeof b->ep);
    if (!(b->dealer = net_connect(ZMQ_DEALER, b->ep, sec))) {
        free(b);
        return NULL;
    }
    zsock_set_linger(b->dealer, 0);
    char host[256] = "?";
    gethostname(host, sizeof host);
    int ids[EXEC_GPU_MAX], n = exec_gpu_detect(ids, EXEC_GPU_MAX);
    size_t k = (size_t) snprintf(b->extra, sizeof b->extra, "address %s\nhost %s\nrole %s\ndir %s\ngpus ",
                                 address, host, role, c->dir);
    for (int i = 0; i < n && k < sizeof b->extra; i++)
        k += (size_t) snprintf(b->extra + k, sizeof b->extra - k, "%s%d", i ? "," : "", ids[i]);
    snprintf(b->extra + k, sizeof b->extra - k, "%s\ngpu_source %s\n", n ? "" : "-",
             exec_gpu_source());
    b->ok_ms = util_mono_ms();
    return b;
}

void
lux_beat_destroy(lux_beat_t **p)
{
    if (*p) {
        zsock_destroy(&(*p)->dealer);
        free(*p);
        *p = NULL;
    }
}

void
lux_beat_wait(lux_beat_t *self)
{
    int64_t left = self->next_ms - util_mono_ms();
    if (left <= 0)
        return;
    zmq_pollitem_t item = {zsock_resolve(self->dealer), 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1, (long) left); /* a signal ends it too (EINTR) */
}

const char *
lux_beat_node(const lux_beat_t *b)
{
    return b->node[0] ? b->node : NULL;
}

int
lux_beat_tick(lux_beat_t *b, zactor_t *node, const char *joined_file)
{
    int64_t now = util_mono_ms();
    int rc = 0;
    if (now >= b->next_ms) {
        b->next_ms = now + EXEC_MEMBERS_BEAT_MS;
        zstr_send(node, "STATS");
        zpoller_t *p = zpoller_new(node, NULL);
        zpoller_set_nonstop(p, true);
        char *stats = zpoller_wait(p, 2000) == node ? zstr_recv(node) : NULL;
        zpoller_destroy(&p);
        if (stats) {
            exec_members_get(stats, "node", b->node, sizeof b->node);
            zmsg_t *m = zmsg_new();
            zmsg_addstr(m, "BEAT");
            zmsg_addstrf(m, "%s%s", stats, b->extra);
            zmsg_send(&m, b->dealer);
            zstr_free(&stats);
        }
        if (now - b->ok_ms > EXEC_MEMBERS_DEAD_MS && now - b->warned_ms > 10000) {
            log_warn("the head's membership endpoint %s has not answered for %lld ms", b->ep,
                     (long long) (now - b->ok_ms));
            b->warned_ms = now;
        }
    }
    while (zsock_events(b->dealer) & ZMQ_POLLIN) {
        zmsg_t *r = zmsg_recv(b->dealer);
        char *what = r ? zmsg_popstr(r) : NULL, *why = r ? zmsg_popstr(r) : NULL;
        if (what && strcmp(what, "OK") == 0) {
            b->ok_ms = now;
            if (!b->joined && b->node[0]) {
                b->joined = true;
                log_info("joined: the head took node %s's first heartbeat", b->node);
                if (joined_file)
                    util_write_file(joined_file, b->node, strlen(b->node), 0600);
            }
        } else if (what && strcmp(what, "DEAD") == 0) {
            rc = util_err(LUX_EDEAD, "the head declared node %s dead: %s", b->node,
                          why ? why : "");
        } else if (what) {
            log_warn("the head's membership monitor: %s %s", what, why ? why : "");
        }
        free(what);
        free(why);
        zmsg_destroy(&r);
    }
    return rc;
}

/* --- the node's daemon ------------------------------------------------------------------ */

int
lux_node_opt(lux_opt_t *p, int o, exec_node_opts_t *no)
{
    unsigned long v;
    switch (o) {
    case 'w':
        if (!lux_opt_uint(p, "--workers", 4096, false, &v))
            return -1;
        no->workers = (int) v;
        return 1;
    case 'm':
        if (!lux_opt_uint(p, "--store-mb", 1ul << 24, false, &v))
            return -1;
        no->store_bytes = (uint64_t) v << 20;
        return 1;
    case 'R':
        if (!lux_opt_resources(p, "--resources"))
            return -1;
        no->resources = optarg;
        return 1;
    default:
        return 0;
    }
}

/* The private directory lux run made for a driver's node (TMP/lux-driver-X,
   the node's dir its "node"), removed once the node left because its
   driver was gone: nobody else would. */
static void
s_remove_driver_dir(const char *node_dir)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", node_dir);
    char *slash = strrchr(parent, '/');
    if (!slash || strcmp(slash, "/node") != 0)
        return;
    *slash = '\0';
    const char *base = strrchr(parent, '/');
    if (!base || strncmp(base, "/lux-driver-", 12) != 0)
        return;
    char *rm[] = {"rm", "-rf", "--", parent, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execvp("rm", rm);
        _exit(127);
    }
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
}

/* A driver's own node (lux run --address HOST:PORT, lux_run_remote.c)
   leaves when that driver is gone, killed or not: LUX_NODE_OWNER_PID is
   "PID:START" (its start time, util_proc_start) or "PID" (the start read
   here: the driver waits for its node to join). *pid 0: no owner. -1
   when the owner is gone already (logged). */
static int
s_owner(pid_t *pid, uint64_t *start)
{
    const char *own = getenv("LUX_NODE_OWNER_PID");
    *pid = own ? (pid_t) atoi(own) : 0;
    *start = 0;
    if (*pid <= 0) {
        *pid = 0;
        return 0;
    }
    const char *colon = strchr(own, ':');
    *start = colon ? strtoull(colon + 1, NULL, 10) : util_proc_start(*pid);
    uint64_t now = util_proc_start(*pid);
    if (!now || now != *start) {
        log_warn("the driver (pid %d) whose node this is is gone already%s: leaving the "
                 "cluster", (int) *pid, now ? " (its pid names another process now)" : "");
        return -1;
    }
    log_info("the node of the driver pid %d (started at tick %llu): it leaves when that "
             "process ends", (int) *pid, (unsigned long long) *start);
    return 0;
}

int
cmd_node(int argc, char **argv)
{
    static const char usage[] = "lux node --dir D --address IP [--workers N] [--store-mb N] "
                                "[--resources R] (internal: run by lux start --address)";
    db_cluster_t c;
    exec_node_opts_t no = {.cluster = &c};
    const char *dir = NULL, *address = NULL;
    char path[PATH_MAX + 32], joined[PATH_MAX + 32], keys[PATH_MAX + 32];
    static const struct option opts[] = {
        {"dir", required_argument, 0, 'd'},     {"address", required_argument, 0, 'A'},
        {"workers", required_argument, 0, 'w'}, {"store-mb", required_argument, 0, 'm'},
        {"resources", required_argument, 0, 'R'}, {0}};
    lux_opt_t p = {.cmd = "node", .usage = usage, .opts = opts};
    int o, k;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        switch (o) {
        case 'd':
            dir = optarg;
            break;
        case 'A':
            address = optarg;
            break;
        default:
            if ((k = lux_node_opt(&p, o, &no)) <= 0)
                return k < 0 ? 2 : p.status;
        }
    }
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return 2;
    if (!dir || !address)
        return lux_opt_usage(&p, "--dir and --address are required");
    no.address = address;
    util_log_init(UTIL_LOG_INFO);
    util_log_name("node daemon");
    if (db_cluster_load(&c, dir))
        return lux_fail("node", "%s", lux_errmsg());
    char lock[PATH_MAX + 32];
    if (util_lock_file(db_cluster_path(&c, lock, sizeof lock, "run/node.lock")) < 0)
        return lux_fail("node", "another node runs in %s (%s)", c.dir, lux_errmsg());
    db_cluster_path(&c, path, sizeof path, "run/node.pid");
    db_cluster_path(&c, joined, sizeof joined, "run/node.joined");
    unlink(joined);
    if (util_pidfile_write(path))
        return lux_fail("node", "%s", lux_errmsg());
    zsys_init();
    int rc = 0;
    bool orphan = false; /* left because its driver is gone */
    net_sec_t *sec = net_sec_load(db_cluster_path(&c, keys, sizeof keys, "keys"));
    zactor_t *node = NULL;
    lux_beat_t *beat = NULL;
    if (!sec || !(node = exec_node_new(&no)) ||
        !(beat = lux_beat_new(&c, sec, address, "node"))) {
        rc = lux_fail("node", "%s", lux_errmsg());
        goto done;
    }
    log_info("node of cluster at %s:%d started, address %s", c.listen + 6, c.master_port,
             address);
    /* a driver's own node (lux run --address HOST:PORT, lux_run_remote.c):
       it leaves when that driver is gone, killed or not */
    pid_t owner = 0;
    uint64_t owner_start = 0;
    if (s_owner(&owner, &owner_start)) {
        orphan = true; /* gone before we looked: leave at once */
        goto leave;
    }
    while (!zsys_interrupted) {
        /* the pid and its start time name the driver: a pid reused by
           another process since does not keep the node (one read of
           /proc/PID/stat per turn, about 2 turns a second) */
        uint64_t start = owner > 0 ? util_proc_start(owner) : 0;
        if (owner > 0 && start != owner_start) {
            if (start)
                log_warn("the driver (pid %d, started at tick %llu) whose node this is has "
                         "ended without stopping it (killed?), and its pid now names another "
                         "process (started at tick %llu): leaving the cluster", (int) owner,
                         (unsigned long long) owner_start, (unsigned long long) start);
            else
                log_warn("the driver (pid %d) whose node this is has ended without stopping "
                         "it (killed?): leaving the cluster", (int) owner);
            orphan = true;
            break;
        }
        if (lux_beat_tick(beat, node, joined)) {
            log_error("%s: stopping", lux_errmsg());
            rc = 1;
            break;
        }
        lux_beat_wait(beat);
    }
leave:
    log_info("stopping");
    char id[UTIL_ID_HEX] = "";
    if (lux_beat_node(beat))
        snprintf(id, sizeof id, "%s", lux_beat_node(beat));
    zactor_destroy(&node); /* its workers stop, its events reach the log */
    if (!rc && id[0]) {
        char *reply = NULL;
        if (exec_members_ask(&c, sec, "LEAVE", id, 10000, &reply))
            log_error("leaving: %s", lux_errmsg());
        else
            log_info("left the cluster (node_left is in the log)");
        free(reply);
    }
done:
    lux_beat_destroy(&beat);
    zactor_destroy(&node);
    net_sec_destroy(&sec);
    unlink(joined);
    if (util_pidfile_read(path) == getpid())
        unlink(path);
    if (orphan)
        s_remove_driver_dir(c.dir);
    return rc;
}

/* --- lux start --address ---------------------------------------------------------------- */

int
lux_node_start(const lux_join_args_t *a)
{
    db_cluster_t c, old;
    char pub[41], secret[41], keys[PATH_MAX + 32], ip[64], exe[PATH_MAX], log[PATH_MAX + 32];
    char joined[PATH_MAX + 32], store[32], workers[32], addr[128];
    int rc;
    if (!a->token_file)
        return util_err(LUX_EAUTH, "joining needs the cluster's token (--token-file F: the file "
                        "lux start --head wrote as HEADDIR/token, copied here, mode 0600)");
    if ((rc = s_token_read(a->token_file, a->address, &c, pub, secret)))
        return rc;
    if (util_abspath(a->dir, c.dir, sizeof c.dir))
        return LUX_EINVAL;
    if (db_cluster_load(&old, a->dir) == 0) {
        if (!old.node)
            return util_err(LUX_EEXIST, "%s holds a head's cluster, not a node's: give a node "
                            "its own directory", a->dir);
        if (!util_id_eq(&old.id, &c.id))
            return util_err(LUX_EEXIST, "%s is a node of another cluster; give this one its "
                            "own directory", a->dir);
        snprintf(c.sock_dir, sizeof c.sock_dir, "%s", old.sock_dir);
        if (util_pidfile_read(db_cluster_path(&old, log, sizeof log, "run/node.pid")) > 0 &&
            util_proc_alive(util_pidfile_read(log)))
            return util_err(LUX_EEXIST, "a node already runs in %s (pid %d)", a->dir,
                            (int) util_pidfile_read(log));
    }
    if ((rc = db_cluster_create_node(&c)) ||
        (rc = net_sec_import(db_cluster_path(&c, keys, sizeof keys, "keys"), pub, secret)))
        return rc;
    net_sec_t *sec = net_sec_load(keys);
    if (!sec)
        return LUX_EAUTH;
    /* the head answers first, or nothing is started: a wrong key or port
       is said here, not found in a daemon's log */
    char *reply = NULL;
    rc = exec_members_ask(&c, sec, "STATUS", NULL, a->timeout_ms < 10000 ? a->timeout_ms : 10000,
                          &reply);
    free(reply);
    net_sec_destroy(&sec);
    if (rc)
        return rc;
    if (a->node_ip)
        snprintf(ip, sizeof ip, "%s", a->node_ip);
    else if ((rc = s_local_ip_to(c.listen + 6, ip, sizeof ip)))
        return rc;
    snprintf(addr, sizeof addr, "%s", ip);
    if ((rc = util_self_exe(exe, sizeof exe)))
        return rc;
    db_cluster_path(&c, log, sizeof log, "log/node.log");
    db_cluster_path(&c, joined, sizeof joined, "run/node.joined");
    unlink(joined);
    char *argv[16] = {exe, "node", "--dir", c.dir, "--address", addr};
    int argc = 6;
    if (a->workers) {
        snprintf(workers, sizeof workers, "%u", a->workers);
        argv[argc++] = "--workers";
        argv[argc++] = workers;
    }
    if (a->store_mb) {
        snprintf(store, sizeof store, "%lu", a->store_mb);
        argv[argc++] = "--store-mb";
        argv[argc++] = store;
    }
    if (a->resources) {
        argv[argc++] = "--resources";
        argv[argc++] = (char *) a->resources;
    }
    argv[argc] = NULL;
    pid_t child = util_spawn(argv, log);
    if (child < 0)
        return (int) child;
    int64_t deadline = util_mono_ms() + a->timeout_ms;
    while (util_mono_ms() < deadline) {
        if (waitpid(child, NULL, WNOHANG) == child || !util_proc_alive(child))
            return util_err(LUX_EDEAD, "the node's daemon exited during start; see %s", log);
        char *id = util_read_file(joined, NULL);
        if (id && a->quiet) {
            free(id);
            return 0;
        }
        if (id) {
            printf("node %s joined the cluster %s at %s as %s (pid %d)\n  directory %s, log %s\n"
                   "  stop it with: lux stop --dir %s\n",
                   id, util_id_hex(&c.id, keys), a->address, addr, (int) child, c.dir, log,
                   c.dir);
            free(id);
            return 0;
        }
        usleep(20000);
    }
    kill(child, SIGTERM);
    return util_err(LUX_ETIMEDOUT, "the node did not join within %d ms; see %s", a->timeout_ms,
                    log);
}

bool
lux_node_dir(const char *dir)
{
    db_cluster_t c;
    return db_cluster_load(&c, dir) == 0 && c.node;
}

int
lux_node_stop(const char *dir, int timeout_ms)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/run/node.pid", dir);
    pid_t pid = util_pidfile_read(path);
    if (pid <= 0 || !util_proc_alive(pid))
        return util_err(LUX_ENOTFOUND, "no node is running in %s", dir);
    kill(pid, SIGTERM);
    int64_t deadline = util_mono_ms() + timeout_ms;
    while (util_mono_ms() < deadline) {
        waitpid(pid, NULL, WNOHANG);
        if (!util_proc_alive(pid))
            return 0;
        usleep(20000);
    }
    return util_err(LUX_ETIMEDOUT, "the node (pid %d) did not stop within %d ms", pid,
                    timeout_ms);
}

/* --- status ----------------------------------------------------------------------------- */

static void
s_field(const char *block, const char *key, char *out, size_t n)
{
    if (!exec_members_get(block, key, out, n))
        snprintf(out, n, "-");
}

/* --watch: each node's count of finished tasks at the frame before, for
   its rate ("-" for a node first seen, or whose count is unknown). */
static struct {
    char node[64];
    uint64_t finished;
    int64_t ms;
} s_seen[256];
static int s_nseen;

static const char *
s_rate(const char *node, const char *finished, char *out, size_t n)
{
    int64_t now = util_mono_ms();
    uint64_t f = strtoull(finished, NULL, 10);
    int i = 0;
    snprintf(out, n, "-");
    if (!strcmp(finished, "-"))
        return out;
    while (i < s_nseen && strcmp(s_seen[i].node, node))
        i++;
    if (i < s_nseen && now > s_seen[i].ms && f >= s_seen[i].finished)
        snprintf(out, n, "%.0f", (double) (f - s_seen[i].finished) * 1000.0 /
                                     (double) (now - s_seen[i].ms));
    if (i == s_nseen && s_nseen < (int) (sizeof s_seen / sizeof *s_seen))
        s_nseen++;
    if (i < s_nseen) {
        snprintf(s_seen[i].node, sizeof s_seen[i].node, "%s", node);
        s_seen[i].finished = f;
        s_seen[i].ms = now;
    }
    return out;
}

int
lux_nodes_print(const db_cluster_t *c, net_sec_t *sec, bool json, bool rates)
{
    char *text = NULL;
    int rc = exec_members_ask(c, sec, "STATUS", NULL, 3000, &text);
    if (rc) {
        if (json)
            printf(", \"nodes\": null, \"nodes_error\": "), lux_json_str(stdout, lux_errmsg());
        else
            printf("\nnodes: unknown (%s)\n", lux_errmsg());
        free(text);
        return rc;
    }
    static const char *keys[] = {"node", "state", "address", "host", "role", "pid", "resources",
                                 "free", "store_used", "store_bytes", "workers", "busy",
                                 "actors", "queue", "gpus", "age_ms", "why", "dir",
                                 "submitted", "finished", "failed", "table_waits",
                                 "unconfirmed"};
    enum { K = sizeof keys / sizeof *keys };
    if (json)
        printf(", \"nodes\": [");
    else
        printf("\n%-12s %-6s %-15s %-5s %-22s %-22s %-21s %-7s %-5s %s%s\n", "node", "state",
               "address", "role", "resources", "free", "store used/size MiB", "workers",
               "queue", rates ? "done/s " : "", "why");
    int n = 0;
    for (char *block = text, *next; block && *block; block = next) {
        next = strstr(block, "\n\n");
        if (next)
            *next = '\0', next += 2;
        char v[K][512];
        for (int k = 0; k < K; k++)
            s_field(block, keys[k], v[k], sizeof v[k]);
        if (json) {
            printf("%s\n  {", n ? "," : "");
            for (int k = 0; k < K; k++) {
                bool num = strcmp(v[k], "-") != 0 &&
                           strspn(v[k], "0123456789") == strlen(v[k]);
                printf("%s\"%s\": ", k ? ", " : "", keys[k]);
                if (num)
                    printf("%s", v[k]);
                else if (strcmp(v[k], "-") == 0)
                    printf("null");
                else
                    lux_json_str(stdout, v[k]);
            }
            printf("}");
        } else {
            char store[64];
            snprintf(store, sizeof store, "%.1f/%.1f", strtod(v[8], NULL) / (1 << 20),
                     strtod(v[9], NULL) / (1 << 20));
            /* alive in the log at the head's restart, no beat since: say so */
            const char *why = strcmp(v[16], "-")   ? v[16]
                              : strcmp(v[22], "-") ? "unconfirmed: not heard from since the "
                                                     "head started again"
                                                   : "";
            char rate[32] = "", r[24];
            if (rates)
                snprintf(rate, sizeof rate, "%-7s", s_rate(v[0], v[19], r, sizeof r));
            printf("%-12.12s %-6s %-15s %-5s %-22s %-22s %-21s %-7s %-5s %s%s\n", v[0], v[1],
                   v[2], v[4], v[6], v[7], store, v[10], v[13], rate, why);
        }
        n++;
    }
    if (json)
        printf("%s]", n ? "\n" : "");
    free(text);
    return 0;
}

int
lux_node_status(const db_cluster_t *c, net_sec_t *sec, const char *address, bool json,
                bool watch, uint64_t *events)
{
    db_status_t st;
    char hex[UTIL_ID_HEX];
    int rc = db_master_status(c, sec, &st, 3000);
    if (rc)
        return rc;
    if (json) {
        printf("{\"cluster\": \"%s\", \"head\": ", util_id_hex(&c->id, hex));
        lux_json_str(stdout, address);
        printf(", \"running\": true, \"shards\": %u, \"replicas\": %u, \"chains\": [", c->shards,
               c->replicas);
    } else {
        printf("cluster %s, head at %s: running; chain master pid %u\n\n%-5s %-6s %-9s %-7s "
               "%-9s %-8s %-10s %s\n",
               util_id_hex(&c->id, hex), address, st.master_pid, "shard", "epoch", "chain",
               "replica", "role", "state", "last_seq", "append endpoint");
    }
    for (uint32_t s = 0; s < c->shards; s++) {
        const db_chain_t *ch = &st.chains[s];
        for (uint32_t k = 0; k < ch->n; k++) {
            uint32_t i = ch->m[k].index, slot = s * c->replicas + i;
            const db_beat_t *b = &st.beats[slot];
            const char *role = ch->n == 1 ? "head+tail" : k == 0 ? "head"
                               : k == ch->n - 1                 ? "tail"
                                                                : "middle";
            const char *state = st.age_ms[slot] < 0          ? "unheard"
                                : st.age_ms[slot] > c->dead_ms ? "silent"
                                                               : db_replica_state_name(b->state);
            if (json) {
                printf("%s\n  {\"shard\": %u, \"epoch\": %llu, \"replica\": %u, \"role\": \"%s\", "
                       "\"state\": \"%s\", \"last_seq\": %llu, \"append\": ",
                       s || k ? "," : "", s, (unsigned long long) ch->epoch, i, role, state,
                       (unsigned long long) b->last);
                lux_json_str(stdout, b->ep[DB_EP_APPEND]);
                printf("}");
            } else {
                printf("%-5u %-6llu %-9u %-7u %-9s %-8s %-10llu %s\n", s,
                       (unsigned long long) ch->epoch, k, i, role, state,
                       (unsigned long long) b->last, b->ep[DB_EP_APPEND]);
            }
        }
    }
    *events = 0;
    for (uint32_t s = 0; s < c->shards; s++) {
        uint64_t longest = 0; /* of the shard's chain: the head's */
        for (uint32_t k = 0; k < st.chains[s].n; k++)
            if (st.beats[s * c->replicas + st.chains[s].m[k].index].last > longest)
                longest = st.beats[s * c->replicas + st.chains[s].m[k].index].last;
        *events += longest;
    }
    db_status_free(&st);
    if (json)
        printf("\n]");
    lux_nodes_print(c, sec, json, watch);
    if (json)
        printf("}\n");
    return 0;
}

int
lux_node_cluster(const char *dir, const char *address, const char *token, db_cluster_t *c,
                 net_sec_t **sec)
{
    char pub[41], secret[41], keys[PATH_MAX + 32];
    int rc;
    *sec = NULL;
    if (address) {
        if (!token)
            return util_err(LUX_EAUTH, "--address needs the cluster's token (--token-file F)");
        if ((rc = s_token_read(token, address, c, pub, secret)))
            return rc;
        /* a private key directory of our own for the token's keys */
        char tmp[] = "/tmp/lux-token-XXXXXX";
        if (!mkdtemp(tmp))
            return util_err(LUX_EIO, "mkdtemp: %s", strerror(errno));
        snprintf(keys, sizeof keys, "%s/keys", tmp);
        rc = net_sec_import(keys, pub, secret);
        if (!rc && !(*sec = net_sec_load(keys)))
            rc = LUX_EAUTH;
        char cmd[PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            fprintf(stderr, "lux: warning: could not remove %s\n", tmp);
        return rc;
    }
    if ((rc = db_cluster_load(c, dir)))
        return rc;
    if (db_cluster_tcp(c) && !(*sec = net_sec_load(db_cluster_path(c, keys, sizeof keys, "keys"))))
        return LUX_EAUTH;
    return 0;
}

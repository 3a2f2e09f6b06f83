/*  lux_head - the head of a cluster: `lux start`, `lux stop` and the two
    daemons they run (`lux status` is lux_status.c).

    `lux start --head` creates (or reopens) the cluster directory and spawns
    `lux supervise`, a daemon in its own session that hosts the chain master
    and spawns one `lux replica` process per replica, restarting any that
    dies (with backoff), until `lux stop` sends it SIGTERM. `lux start`
    returns once the master reports every chain serving.

    Processes: supervisor (master inside) and S x R replicas; their pids are
    in `lux status`. Logs: DIR/log/supervisor.log, DIR/log/replica-S-I.log.
*/
#include "lux_ckpt.h"
#include "lux_cmd.h"
#include "lux_node.h"
#include "lux_opt.h"
#include "db/db_chain.h"
#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "db/db_master.h"
#include "db/db_replica.h"
#include "db/db_store.h"
#include "exec/exec_arena.h"
#include "exec/exec_members.h"
#include "exec/exec_node.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_log.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <sodium.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_REPLICA_FAILED_MS 60000    /* ...or this long after it failed, whatever the cause */

net_sec_t *
lux_head_sec(const db_cluster_t *c)
{
    char keys[PATH_MAX + 32];
    if (!db_cluster_tcp(c))
        return NULL;
    return net_sec_load(db_cluster_path(c, keys, sizeof keys, "keys"));
}

int
lux_head_pids(const db_cluster_t *c, int *replica_pids, int *master_pid)
{
    db_status_t st;
    net_sec_t *sec = lux_head_sec(c);
    int rc = db_master_status(c, sec, &st, 2000);
    net_sec_destroy(&sec);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < c->shards * c->replicas; i++)
        replica_pids[i] = st.age_ms[i] >= 0 ? (int) st.beats[i].pid : 0;
    if (master_pid)
        *master_pid = (int) st.master_pid;
    db_status_free(&st);
    return 0;
}

/* --- start and stop ---------------------------------------------------------------------- */

int
lux_head_pid(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/run/supervisor.pid", dir);
    pid_t pid = util_pidfile_read(path);
    if (pid > 0) {
        waitpid(pid, NULL, WNOHANG); /* reap it if it is our child and gone */
        if (util_proc_alive(pid))
            return pid;
    }
    return 0;
}

static void
s_print_log_tail(const char *path)
{
    size_t n;
    char *text = util_read_file(path, &n);
    if (!text)
        return;
    const char *p = n > 1500 ? text + n - 1500 : text;
    fprintf(stderr, "--- last lines of %s ---\n%s", path, p);
    free(text);
}

int
lux_head_start(db_cluster_t *c, bool create, int timeout_ms, const lux_node_args_t *node)
{
    static const lux_node_args_t defaults = {0};
    char workers[32], store[32];
    char exe[PATH_MAX], log[PATH_MAX + 32];
    int rc;
    int pid = lux_head_pid(c->dir);
    if (pid)
        return util_err(LUX_EEXIST, "the head of %s is already running (supervisor pid %d)",
                        c->dir, pid);
    if (create && (rc = db_cluster_create(c)))
        return rc;
    if ((rc = util_self_exe(exe, sizeof exe)))
        return rc;
    db_cluster_path(c, log, sizeof log, "log/supervisor.log");
    if (!node)
        node = &defaults;
    char *argv[24] = {exe, "supervise", "--dir", c->dir};
    int argc = 4;
    if (node->log_only)
        argv[argc++] = "--log-only";
    if (node->workers) {
        snprintf(workers, sizeof workers, "%u", node->workers);
        argv[argc++] = "--workers";
        argv[argc++] = workers;
    }
    if (node->store_mb) {
        snprintf(store, sizeof store, "%lu", node->store_mb);
        argv[argc++] = "--store-mb";
        argv[argc++] = store;
    }
    if (node->resources) {
        argv[argc++] = "--resources";
        argv[argc++] = (char *) node->resources;
    }
    char cks[32], cke[32];
    if (node->witness) {
        argv[argc++] = "--witness";
        argv[argc++] = (char *) node->witness;
    }
    if (node->checkpoint_s) {
        snprintf(cks, sizeof cks, "%ld", node->checkpoint_s);
        argv[argc++] = "--checkpoint-s";
        argv[argc++] = cks;
    }
    if (node->checkpoint_events) {
        snprintf(cke, sizeof cke, "%ld", node->checkpoint_events);
        argv[argc++] = "--checkpoint-events";
        argv[argc++] = cke;
    }
    if (node->compact_after) {
        argv[argc++] = "--compact-after";
        argv[argc++] = (char *) node->compact_after;
    }
    argv[argc] = NULL;
    pid_t child = util_spawn(argv, log);
    if (child < 0)
        return (int) child;
    net_sec_t *sec = lux_head_sec(c);
    int64_t start = util_mono_ms(), deadline = start + timeout_ms;
    rc = LUX_ETIMEDOUT;
    while (util_mono_ms() < deadline) {
        db_status_t st;
        if (waitpid(child, NULL, WNOHANG) == child || !util_proc_alive(child)) {
            s_print_log_tail(log);
            rc = util_err(LUX_EDEAD, "the head's supervisor exited during start; see %s", log);
            break;
        }
        if (db_master_status(c, sec, &st, 200) == 0) {
            bool ready = true, full = true;
            for (uint32_t s = 0; s < c->shards; s++) {
                const db_chain_t *ch = &st.chains[s];
                full = full && ch->n == c->replicas;
                for (uint32_t k = 0; k < ch->n; k++) {
                    uint32_t slot = s * c->replicas + ch->m[k].index;
                    const db_beat_t *b = &st.beats[slot];
                    if (st.age_ms[slot] < 0 || b->state != DB_RS_CHAIN || b->epoch != ch->epoch)
                        ready = false;
                }
            }
            db_status_free(&st);
            /* a fresh cluster waits for every replica; a restarted one may
               have some still catching up */
            if (ready && (full || util_mono_ms() - start > 5000)) {
                rc = 0;
                break;
            }
        }
        usleep(20000);
    }
    net_sec_destroy(&sec);
    if (rc == LUX_ETIMEDOUT)
        util_err(rc, "the head did not serve within %d ms; see %s/log/", timeout_ms, c->dir);
    return rc;
}

/* Print to stderr the errors the supervisor logged (level E) past byte
   `from` of its log: what its stop could not do (events not flushed to
   the log, a replica that had to be killed). */
static void
s_print_stop_errors(const char *log, size_t from)
{
    size_t n;
    char *text = util_read_file(log, &n);
    if (!text || n <= from) {
        free(text);
        return;
    }
    for (char *line = text + from, *end; *line; line = end) {
        end = strchr(line, '\n');
        end = end ? (*end = '\0', end + 1) : line + strlen(line);
        /* TIME LEVEL PID COMPONENT: TEXT */
        char *lv = strchr(line, ' ');
        if (!lv || strncmp(lv, " E ", 3) != 0)
            continue;
        char *what = strchr(lv + 3, ' ');
        fprintf(stderr, "lux stop: warning: %s\n", what ? what + 1 : lv + 3);
    }
    free(text);
}


/* No supervisor: stop the replicas one that died left running (they
   outlive it, serving). 0 when there were some, else LUX_ENOTFOUND. */
static int
s_stop_orphans(const char *dir, int timeout_ms)
{
    db_cluster_t c;
    int n = 0, stuck = 0;
    if (db_cluster_load(&c, dir) == 0) {
        int64_t deadline = util_mono_ms() + timeout_ms / 2;
        for (uint32_t k = 0; k < c.shards * c.replicas; k++) {
            pid_t pid = lux_head_replica_running(&c, k / c.replicas, k % c.replicas);
            int64_t left = deadline - util_mono_ms();
            if (pid > 0 && ++n && !util_proc_stop(pid, SIGTERM, left > 0 ? (int) left : 0))
                stuck++;
        }
    }
    if (!n)
        return util_err(LUX_ENOTFOUND, "no head is running in %s", dir);
    fprintf(stderr, "lux stop: no supervisor in %s; stopped the %d replicas it left running\n",
            dir, n - stuck);
    return stuck ? util_err(LUX_ETIMEDOUT, "%d replicas would not stop", stuck) : 0;
}

int
lux_head_stop(const char *dir, int timeout_ms)
{
    char log[PATH_MAX + 32];
    int pid = lux_head_pid(dir);
    if (!pid)
        return s_stop_orphans(dir, timeout_ms);
    snprintf(log, sizeof log, "%s/log/supervisor.log", dir);
    struct stat st;
    size_t from = stat(log, &st) == 0 ? (size_t) st.st_size : 0;
    kill(pid, SIGTERM);
    int64_t deadline = util_mono_ms() + timeout_ms;
    while (util_mono_ms() < deadline) {
        waitpid(pid, NULL, WNOHANG);
        if (!util_proc_alive(pid)) {
            s_print_stop_errors(log, from);
            return 0;
        }
        usleep(20000);
    }
    return util_err(LUX_ETIMEDOUT, "the head (pid %d) did not stop within %d ms", pid, timeout_ms);
}

/* Whether the chain master's two tcp ports (--port and the next, its PUB)
   can be bound: 0, or LUX_EEXIST naming the port in use. Tried with a
   socket of the kind the master binds, closed at once, so that a start
   fails here, before the directory is made or a supervisor spawned,
   rather than in a supervisor that dies and leaves a half-made cluster. */
static int
s_ports_free(const db_cluster_t *c)
{
    if (!db_cluster_tcp(c))
        return 0;
    for (int pub = 0; pub < 4; pub++) {
        char ep[DB_EP_MAX];
        if (pub == 3) /* the head's node manager's (exec_peer.h) */
            db_cluster_node_ep(c, c->listen + 6, ep, sizeof ep);
        else if (pub == 2) /* the membership monitor's (exec_members.h) */
            db_cluster_members_ep(c, true, ep, sizeof ep);
        else
            db_cluster_master_bind(c, pub, ep, sizeof ep);
        zsock_t *s = zsock_new(ZMQ_ROUTER);
        if (!s)
            return util_err(LUX_ENOMEM, "cannot make a socket to try %s", ep);
        zsock_set_linger(s, 0);
        int port = zsock_bind(s, "%s", ep);
        int err = errno;
        zsock_destroy(&s);
        if (port < 0 && err == EADDRINUSE)
            return util_err(LUX_EEXIST, "port %d is in use (%s, for the %s)",
                            c->master_port + pub, ep,
                            pub == 3 ? "node manager's endpoint, which takes --port + 3"
                            : pub == 2 ? "membership endpoint, which takes --port + 2"
                            : pub    ? "chain master's PUB, which takes --port + 1"
                                     : "chain master's ROUTER");
        if (port < 0)
            return util_err(LUX_EINVAL, "cannot listen on %s: %s", ep, zmq_strerror(err));
    }
    return 0;
}

static const char s_start_usage[] =
    "lux start --head --dir DIR [--shards S] [--replicas R] [--sync normal|full]\n"
    "                 [--listen ipc|tcp://HOST] [--port N] [--heartbeat-ms N] [--dead-ms N]\n"
    "                 [--workers N] [--store-mb N] [--resources CPU=N,NAME=N] [--log-only]\n"
    "                 [--witness FILE] [--checkpoint-s N] [--checkpoint-events N]\n"
    "                 [--record-puts[=LIMIT]] [--compact-after AGE]\n"
    "       lux start --address HOST:PORT --dir DIR --token-file FILE [--node-ip IP]\n"
    "                 [--workers N] [--store-mb N] [--resources CPU=N,NAME=N]";

int
cmd_start(int argc, char **argv)
{
    static const struct option opts[] = {
        {"head", no_argument, 0, 'H'},          {"dir", required_argument, 0, 'd'},
        {"shards", required_argument, 0, 's'},  {"replicas", required_argument, 0, 'r'},
        {"sync", required_argument, 0, 'y'},    {"listen", required_argument, 0, 'l'},
        {"port", required_argument, 0, 'p'},    {"heartbeat-ms", required_argument, 0, 'b'},
        {"dead-ms", required_argument, 0, 'k'},
        {"workers", required_argument, 0, 'w'}, {"store-mb", required_argument, 0, 'm'},
        {"resources", required_argument, 0, 'R'}, {"log-only", no_argument, 0, 'L'},
        {"witness", required_argument, 0, 'W'}, {"checkpoint-s", required_argument, 0, 'T'},
        {"checkpoint-events", required_argument, 0, 'N'},
        {"record-puts", optional_argument, 0, 'P'},
        {"address", required_argument, 0, 'A'}, {"token-file", required_argument, 0, 'K'},
        {"node-ip", required_argument, 0, 'I'}, {"compact-after", required_argument, 0, 'C'},
        {0, 0, 0, 0}};
    const char *address = NULL, *token = NULL, *node_ip = NULL;
    int64_t age;
    lux_node_args_t node = {0};
    char witness[PATH_MAX];
    db_cluster_t c, old;
    bool head = false, set = false;
    const char *dir = NULL;
    unsigned long v;
    int o;
    lux_opt_t p = {.cmd = "start", .usage = s_start_usage, .opts = opts};

    db_cluster_defaults(&c);
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        switch (o) {
        case 'H':
            head = true;
            break;
        case 'd':
            dir = optarg;
            break;
        case 's':
            if (!lux_opt_uint(&p, "--shards", DB_MAX_SHARDS, false, &v))
                return 2;
            c.shards = (uint32_t) v, set = true;
            break;
        case 'r':
            if (!lux_opt_uint(&p, "--replicas", DB_MAX_REPLICAS, false, &v))
                return 2;
            c.replicas = (uint32_t) v, set = true;
            break;
        case 'y':
            if (strcmp(optarg, "full") && strcmp(optarg, "normal"))
                return lux_opt_usage(&p, "--sync is normal or full, not '%s'", optarg);
            c.sync_full = strcmp(optarg, "full") == 0, set = true;
            break;
        case 'l':
            snprintf(c.listen, sizeof c.listen, "%s", optarg), set = true;
            break;
        case 'p':
            if (!lux_opt_uint(&p, "--port", 65534, false, &v))
                return 2;
            c.master_port = (int) v, set = true;
            break;
        case 'b':
            if (!lux_opt_uint(&p, "--heartbeat-ms", 60000, false, &v))
                return 2;
            c.heartbeat_ms = (int) v, set = true;
            break;
        case 'k':
            if (!lux_opt_uint(&p, "--dead-ms", 600000, false, &v))
                return 2;
            c.dead_ms = (int) v, set = true;
            break;
        case 'P': /* the largest put kept for replay; alone: every one */
            if (!optarg)
                c.record_puts = UINT64_MAX;
            else if (db_cluster_parse_size(optarg, &c.record_puts))
                return lux_opt_usage(&p, "--record-puts: %s", lux_errmsg());
            set = true;
            break;
        case 'w':
            if (!lux_opt_uint(&p, "--workers", 4096, false, &v))
                return 2;
            node.workers = (unsigned) v;
            break;
        case 'm':
            if (!lux_opt_uint(&p, "--store-mb", 1ul << 24, false, &v))
                return 2;
            node.store_mb = v;
            break;
        case 'R':
            if (!lux_opt_resources(&p, "--resources"))
                return 2;
            node.resources = optarg;
            break;
        case 'L':
            node.log_only = true;
            break;
        case 'W':
            if (util_abspath(optarg, witness, sizeof witness))
                return lux_fail("start", "--witness %s: %s", optarg, lux_errmsg());
            node.witness = witness;
            break;
        case 'T':
        case 'N':
            /* 0 turns the periodic checkpoints off (-1 to the supervisor) */
            if (!lux_opt_uint(&p, o == 'T' ? "--checkpoint-s" : "--checkpoint-events",
                              o == 'T' ? 86400 : 1ul << 40, true, &v))
                return 2;
            if (o == 'T')
                node.checkpoint_s = v ? (long) v : -1;
            else
                node.checkpoint_events = v ? (long) v : -1;
            break;
        case 'C':
            if (!lux_parse_age(optarg, &age) || age == 0)
                return lux_opt_usage(&p, "--compact-after takes an age (30s, 10m, 1h, 2d), not "
                                     "'%s'", optarg);
            node.compact_after = optarg;
            break;
        case 'A':
            address = optarg;
            break;
        case 'K':
            token = optarg;
            break;
        case 'I':
            node_ip = optarg;
            break;
        default:
            return p.status;
        }
    }
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return 2;
    if (!dir)
        return lux_opt_usage(&p, "--dir DIR is required");
    if (head == !!address)
        return lux_opt_usage(&p, "give --head (start a cluster's head) or --address HOST:PORT "
                             "(start a node that joins the head there)");
    if (address) {
        if (set || node.log_only || node.witness || node.checkpoint_s || node.checkpoint_events ||
            node.compact_after)
            return lux_opt_usage(&p, "a node takes only --dir, --token-file, --node-ip, --workers, "
                                 "--store-mb and --resources: the cluster's settings are the "
                                 "head's");
        zsys_init();
        lux_join_args_t ja = {.address = address, .dir = dir, .token_file = token,
                              .node_ip = node_ip, .workers = node.workers,
                              .store_mb = node.store_mb, .resources = node.resources,
                              .timeout_ms = 60000};
        return lux_node_start(&ja) ? lux_fail("start", "%s", lux_errmsg()) : 0;
    }
    if (token || node_ip)
        return lux_opt_usage(&p, "--token-file and --node-ip are a node's (with --address), not "
                             "the head's");
    if (c.dead_ms < 2 * c.heartbeat_ms)
        return lux_opt_usage(&p, "--dead-ms must be at least twice --heartbeat-ms");
    if (util_abspath(dir, c.dir, sizeof c.dir))
        return lux_fail("start", "%s", lux_errmsg());
    bool create = db_cluster_load(&old, dir) != 0;
    if (!create) {
        if (set)
            return lux_fail("start", "%s already holds a cluster (%u shards x %u replicas); "
                            "its settings are in %s/cluster.conf and options do not change them",
                            dir, old.shards, old.replicas, dir);
        c = old;
    } else if (util_exists(dir)) {
        char conf[PATH_MAX + 32];
        snprintf(conf, sizeof conf, "%s/cluster.conf", c.dir);
        if (util_exists(conf))
            return lux_fail("start", "%s", lux_errmsg()); /* there, but unreadable */
    }
    /* --log-only is the cluster's, not one start's: kept in DIR/log-only,
       so a plain restart does not add a node manager (and its events) to
       a log meant to hold only what its clients append */
    char marker[PATH_MAX + 32];
    snprintf(marker, sizeof marker, "%s/log-only", c.dir);
    bool was_log_only = !create && util_exists(marker);
    if (was_log_only)
        node.log_only = true;
    zsys_init();
    if (node.log_only && (node.workers || node.store_mb || node.resources))
        return lux_opt_usage(&p, "--log-only starts no node manager: --workers, --store-mb and "
                         "--resources do not apply");
    if (s_ports_free(&c))
        return lux_fail("start", "%s%s", lux_errmsg(),
                        create ? ": choose another with --port"
                               : "; this cluster's port is in its cluster.conf");
    if (lux_head_start(&c, create, 30000, &node))
        return lux_fail("start", "%s", lux_errmsg());
    if (create && node.log_only && util_write_file(marker, "", 0, 0644))
        fprintf(stderr, "lux start: warning: %s (a restart would start a node manager)\n",
                lux_errmsg());
    char hex[UTIL_ID_HEX], ep[DB_EP_MAX];
    printf("started the head of cluster %s in %s\n  %u shards x %u replicas, chain master at %s\n",
           util_id_hex(&c.id, hex), c.dir, c.shards, c.replicas,
           db_cluster_master_ep(&c, ep, sizeof ep));
    if (node.log_only)
        printf("  a log only (no node manager)%s\n",
               was_log_only ? ", as it was started (remove DIR/log-only to change that)" : "");
    if (db_cluster_tcp(&c) && !node.log_only) {
        char tpath[PATH_MAX + 32];
        if (lux_token_write(&c))
            return lux_fail("start", "the join token: %s", lux_errmsg());
        const char *hp = strstr(ep, "://") ? strstr(ep, "://") + 3 : ep;
        printf("  the token that lets a machine join is %s (mode 0600; it holds the cluster's\n"
               "  secret key). Copy it to the machine, then run there:\n"
               "    lux start --address %s --dir DIR --token-file TOKEN\n",
               lux_token_path(&c, tpath, sizeof tpath), hp);
    } else if (!node.log_only) {
        printf("  listening on ipc only: to add machines, start the head with "
               "--listen tcp://HOST\n");
    }
    return 0;
}

int
cmd_stop(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, 0, 'd'}, {0}};
    lux_opt_t p = {.cmd = "stop", .usage = "lux stop --dir DIR", .opts = opts};
    const char *dir = NULL;
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o != 'd')
            return p.status;
        dir = optarg;
    }
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return 2;
    if (!dir)
        return lux_opt_usage(&p, "--dir DIR is required");
    bool is_node = lux_node_dir(dir);
    int rc = is_node ? lux_node_stop(dir, 30000) : lux_head_stop(dir, 30000);
    /* whatever became of the head: object stores left in /dev/shm by node
       managers that were killed (this one's, or any other of this user's
       that is gone) are removed */
    char prefix[32];
    snprintf(prefix, sizeof prefix, "lux-%d-", (int) getuid());
    int swept = exec_arena_sweep(prefix);
    if (swept)
        printf("removed %d object store%s left in /dev/shm by node managers that are gone\n",
               swept, swept == 1 ? "" : "s");
    if (rc)
        return lux_fail("stop", "%s", lux_errmsg());
    printf("stopped the %s in %s\n", is_node ? "node" : "head", dir);
    return 0;
}

/* --- the daemons -------------------------------------------------------------------------- */

typedef struct {
    pid_t pid;
    int64_t started_ms;
    int64_t restart_at_ms; /* 0: running or not scheduled */
    int backoff_ms;
    bool adopted;          /* left running by a supervisor that died: not our child */
    bool ran;              /* it ran before: a restart (db_replica_restart_hooks) */
} s_child_t;

/* The pid of replica s.i left running by an earlier supervisor (its
   pidfile names a live process that holds its lock), or 0. Replicas
   outlive their supervisor: the log keeps serving while the head is
   restarted, and the new supervisor takes them back. */
pid_t
lux_head_replica_running(const db_cluster_t *c, uint32_t s, uint32_t i)
{
    char rel[64], path[PATH_MAX + 64];
    snprintf(rel, sizeof rel, "run/replica-%u-%u.pid", s, i);
    pid_t pid = util_pidfile_read(db_cluster_path(c, path, sizeof path, rel));
    if (pid <= 0 || !util_proc_alive(pid))
        return 0;
    snprintf(rel, sizeof rel, "run/replica-%u-%u.lock", s, i);
    int fd = util_lock_file(db_cluster_path(c, path, sizeof path, rel));
    if (fd >= 0) {
        close(fd); /* free: nobody runs it (the pid was reused) */
        return 0;
    }
    return pid;
}

static pid_t
s_spawn_replica(const db_cluster_t *c, const char *exe, uint32_t s, uint32_t i, char **env)
{
    char shard[16], index[16], log[PATH_MAX + 64], rel[64];
    snprintf(shard, sizeof shard, "%u", s);
    snprintf(index, sizeof index, "%u", i);
    snprintf(rel, sizeof rel, "log/replica-%u-%u.log", s, i);
    db_cluster_path(c, log, sizeof log, rel);
    char *argv[] = {(char *) exe, "replica", "--dir", (char *) c->dir, "--shard", shard,
                    "--index", index, NULL};
    return util_spawn_env(argv, log, env);
}


/* Retention (lux start --compact-after AGE): the supervisor runs `lux
   compact --before AGE` as a child process every quarter of AGE (1 s to
   10 min), one at a time, its output in DIR/log/compact.log. Appends go on
   meanwhile (db_archive.h); a compaction still running at stop is
   stopped: killed midway it loses nothing, the next one finishes it. */
typedef struct {
    const char *age;   /* NULL: off */
    int64_t every_ms;
    int64_t next_ms;   /* monotonic ms of the next run */
    pid_t pid;         /* the running one, 0: none */
} s_retain_t;

static void
s_retain_tick(s_retain_t *r, const db_cluster_t *c, const char *exe, int64_t now)
{
    int status;
    if (r->pid && waitpid(r->pid, &status, WNOHANG) == r->pid) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            log_info("compaction (pid %d) done; see log/compact.log", (int) r->pid);
        else
            log_error("compaction (pid %d) failed (status 0x%x); see log/compact.log",
                      (int) r->pid, status);
        r->pid = 0;
    }
    if (!r->age || r->pid || now < r->next_ms)
        return;
    char log[PATH_MAX + 32];
    char *argv[] = {(char *) exe, "compact", "--dir", (char *) c->dir, "--before",
                    (char *) r->age, NULL};
    pid_t pid = util_spawn(argv, db_cluster_path(c, log, sizeof log, "log/compact.log"));
    if (pid < 0)
        log_error("cannot start a compaction: %s", lux_errmsg());
    else
        r->pid = pid;
    r->next_ms = now + r->every_ms;
}


int
cmd_supervise(int argc, char **argv)
{
    db_cluster_t c;
    char path[PATH_MAX + 32], exe[PATH_MAX];
    static const char usage[] = "lux supervise --dir DIR [--log-only] [--workers N] "
                                "[--store-mb N] [--resources R] [--compact-after AGE]";
    exec_node_opts_t no = {.cluster = &c};
    lux_ckpt_t ck = {.every_ms = 10000, .every_events = 100000};
    bool log_only = false;
    static const struct option opts[] = {
        {"dir", required_argument, 0, 'd'},          {"log-only", no_argument, 0, 'L'},
        {"workers", required_argument, 0, 'w'},      {"store-mb", required_argument, 0, 'm'},
        {"resources", required_argument, 0, 'R'},    {"witness", required_argument, 0, 'W'},
        {"checkpoint-s", required_argument, 0, 'T'}, {"checkpoint-events", required_argument, 0, 'N'},
        {"compact-after", required_argument, 0, 'C'},
        {0}};
    s_retain_t retain = {0};
    int64_t age;
    lux_opt_t p = {.cmd = "supervise", .usage = usage, .opts = opts};
    const char *dir = NULL;
    unsigned long v;
    int o, nk;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        switch (o) {
        case 'd':
            dir = optarg;
            break;
        case 'L':
            log_only = true;
            break;
        case 'W':
            ck.witness = optarg;
            break;
        case 'C':
            if (!lux_parse_age(optarg, &age) || age == 0)
                return lux_opt_usage(&p, "--compact-after takes an age, not '%s'", optarg);
            retain.age = optarg;
            retain.every_ms = age / 4000000;
            retain.every_ms = retain.every_ms < 1000     ? 1000
                              : retain.every_ms > 600000 ? 600000
                                                         : retain.every_ms;
            break;
        case 'T':
        case 'N':
            /* -1 (from lux start's 0): that periodic kind is off */
            if (strcmp(optarg, "-1") == 0)
                v = 0;
            else if (!lux_opt_uint(&p, o == 'T' ? "--checkpoint-s" : "--checkpoint-events",
                                   1ul << 40, true, &v))
                return 2;
            if (o == 'T')
                ck.every_ms = (int64_t) v * 1000;
            else
                ck.every_events = v;
            break;
        default:
            if ((nk = lux_node_opt(&p, o, &no)) <= 0)
                return nk < 0 ? 2 : p.status;
        }
    }
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return 2;
    if (!dir)
        return lux_opt_usage(&p, "--dir DIR is required (internal: run by lux start)");
    util_log_init(UTIL_LOG_INFO);
    util_log_name("supervisor");
    if (db_cluster_load(&c, dir) || util_self_exe(exe, sizeof exe))
        return lux_fail("supervise", "%s", lux_errmsg());
    char lock[PATH_MAX + 32];
    if (util_lock_file(db_cluster_path(&c, lock, sizeof lock, "run/supervisor.lock")) < 0)
        return lux_fail("supervise", "another supervisor runs %s (%s)", c.dir, lux_errmsg());
    db_cluster_path(&c, path, sizeof path, "run/supervisor.pid");
    if (util_pidfile_write(path))
        return lux_fail("supervise", "%s", lux_errmsg());
    if (lux_ckpt_init(&ck, &c))
        return lux_fail("supervise", "%s", lux_errmsg());
    zsys_init();
    net_sec_t *sec = lux_head_sec(&c);
    if (db_cluster_tcp(&c) && !sec)
        return lux_fail("supervise", "%s", lux_errmsg());
    ck.sec = sec;
    db_master_opts_t mo = {.cluster = &c, .sec = sec};
    zactor_t *master = db_master_new(&mo);
    if (!master) {
        /* the security actor goes first: left to zsys at exit, its
           sockets are destroyed under it and czmq asserts */
        int rc = lux_fail("supervise", "%s", lux_errmsg());
        net_sec_destroy(&sec);
        unlink(path);
        return rc;
    }
    zactor_t *node = NULL; /* started once the replicas serve (it appends to the log) */
    /* who is in the cluster (exec_members.h): the nodes' heartbeats, and
       node_died when they stop; the head's own node beats to it too */
    zactor_t *members = NULL;
    lux_beat_t *beat = NULL;
    if (!log_only) {
        exec_members_opts_t eo = {.cluster = &c, .sec = sec};
        if (!(members = exec_members_new(&eo))) {
            int rc = lux_fail("supervise", "%s", lux_errmsg());
            zactor_destroy(&master);
            net_sec_destroy(&sec);
            unlink(path);
            return rc;
        }
    }
    uint32_t n = c.shards * c.replicas;
    s_child_t *kids = calloc(n, sizeof *kids);
    char **renv = util_env_without("LUX_TEST_", db_replica_restart_hooks);
    for (uint32_t k = 0; k < n; k++) {
        kids[k].backoff_ms = 200;
        kids[k].restart_at_ms = 1; /* start now */
    }
    log_info("supervising %u shards x %u replicas in %s", c.shards, c.replicas, c.dir);
    int64_t checked = util_mono_ms(), start_ms = checked;
    /* a test hook: once its node has joined, the supervisor sends no
       heartbeat for this long (t/6129: its node declared dead) */
    const char *gap_env = getenv("LUX_TEST_HEAD_BEAT_GAP_MS");
    int64_t beat_gap_ms = gap_env ? strtoll(gap_env, NULL, 10) : 0, beat_gap_until = 0;
    bool own_told = false; /* the monitor knows its own node (exec_members.h) */
    retain.next_ms = checked + retain.every_ms;
    if (retain.age)
        log_info("compacting events older than %s every %lld ms", retain.age,
                 (long long) retain.every_ms);
    while (!zsys_interrupted) {
        int64_t now = util_mono_ms();
        if (now - checked >= 1000) {
            /* a directory removed or taken over by another head is not ours
               to serve any more: stop rather than run on as an orphan */
            checked = now;
            lux_ckpt_tick(&ck, &c, now, false);
            s_retain_tick(&retain, &c, exe, now);
            if (util_pidfile_read(path) != getpid()) {
                log_error("%s no longer names this supervisor (pid %d): stopping", path,
                          (int) getpid());
                break;
            }
        }
        int status;
        /* reap our replicas by pid: the node manager reaps its own workers */
        for (uint32_t k0 = 0; k0 < n; k0++) {
            pid_t dead = !kids[k0].pid ? 0
                         : kids[k0].adopted ? (util_proc_alive(kids[k0].pid) ? 0 : kids[k0].pid)
                                            : waitpid(kids[k0].pid, &status, WNOHANG);
            if (dead <= 0)
                continue;
            if (kids[k0].adopted) {
                status = 0; /* not ours to reap: how it ended is unknown */
                kids[k0].adopted = false;
            }
            for (uint32_t k = k0; k <= k0; k++) {
                bool quick = now - kids[k].started_ms < 10000;
                kids[k].backoff_ms = quick ? (kids[k].backoff_ms * 2 > 5000 ? 5000
                                                                           : kids[k].backoff_ms * 2)
                                           : 200;
                kids[k].pid = 0;
                kids[k].restart_at_ms = now + kids[k].backoff_ms;
                if (WIFSIGNALED(status))
                    log_warn("replica %u.%u (pid %d) was killed by signal %d; restarting in %d ms",
                             k / c.replicas, k % c.replicas, dead, WTERMSIG(status),
                             kids[k].backoff_ms);
                else
                    log_warn("replica %u.%u (pid %d) exited with status %d; restarting in %d ms",
                             k / c.replicas, k % c.replicas, dead, WEXITSTATUS(status),
                             kids[k].backoff_ms);
            }
        }
        for (uint32_t k = 0; k < n; k++) {
            if (kids[k].pid || !kids[k].restart_at_ms || now < kids[k].restart_at_ms)
                continue;
            pid_t pid = lux_head_replica_running(&c, k / c.replicas, k % c.replicas);
            if (pid > 0) {
                log_info("replica %u.%u (pid %d) still runs: taking it back", k / c.replicas,
                         k % c.replicas, (int) pid);
                kids[k].adopted = true;
            } else {
                pid = s_spawn_replica(&c, exe, k / c.replicas, k % c.replicas,
                                      kids[k].ran && renv ? renv : NULL);
            }
            if (pid < 0) {
                log_error("%s", lux_errmsg());
                kids[k].restart_at_ms = now + 1000;
                continue;
            }
            kids[k].pid = pid;
            kids[k].ran = true;
            kids[k].started_ms = now;
            kids[k].restart_at_ms = 0;
        }
        if (!node && !log_only && now - start_ms >= 0) {
            /* after the replicas are started: it waits for the chains */
            char host[DB_EP_MAX] = "local";
            if (db_cluster_tcp(&c) && net_host_address(c.listen + 6, host, sizeof host) == 0)
                no.address = host;
            if (!(node = exec_node_new(&no))) {
                log_error("cannot start the node manager: %s", lux_errmsg());
                break;
            }
            if (!(beat = lux_beat_new(&c, sec, host, "head")))
                log_error("the head's node will not beat: %s", lux_errmsg());
        }
        if (beat && node && members && !own_told && lux_beat_node(beat)) {
            zstr_sendx(members, "OWN", lux_beat_node(beat), NULL);
            own_told = true;
        }
        if (beat && node && now >= beat_gap_until) {
            if (beat_gap_ms > 0 && lux_beat_node(beat)) {
                log_warn("LUX_TEST_HEAD_BEAT_GAP_MS: no heartbeat for %lld ms",
                         (long long) beat_gap_ms);
                beat_gap_until = now + beat_gap_ms;
                beat_gap_ms = 0;
            } else if (lux_beat_tick(beat, node, NULL) == LUX_EDEAD) {
                /* The monitor does not judge this node by its silence
                   (exec_members.h), but one told it is dead does what a
                   node daemon does: the node manager stops (its workers,
                   tasks and store go, as the rest of the cluster takes
                   them to be), and starts again under a new ID (a dead ID
                   stays dead). Before, it beat on for a node that stayed
                   dead, and the head ran no placed task again (t/6129). */
                log_error("%s: starting its node manager again, as a new node", lux_errmsg());
                lux_beat_destroy(&beat);
                zactor_destroy(&node);
                own_told = false;
            }
        }
        zclock_sleep(20);
    }
    log_info("stopping");
    if (retain.pid && !util_proc_stop(retain.pid, SIGTERM, 5000))
        log_error("compaction (pid %d) would not stop, even with SIGKILL", (int) retain.pid);
    char own[UTIL_ID_HEX] = "";
    if (beat && lux_beat_node(beat))
        snprintf(own, sizeof own, "%s", lux_beat_node(beat));
    lux_beat_destroy(&beat);
    zactor_destroy(&node); /* first: its workers stop, its events reach the log */
    if (members && own[0]) { /* the head's own node leaves like any other */
        char *reply = NULL;
        if (exec_members_ask(&c, sec, "LEAVE", own, 5000, &reply))
            log_error("the head's node did not leave: %s", lux_errmsg());
        free(reply);
    }
    zactor_destroy(&members);
    for (uint32_t k = 0; k < n; k++)
        if (kids[k].pid)
            kill(kids[k].pid, SIGTERM);
    /* one deadline for all: a replica that does not stop in time (one
       stopped with SIGSTOP, one stuck on a disk) is killed */
    int64_t deadline = util_mono_ms() + 10000;
    for (uint32_t k = 0; k < n; k++) {
        int64_t left = deadline - util_mono_ms();
        if (kids[k].pid && !util_proc_stop(kids[k].pid, SIGTERM, left > 0 ? (int) left : 0))
            log_error("replica %u.%u (pid %d) would not stop, even with SIGKILL",
                      k / c.replicas, k % c.replicas, kids[k].pid);
    }
    /* every replica stopped: the tails' files hold the final committed log */
    lux_ckpt_tick(&ck, &c, util_mono_ms(), true);
    lux_ckpt_free(&ck);
    zactor_destroy(&master);
    net_sec_destroy(&sec);
    free(kids);
    util_env_free(&renv);
    if (util_pidfile_read(path) == getpid())
        unlink(path);
    log_info("stopped");
    return 0;
}

int
cmd_replica(int argc, char **argv)
{
    static const char usage[] =
        "lux replica --dir DIR --shard S --index I (internal: run by the supervisor)";
    db_cluster_t c;
    const char *dir = NULL;
    long shard = -1, index = -1;
    int rc = 0;
    static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                         {"shard", required_argument, 0, 's'},
                                         {"index", required_argument, 0, 'i'}, {0}};
    lux_opt_t cl = {.cmd = "replica", .usage = usage, .opts = opts};
    unsigned long v;
    int opt;
    while ((opt = lux_opt_next(&cl, argc, argv)) != -1) {
        if (opt == 'd')
            dir = optarg;
        else if (opt == 's' || opt == 'i') {
            if (!lux_opt_uint(&cl, opt == 's' ? "--shard" : "--index", DB_MAX_SHARDS, true, &v))
                return 2;
            *(opt == 's' ? &shard : &index) = (long) v;
        } else
            return cl.status;
    }
    if (!lux_opt_args(&cl, argc, argv, 0, 0, ""))
        return 2;
    if (!dir || shard < 0 || index < 0)
        return lux_opt_usage(&cl, "--dir, --shard and --index are required");
    util_log_init(UTIL_LOG_INFO);
    util_log_name("replica %ld.%ld", shard, index);
    if (db_cluster_load(&c, dir))
        return lux_fail("replica", "%s", lux_errmsg());
    if ((uint32_t) shard >= c.shards || (uint32_t) index >= c.replicas)
        return lux_fail("replica", "no replica %ld.%ld in a cluster of %u x %u", shard, index,
                        c.shards, c.replicas);
    /* one process per replica file. It outlives its supervisor (and the
       chain master in it): the chain keeps serving its last configuration,
       and a restarted supervisor finds it by its pidfile and takes it back */
    char lock[PATH_MAX + 64], rel[64], pidfile[PATH_MAX + 64];
    snprintf(rel, sizeof rel, "run/replica-%ld-%ld.lock", shard, index);
    if (util_lock_file(db_cluster_path(&c, lock, sizeof lock, rel)) < 0)
        return lux_fail("replica", "replica %ld.%ld already runs: %s", shard, index, lux_errmsg());
    snprintf(rel, sizeof rel, "run/replica-%ld-%ld.pid", shard, index);
    if (util_pidfile_write(db_cluster_path(&c, pidfile, sizeof pidfile, rel)))
        return lux_fail("replica", "%s", lux_errmsg());
    zsys_init();
    net_sec_t *sec = lux_head_sec(&c);
    if (db_cluster_tcp(&c) && !sec)
        return lux_fail("replica", "%s", lux_errmsg());
    db_replica_opts_t o = {.cluster = &c, .shard = (uint32_t) shard, .index = (uint32_t) index,
                           .sec = sec};
    zactor_t *rep = db_replica_new(&o);
    if (!rep)
        return lux_fail("replica", "%s", lux_errmsg());
    zpoller_t *p = zpoller_new(rep, NULL);
    int64_t failed_ms = 0;
    while (!zsys_interrupted) {
        if (zpoller_wait(p, 200) == rep) {
            char *what = NULL, *text = NULL;
            zstr_recvx(rep, &what, &text, NULL);
            if (what && strcmp(what, "FAILED") == 0 && !failed_ms) {
                log_error("failed: %s; answering appends with the error until there is room "
                          "on its disk, then restarting", text ? text : "");
                failed_ms = util_mono_ms();
                rc = 1;
            }
            zstr_free(&what);
            zstr_free(&text);
        }
        /* failed: the replica answers appends with why (a client waits for
           nothing in silence) and beats as failed (lux status says so); it
           exits to be restarted once its disk has room again, or after a
           while whatever the cause, as a restart is how it recovers */
        if (failed_ms) {
            int64_t now = util_mono_ms();
            struct statvfs vfs;
            bool room = statvfs(c.dir, &vfs) == 0 &&
                        vfs.f_bavail * vfs.f_frsize >= LUX_REPLICA_ROOM;
            if ((room && now - failed_ms >= 1000) || now - failed_ms >= S_REPLICA_FAILED_MS)
                break;
        }
    }
    zpoller_destroy(&p);
    zactor_destroy(&rep);
    net_sec_destroy(&sec);
    if (util_pidfile_read(pidfile) == getpid())
        unlink(pidfile);
    log_info("stopped");
    return rc;
}

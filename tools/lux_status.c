/*  lux_status - `lux status`: a cluster's components, its chains' replicas
    and its nodes, from the head's directory (its files and its master) or
    from anywhere by the master and the membership monitor (lux_node.c);
    --watch repeats it as a live view with the log's and the nodes' rates.
*/
#include "lux_cmd.h"
#include "lux_node.h"
#include "lux_opt.h"
#include "db/db_chain.h"
#include "db/db_master.h"
#include "db/db_replica.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <czmq.h>
#include <getopt.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static const char *
s_role(const db_chain_t *ch, uint32_t index)
{
    int pos = db_chain_find(ch, index);
    if (pos < 0)
        return "-";
    if (ch->n == 1)
        return "head+tail";
    return pos == 0 ? "head" : pos == (int) ch->n - 1 ? "tail" : "middle";
}

/* The head's own view, from its files and its master: the components, the
   replicas (each file's last seq read from the file itself) and the nodes.
   watch: the nodes' table gets their tasks finished a second. *events: the
   events the log holds, all shards (the longest replica of each), for
   --watch's rate. */
static int
s_status_local(const db_cluster_t *c, bool json, bool watch, uint64_t *events)
{
    db_status_t st;
    char hex[UTIL_ID_HEX], path[PATH_MAX];
    int pid = lux_head_pid(c->dir);
    bool running = false;
    if (pid) {
        net_sec_t *sec = lux_head_sec(c);
        running = db_master_status(c, sec, &st, 2000) == 0;
        net_sec_destroy(&sec);
        if (!running)
            fprintf(stderr, "lux status: %s\n", lux_errmsg());
    }
    if (!running) {
        memset(&st, 0, sizeof st);
        st.chains = calloc(c->shards, sizeof *st.chains);
        st.beats = calloc(c->shards * c->replicas, sizeof *st.beats);
        st.age_ms = calloc(c->shards * c->replicas, sizeof *st.age_ms);
        db_chain_load_state(c, st.chains);
        for (uint32_t i = 0; i < c->shards * c->replicas; i++) {
            st.beats[i].shard = i / c->replicas;
            st.beats[i].index = i % c->replicas;
            st.age_ms[i] = -1;
            /* one left running by a supervisor that died: it still serves */
            st.beats[i].pid = (uint32_t) lux_head_replica_running(c, i / c->replicas, i % c->replicas);
        }
    }
    /* the last seq from the files themselves: a heartbeat may be 100 ms old */
    for (uint32_t i = 0; i < c->shards * c->replicas; i++) {
        db_beat_t *b = &st.beats[i];
        char file[PATH_MAX];
        db_cluster_replica_db(c, i / c->replicas, i % c->replicas, file, sizeof file);
        db_store_opts_t so = {.path = file, .readonly = true};
        db_store_t *s = util_exists(file) ? db_store_open(&so) : NULL;
        if (s)
            b->last = db_store_last_seq(s);
        db_store_close(&s);
    }
    *events = 0;
    for (uint32_t s = 0; s < c->shards; s++) {
        uint64_t longest = 0;
        for (uint32_t i = 0; i < c->replicas; i++)
            if (st.beats[s * c->replicas + i].last > longest)
                longest = st.beats[s * c->replicas + i].last;
        *events += longest;
    }
    if (json) {
        printf("{\"cluster\": \"%s\", \"dir\": ", util_id_hex(&c->id, hex));
        lux_json_str(stdout, c->dir);
        printf(", \"running\": %s, \"shards\": %u, \"replicas\": %u, \"sync\": \"%s\",\n"
               " \"components\": [\n",
               running ? "true" : "false", c->shards, c->replicas, c->sync_full ? "full" : "normal");
        printf("  {\"kind\": \"supervisor\", \"pid\": %d, \"log\": ", running ? pid : 0);
        lux_json_str(stdout, db_cluster_path(c, path, sizeof path, "log/supervisor.log"));
        printf("},\n  {\"kind\": \"master\", \"pid\": %u, \"state\": ",
               running ? st.master_pid : 0);
        lux_json_str(stdout, db_cluster_path(c, path, sizeof path, "master.state"));
        printf("}");
    } else {
        printf("cluster %s in %s: %s\n", util_id_hex(&c->id, hex), c->dir,
               running ? "running" : "stopped");
        if (running)
            printf("supervisor pid %d, chain master pid %u\n", pid, st.master_pid);
        printf("\n%-5s %-6s %-9s %-7s %-9s %-8s %-7s %-10s %s\n", "shard", "epoch", "chain",
               "replica", "role", "state", "pid", "last_seq", "file");
    }
    for (uint32_t s = 0; s < c->shards; s++) {
        const db_chain_t *ch = &st.chains[s];
        char order[64] = "";
        size_t n = 0;
        for (uint32_t k = 0; k < ch->n; k++)
            n += (size_t) snprintf(order + n, sizeof order - n, "%s%u", k ? "," : "", ch->m[k].index);
        for (uint32_t i = 0; i < c->replicas; i++) {
            uint32_t slot = s * c->replicas + i;
            const db_beat_t *b = &st.beats[slot];
            const char *state = !running ? (b->pid ? "no-master" : "stopped")
                                : st.age_ms[slot] < 0 ? "unheard"
                                : st.age_ms[slot] > c->dead_ms ? "silent"
                                                             : db_replica_state_name(b->state);
            char file[PATH_MAX];
            db_cluster_replica_db(c, s, i, file, sizeof file);
            if (json) {
                printf(",\n  {\"kind\": \"replica\", \"shard\": %u, \"index\": %u, \"role\": \"%s\","
                       " \"state\": \"%s\", \"epoch\": %llu, \"chain\": \"%s\", \"last_seq\": %llu,"
                       " \"pid\": %u, \"heartbeat_age_ms\": %lld, \"file\": ",
                       s, i, s_role(ch, i), state, (unsigned long long) ch->epoch, order,
                       (unsigned long long) b->last, b->pid, (long long) st.age_ms[slot]);
                lux_json_str(stdout, file);
                /* where it listens, as it advertises it (empty when unheard) */
                static const char *names[DB_EP_N] = {"append", "chain", "read", "pub"};
                printf(", \"endpoints\": {");
                for (int e = 0; e < DB_EP_N; e++) {
                    printf("%s\"%s\": ", e ? ", " : "", names[e]);
                    lux_json_str(stdout, running && st.age_ms[slot] >= 0 ? b->ep[e] : "");
                }
                printf("}}");
            } else {
                printf("%-5u %-6llu %-9s %-7u %-9s %-8s %-7u %-10llu %s\n", s,
                       (unsigned long long) ch->epoch, i == 0 ? order : "", i, s_role(ch, i), state,
                       b->pid, (unsigned long long) b->last, file);
            }
        }
    }
    /* what stops the log, said plainly: a full disk, failed replicas */
    struct statvfs vfs;
    long long avail = statvfs(c->dir, &vfs) == 0 ? (long long) (vfs.f_bavail * vfs.f_frsize) : -1;
    /* the nodes, from the head's membership monitor */
    char logonly[PATH_MAX + 32];
    bool nodes = running && !util_exists(db_cluster_path(c, logonly, sizeof logonly, "log-only"));
    if (json) {
        printf("\n]");
        if (nodes) {
            net_sec_t *sec = lux_head_sec(c);
            lux_nodes_print(c, sec, true, false);
            net_sec_destroy(&sec);
        }
        printf(", \"disk_free_bytes\": %lld}\n", avail);
    } else {
        if (nodes) {
            net_sec_t *sec = lux_head_sec(c);
            lux_nodes_print(c, sec, false, watch);
            net_sec_destroy(&sec);
        }
        if (avail >= 0 && avail < LUX_REPLICA_ROOM)
            printf("\nthe disk holding %s is full (%lld bytes free): the log cannot write "
                   "until there is room\n", c->dir, avail);
        for (uint32_t i = 0; running && i < c->shards * c->replicas; i++)
            if (st.age_ms[i] >= 0 && st.age_ms[i] <= c->dead_ms &&
                st.beats[i].state == DB_RS_FAILED)
                printf("replica %u.%u failed (pid %u answers appends with why): see "
                       "%s/log/replica-%u-%u.log\n", i / c->replicas, i % c->replicas,
                       st.beats[i].pid, c->dir, i / c->replicas, i % c->replicas);
    }
    db_status_free(&st);
    return 0;
}

/* lux status --watch: each frame's last line, with the log's rate since
   the frame before. */
static void
s_watch_footer(double secs, uint64_t events, uint64_t *prev, int64_t *prev_ms)
{
    int64_t now = util_mono_ms();
    time_t t = time(NULL);
    struct tm tm;
    char when[32];
    strftime(when, sizeof when, "%H:%M:%S", localtime_r(&t, &tm));
    printf("\n%s: the log holds %llu event%s", when, (unsigned long long) events,
           events == 1 ? "" : "s");
    if (*prev_ms && now > *prev_ms && events >= *prev)
        printf(", %.0f appended a second", (double) (events - *prev) * 1000.0 /
                                              (double) (now - *prev_ms));
    printf("; again every %g s, Ctrl-C ends it\n", secs);
    *prev = events;
    *prev_ms = now;
}

int
cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                         {"json", no_argument, 0, 'j'},
                                         {"address", required_argument, 0, 'A'},
                                         {"token-file", required_argument, 0, 'K'},
                                         {"watch", optional_argument, 0, 'w'},
                                         {0}};
    lux_opt_t p = {.cmd = "status",
                   .usage = "lux status --dir DIR [--json] [--watch[=SECS]]\n"
                            "       lux status --address HOST:PORT --token-file FILE [--json] "
                            "[--watch[=SECS]]",
                   .opts = opts};
    const char *dir = NULL, *address = NULL, *token = NULL;
    int o;
    bool json = false;
    double watch = 0;
    db_cluster_t c;

    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o == 'd')
            dir = optarg;
        else if (o == 'j')
            json = true;
        else if (o == 'A')
            address = optarg;
        else if (o == 'K')
            token = optarg;
        else if (o == 'w') {
            char *end;
            watch = optarg ? strtod(optarg, &end) : 2.0;
            if (optarg && (*end || !(watch >= 0.1 && watch <= 86400)))
                return lux_opt_usage(&p, "--watch=SECS: a number of seconds, 0.1 to 86400");
        }
        else
            return p.status;
    }
    if (!lux_opt_args(&p, argc, argv, 0, 0, ""))
        return 2;
    if (!dir == !address)
        return lux_opt_usage(&p, "give --dir DIR or --address HOST:PORT");
    /* away from the head's files (--address, or a node's directory), ask
       its master and its monitor; on the head, read its files too */
    bool away = address || lux_node_dir(dir);
    net_sec_t *sec = NULL;
    char ep[DB_EP_MAX];
    int rc;
    if (!away && db_cluster_load(&c, dir))
        return lux_fail("status", "%s", lux_errmsg());
    zsys_init();
    if (away && (rc = lux_node_cluster(dir, address, token, &c, &sec))) {
        net_sec_destroy(&sec);
        return lux_fail("status", "%s", lux_errmsg());
    }
    if (away && !address)
        address = db_cluster_master_ep(&c, ep, sizeof ep) + 6;
    uint64_t events = 0, prev = 0;
    int64_t prev_ms = 0;
    bool tty = isatty(STDOUT_FILENO);
    do {
        if (watch && !json) /* a terminal shows the latest frame only */
            printf(tty ? "\033[H\033[2J" : prev_ms ? "\n" : "");
        rc = away ? lux_node_status(&c, sec, address, json, watch > 0, &events)
                  : s_status_local(&c, json, watch > 0, &events);
        if (rc && watch && !zsys_interrupted) { /* it may come back: say so, go on */
            if (json)
                printf("{\"error\": "), lux_json_str(stdout, lux_errmsg()), printf("}\n");
            else
                printf("lux status: %s\n", lux_errmsg());
        }
        if (watch && !json && !rc)
            s_watch_footer(watch, events, &prev, &prev_ms);
        fflush(stdout);
        for (int64_t end = util_mono_ms() + (int64_t) (watch * 1000);
             !zsys_interrupted && util_mono_ms() < end;)
            zclock_sleep(50);
    } while (watch && !zsys_interrupted);
    net_sec_destroy(&sec);
    return rc && !watch ? lux_fail("status", "%s", lux_errmsg()) : 0;
}

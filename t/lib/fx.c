/*  fx - cluster fixtures for tests (see fx.h). */
#include "fx.h"
#include "tamper.h"
#include "../tap.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "net/net_ep.h"
#include "net/net_wire.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static db_cluster_t s_started[8];
static int s_nstarted;

static const char *
s_bin(void)
{
    const char *b = getenv("LUX_BIN");
    return b && *b ? b : "./lux";
}

void
fx_lux_unwrapped(void)
{
    const char *b = getenv("LUX_BIN");
    char real[1100];
    const char *slash = b ? strrchr(b, '/') : NULL;
    if (!slash || !getenv("LD_LIBRARY_PATH"))
        return;
    snprintf(real, sizeof real, "%.*s/.libs/%s", (int) (slash - b), b, slash + 1);
    if (access(real, X_OK) == 0)
        setenv("LUX_BIN", real, 1);
}

static void
s_stop_all(void)
{
    for (int i = 0; i < s_nstarted; i++)
        fx_stop(&s_started[i]);
    s_nstarted = 0;
}

int
fx_lux(char *out, size_t outlen, char *err, size_t errlen, const char *fmt, ...)
{
    char args[2048], cmd[4096], ofile[600], efile[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(ofile, sizeof ofile, "%s/fx.out", tap_tmpdir());
    snprintf(efile, sizeof efile, "%s/fx.err", tap_tmpdir());
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", s_bin(), args, ofile, efile);
    int rc = system(cmd);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
    char *o = util_read_file(ofile, NULL), *e = util_read_file(efile, NULL);
    if (out)
        snprintf(out, outlen, "%s", o ? o : "");
    if (err)
        snprintf(err, errlen, "%s", e ? e : "");
    if (tap_verbose() && e && *e)
        diag("lux %s: %s", args, e);
    free(o);
    free(e);
    return rc;
}

void
fx_start(db_cluster_t *c, uint32_t shards, uint32_t replicas, const char *extra)
{
    char dir[512], err[4096];
    static int n;
    snprintf(dir, sizeof dir, "%s/cluster-%d", tap_tmpdir(), n++);
    int rc = fx_lux(NULL, 0, err, sizeof err,
                    "start --head --dir %s --shards %u --replicas %u --heartbeat-ms 50 "
                    "--dead-ms 400 %s",
                    dir, shards, replicas, extra ? extra : "");
    if (rc)
        bail("lux start failed (%d): %s", rc, err);
    if (db_cluster_load(c, dir))
        bail("%s", lux_errmsg());
    if (s_nstarted == 0)
        tap_atexit(s_stop_all);
    if (s_nstarted < 8)
        s_started[s_nstarted++] = *c;
}

void
fx_start_tcp(db_cluster_t *c, uint32_t shards, uint32_t replicas, int slot, int *port,
             net_sec_t **good, net_sec_t **other)
{
    char extra[160], keys[600];
    *port = 20000 + (int) (getpid() % 2000) * 7 + slot;
    snprintf(extra, sizeof extra, "--listen tcp://127.0.0.1 --port %d --workers 1 --store-mb 16",
             *port);
    fx_start(c, shards, replicas, extra);
    snprintf(keys, sizeof keys, "%s/keys", c->dir);
    *good = net_sec_load(keys);
    snprintf(keys, sizeof keys, "%s/other-keys", tap_tmpdir());
    is_int(net_sec_create(keys), 0, "another key pair");
    *other = net_sec_load(keys);
    ok(*good && *other, "both key pairs load");
}

void
fx_stop(db_cluster_t *c)
{
    char err[1024];
    char pidfile[600];
    snprintf(pidfile, sizeof pidfile, "%s/run/supervisor.pid", c->dir);
    if (!util_pidfile_read(pidfile))
        return;
    if (fx_lux(NULL, 0, err, sizeof err, "stop --dir %s", c->dir) && !strstr(err, "no head"))
        diag("lux stop: %s", err);
}

pid_t
fx_pid_at(const db_cluster_t *c, uint32_t shard, int pos, uint32_t *index)
{
    db_status_t st;
    pid_t pid = 0;
    if (db_master_status(c, NULL, &st, 2000))
        return 0;
    const db_chain_t *ch = &st.chains[shard];
    if (pos < 0)
        pos = (int) ch->n + pos;
    if (pos >= 0 && pos < (int) ch->n) {
        uint32_t slot = shard * c->replicas + ch->m[pos].index;
        if (index)
            *index = ch->m[pos].index;
        if (st.age_ms[slot] >= 0)
            pid = (pid_t) st.beats[slot].pid;
    }
    db_status_free(&st);
    return pid;
}

bool
fx_wait_chain(const db_cluster_t *c, uint32_t shard, uint32_t n, int timeout_ms)
{
    int64_t deadline = util_mono_ms() + timeout_ms;
    while (util_mono_ms() < deadline) {
        db_status_t st;
        if (db_master_status(c, NULL, &st, 1000) == 0) {
            const db_chain_t *ch = &st.chains[shard];
            bool ok = ch->n == n;
            for (uint32_t k = 0; ok && k < ch->n; k++) {
                uint32_t slot = shard * c->replicas + ch->m[k].index;
                ok = st.age_ms[slot] >= 0 && st.age_ms[slot] < c->dead_ms &&
                     st.beats[slot].state == DB_RS_CHAIN && st.beats[slot].epoch == ch->epoch;
            }
            db_status_free(&st);
            if (ok)
                return true;
        }
        usleep(20000);
    }
    return false;
}

int
fx_pids(const db_cluster_t *c, pid_t *pids, int max)
{
    char pidfile[600];
    db_status_t st;
    int n = 0;
    snprintf(pidfile, sizeof pidfile, "%s/run/supervisor.pid", c->dir);
    if (n < max)
        pids[n++] = util_pidfile_read(pidfile);
    if (db_master_status(c, NULL, &st, 2000))
        return n;
    for (uint32_t i = 0; i < c->shards * c->replicas && n < max; i++)
        if (st.age_ms[i] >= 0)
            pids[n++] = (pid_t) st.beats[i].pid;
    db_status_free(&st);
    return n;
}

bool
fx_is_worker(pid_t pid)
{
    return util_proc_is_worker(pid);
}

int
fx_children(pid_t *pids, int max)
{
    return fx_children_of(getpid(), pids, max);
}

int
fx_children_of(pid_t parent, pid_t *pids, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while (n < max && (e = readdir(d))) {
        char path[300], buf[512], *rp;
        pid_t pid = (pid_t) atoi(e->d_name);
        if (pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
        char state;
        int ppid;
        if (!(rp = strrchr(buf, ')')) || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
            continue;
        if (ppid == (int) parent && state != 'Z' && state != 'X')
            pids[n++] = pid;
    }
    closedir(d);
    return n;
}

int
fx_held(const char *dir, int n, pid_t *pids, int timeout_ms)
{
    int found = 0;
    for (int waited = 0;; waited += 5) {
        DIR *d = opendir(dir);
        struct dirent *e;
        found = 0;
        while (d && found < n && (e = readdir(d)))
            if (strncmp(e->d_name, "held-", 5) == 0 && atoi(e->d_name + 5) > 0)
                pids[found++] = (pid_t) atoi(e->d_name + 5);
        if (d)
            closedir(d);
        if (found >= n || waited >= timeout_ms)
            return found;
        usleep(5000);
    }
}

int
fx_hold(lux_t *lx, const char *name, lux_ref_t *ref, pid_t *pid)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", tap_tmpdir(), name);
    mkdir(dir, 0700);
    int ready = 0, rc = lux_call(lx, "t_hold", 1, (lux_arg_t[]) {LUX_VAL(dir, strlen(dir))}, 1,
                                 ref);
    if (rc)
        return rc;
    lux_wait(lx, 1, ref, 1, 0, &ready); /* the call goes to the node now */
    return fx_held(dir, 1, pid, 120000) == 1 ? 0 : LUX_ETIMEDOUT;
}

void
fx_release(const char *name)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s/release", tap_tmpdir(), name);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

db_query_t *
fx_query_open(const char *dir)
{
    db_cluster_t c;
    db_query_t *q;
    if (db_cluster_load(&c, dir) || !(q = db_query_open(&c)))
        bail("the log in %s: %s", dir, lux_errmsg());
    return q;
}

int64_t
fx_count(db_query_t *q, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    if (db_query_prepare(q, sql, &st, NULL) == 0 && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    else
        diag("query failed: %s: %s", sql, lux_errmsg());
    sqlite3_finalize(st);
    return n;
}

int
fx_curve_handshake(const char *ep, bool pub, net_sec_t *server, net_sec_t *client)
{
    static int n;
    char mon[64];
    zsock_t *s = zsock_new(pub ? ZMQ_SUB : ZMQ_DEALER);
    zsock_set_linger(s, 0);
    if (pub)
        zsock_set_subscribe(s, "");
    if (client) {
        zsock_set_curve_serverkey(s, net_sec_public(server));
        zsock_set_curve_publickey(s, net_sec_public(client));
        zsock_set_curve_secretkey(s, net_sec_secret(client));
    }
    snprintf(mon, sizeof mon, "inproc://fx-mon-%d", n++);
    zmq_socket_monitor(zsock_resolve(s), mon,
                       ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL);
    zsock_t *m = zsock_new(ZMQ_PAIR);
    zsock_connect(m, "%s", mon);
    zsock_connect(s, "%s", ep);
    if (!pub)
        zstr_send(s, "hello");
    int got = 0;
    int64_t end = util_mono_ms() + 3000;
    zpoller_t *p = zpoller_new(m, NULL);
    while (util_mono_ms() < end) {
        if (zpoller_wait(p, 100) != m)
            continue;
        zmsg_t *e = zmsg_recv(m);
        zframe_t *f = zmsg_first(e);
        uint16_t ev = 0;
        if (f && zframe_size(f) >= 2)
            memcpy(&ev, zframe_data(f), 2);
        zmsg_destroy(&e);
        if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            got = 1;
            break;
        }
        if (ev) /* a failure: the server may retry, the answer is no */
            break;
    }
    zpoller_destroy(&p);
    zmq_socket_monitor(zsock_resolve(s), NULL, 0);
    zsock_destroy(&m);
    zsock_destroy(&s);
    return got;
}

bool
fx_wait_file(const char *path, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (access(path, F_OK) == 0)
            return true;
        usleep(10000);
    }
    return access(path, F_OK) == 0;
}

void
fx_gate_touch(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        bail("%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

bool
fx_gate_wait(const char *dir, struct db_client_t *cl, int timeout_ms)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/held", dir);
    for (int64_t t0 = util_mono_ms(); !util_exists(path);) {
        if (util_mono_ms() - t0 > timeout_ms)
            return false;
        if (cl)
            db_client_poll(cl, 20);
        else
            usleep(20000);
    }
    return true;
}

void
fx_append_notes(struct db_client_t *cl, const util_id_t *job, int n, uint64_t *count)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        if (job)
            DB_SET_ID(&e, job, DB_F_JOB, job);
        DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) *count);
        if (db_client_append(cl, &e))
            bail("append: %s", lux_errmsg());
        (*count)++;
    }
    db_client_flush(cl);
}

void
fx_chain_init(fx_chain_t *k, const db_cluster_t *c, uint32_t shard)
{
    memset(k, 0, sizeof *k);
    k->next = 1;
    db_event_genesis(k->prev, &c->id, shard);
}

void
fx_chain_batch(fx_chain_t *k, net_batch_t *b, fx_rec_fn *each, void *arg)
{
    net_batch_it_t it;
    uint64_t seq;
    const uint8_t *rec;
    size_t len;
    uint8_t h[DB_HASH_LEN];
    net_batch_iter(&it, b);
    while (net_batch_next(&it, &seq, &rec, &len)) {
        db_event_chain(h, k->prev, seq, rec, len);
        bool linked = memcmp(h, rec + len - DB_HASH_LEN, DB_HASH_LEN) == 0;
        if ((seq != k->next || !linked) && !k->bad++)
            snprintf(k->why, sizeof k->why, "seq %llu after %llu%s", (unsigned long long) seq,
                     (unsigned long long) k->next - 1, seq == k->next ? " does not chain" : "");
        memcpy(k->prev, rec + len - DB_HASH_LEN, DB_HASH_LEN);
        k->next = seq + 1;
        if (each)
            each(arg, seq, rec, len);
    }
}

bool
fx_chain_follow(db_sub_t *sub, fx_chain_t *k, uint64_t upto, int wait_ms, int limit_ms,
                fx_rec_fn *each, void *arg)
{
    int64_t t0 = util_mono_ms();
    net_batch_t b;
    while ((!upto || k->next <= upto) && util_mono_ms() - t0 < limit_ms) {
        if (db_sub_recv(sub, &b, upto ? 200 : wait_ms) <= 0) {
            if (!upto)
                break;
            continue;
        }
        fx_chain_batch(k, &b, each, arg);
    }
    return upto && k->next > upto;
}

struct db_client_t *
fx_client(const db_cluster_t *c, uint32_t batch, uint32_t max_inflight)
{
    db_client_opts_t co = {.cluster = c, .batch = batch, .max_inflight = max_inflight};
    db_client_t *cl = db_client_new(&co);
    if (!cl)
        bail("client: %s", lux_errmsg());
    return cl;
}

void
fx_notes_spread(struct db_client_t *cl, int n, const char *info, int sync_every)
{
    for (int i = 0; i < n; i++) {
        util_id_t job;
        util_id_random(&job);
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &job);
        DB_SET_INT(&e, idx, DB_F_IDX, i);
        db_event_set_info(&e, info);
        if (db_client_append(cl, &e))
            bail("append: %s", lux_errmsg());
        if (sync_every > 0 && i % sync_every == sync_every - 1 && db_client_sync(cl, 30000))
            bail("sync: %s", lux_errmsg());
    }
    if (db_client_sync(cl, 60000))
        bail("sync: %s", lux_errmsg());
}

uint64_t
fx_last_seq(const db_cluster_t *c, uint32_t shard, uint32_t index)
{
    char path[PATH_MAX];
    return tamper_last(db_cluster_replica_db(c, shard, index, path, sizeof path));
}

zsock_t *
fx_read_connect(const db_cluster_t *c, uint32_t shard, uint32_t index)
{
    char ep[DB_EP_MAX];
    db_cluster_replica_ep(c, shard, index, DB_EP_READ, ep, sizeof ep);
    zsock_t *rd = net_connect(ZMQ_DEALER, ep, NULL);
    if (!rd)
        bail("connect %s: %s", ep, lux_errmsg());
    zsock_set_rcvtimeo(rd, 60000);
    return rd;
}

zmsg_t *
fx_msg(int type, uint32_t shard, uint64_t epoch, const void *body, size_t n)
{
    zmsg_t *m = zmsg_new();
    zmsg_append(m, &(zframe_t *) {net_hdr_frame(type, shard, epoch)});
    if (body)
        zmsg_addmem(m, body, n);
    return m;
}

void
fx_read_send(zsock_t *rd, uint32_t shard, uint64_t epoch, uint64_t from, uint32_t max)
{
    uint8_t b[24];
    util_le64(b, 7);
    util_le64(b + 8, from);
    util_le32(b + 16, max);
    util_le32(b + 20, 0);
    zmsg_t *m = fx_msg(NET_READ, shard, epoch, b, sizeof b);
    if (zmsg_send(&m, rd))
        bail("cannot send a READ");
}

int
fx_read_answer(zsock_t *rd, uint64_t *last, uint64_t *top, int *code, char *text, size_t n)
{
    zmsg_t *m = zmsg_recv(rd);
    net_hdr_t h = {0};
    int rc = 0;
    if (!m || zmsg_size(m) < 2 || net_hdr_decode(&h, zmsg_first(m)))
        bail("no answer to the READ in time, or not a Lux message");
    if (h.type == NET_ERROR) {
        *code = 0;
        text[0] = 0;
        net_error_decode(zmsg_next(m), code, text, n);
        rc = 1;
    } else {
        zframe_t *rep = zmsg_next(m), *batch = zmsg_next(m);
        if (h.type != NET_READ_REP || !rep || zframe_size(rep) != 16 || !batch ||
            zframe_size(batch) < NET_BATCH_HDR)
            bail("a malformed answer to the READ (%s)", net_type_name(h.type));
        *last = util_rd64(zframe_data(rep) + 8);
        uint64_t first = util_rd64(zframe_data(batch));
        uint32_t count = util_rd32(zframe_data(batch) + 8);
        *top = count ? first + count - 1 : 0;
    }
    zmsg_destroy(&m);
    return rc;
}

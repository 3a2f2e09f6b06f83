/*  exec_members - the head's membership monitor: the nodes' heartbeats,
    their deaths and departures, and the table `lux status` reads
    (exec_members.h says what and why).
*/
#include "exec_members.h"
#include "../db/db_client.h"
#include "../db/db_event.h"
#include "../db/db_query.h"
#include "../net/net_pipe.h"
#include "../util/util_err.h"
#include "../util/util_log.h"
#include "../util/util_stall.h"
#include "../util/util_time.h"

#include <stdlib.h>
#include <string.h>

#define S_REFUSED_MS 1000 /* exec_members_ask: refused this long, none made: nobody listens */

typedef struct {
    util_id_t node;
    char *beat;         /* its last BEAT's text */
    int64_t seen_ms;    /* when (util_mono_ms) */
    int64_t stalled_ms; /* seen_ms moved on since, for time the monitor did not run */
    enum { M_ALIVE, M_DEAD, M_LEFT } state;
    bool from_log;      /* dead or left before the monitor started (s_rebuild): its
                           first beat refused is logged */
    bool unconfirmed;   /* alive in the log when the monitor started (s_rebuild), not
                           heard from since: listed with the log's resources and
                           "unconfirmed 1" (the global scheduler waits for it rather
                           than places on it or fails), dead after dead_ms */
    char why[600];      /* for dead and left */
} s_node_t;

#define S_ENDED_LISTED (EXEC_MEMBERS_MAX / 4) /* the log's dead and departed nodes that
                                 a monitor started again lists, the latest ended first */

/* A node the log says has died or left, read when the monitor started
   (s_rebuild) beyond the S_ENDED_LISTED latest, which its table lists:
   its beat is refused, not taken for a new node's first. */
typedef struct {
    util_id_t node;
    bool left;          /* node_left was its last word, else node_died */
    char *why;          /* the log's reason */
} s_gone_t;

typedef struct {
    zsock_t *pipe;
    db_cluster_t cluster;
    net_sec_t *sec;
    zsock_t *router;
    db_client_t *log;   /* made when there is something to append */
    int dead_ms;
    s_node_t *nodes;
    size_t n;
    s_gone_t *gone;     /* the log's ended nodes not in nodes (s_rebuild) */
    size_t ngone;
    util_stall_t stall; /* s_tick's lateness: the time the monitor did not run */
    util_id_t own;      /* the head's own node (OWN on the pipe): not judged by silence */
    bool has_own, judge_own; /* judge_own: LUX_TEST_MEMBERS_JUDGE_OWN=1 (t/6129) */
    int64_t stall_ms;   /* its last stop that long (0: none)... */
    int64_t stall_end_ms; /* ...found by the tick at this time (s_why_dead) */
} s_mon_t;

char *
exec_members_get(const char *text, const char *key, char *out, size_t n)
{
    size_t k = strlen(key);
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t) (end - p) : strlen(p);
        if (len > k && strncmp(p, key, k) == 0 && p[k] == ' ') {
            size_t v = len - k - 1;
            if (v >= n)
                v = n - 1;
            memcpy(out, p + k + 1, v);
            out[v] = '\0';
            return out;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

static s_node_t *
s_find(s_mon_t *m, const util_id_t *id)
{
    for (size_t i = 0; i < m->n; i++)
        if (util_id_eq(&m->nodes[i].node, id))
            return &m->nodes[i];
    return NULL;
}

/* Append a node event (node_died, node_left) and wait a little for it:
   a departure is answered once it is in the log. */
/* The log client, made at the first beat: a node beats once the chains
   serve, and the client must have its configuration before a stop, when
   the chain master (which stops at the signal) no longer answers. */
static int
s_log_open(s_mon_t *m)
{
    if (!m->log) {
        db_client_opts_t o = {.cluster = &m->cluster, .sec = m->sec, .timeout_ms = 10000};
        if (!(m->log = db_client_new(&o)))
            return util_err_ctx(LUX_EIO, "the membership monitor's log client");
    }
    return 0;
}

static int
s_append(s_mon_t *m, int kind, const s_node_t *nd, const char *info, int wait_ms)
{
    int rc = s_log_open(m);
    if (rc)
        return rc;
    char addr[128] = "";
    db_event_t e;
    memset(&e, 0, sizeof e);
    e.kind = (uint16_t) kind;
    DB_SET_ID(&e, node, DB_F_NODE, &nd->node);
    DB_SET_INT(&e, t_end, DB_F_T_END, util_now_ns()); /* when it happened: exec_node_log.c */
    if (exec_members_get(nd->beat, "address", addr, sizeof addr))
        db_event_set_name(&e, addr);
    db_event_set_info(&e, info);
    rc = db_client_append(m->log, &e);
    if (!rc && wait_ms > 0)
        rc = db_client_sync(m->log, wait_ms);
    else if (!rc)
        db_client_flush(m->log);
    return rc;
}

static void
s_reply(s_mon_t *m, zframe_t *who, const char *what, const char *text)
{
    zmsg_t *r = zmsg_new();
    zmsg_append(r, &who);
    zmsg_addstr(r, what);
    if (text)
        zmsg_addstr(r, text);
    zmsg_send(&r, m->router);
}

/* A table entry for node id, with its beat's text. NULL when out of
   memory or the table is full. */
static s_node_t *
s_add(s_mon_t *m, const util_id_t *id, const char *text)
{
    if (m->n == EXEC_MEMBERS_MAX)
        return NULL;
    s_node_t *v = realloc(m->nodes, (m->n + 1) * sizeof *v);
    char *beat = strdup(text);
    if (!v || !beat) {
        if (v)
            m->nodes = v;
        free(beat);
        return NULL;
    }
    m->nodes = v;
    s_node_t *nd = &m->nodes[m->n++];
    memset(nd, 0, sizeof *nd);
    nd->node = *id;
    nd->beat = beat;
    nd->seen_ms = util_mono_ms();
    return nd;
}

/* The reason of a node the log says has died or left (left), why: the
   log's. */
static void
s_why_ended(s_node_t *nd, bool left, const char *why)
{
    snprintf(nd->why, sizeof nd->why,
             "the log says it %s before the head's restart: %s (a node's ID never comes "
             "back; started again, it joins as a new node)",
             left ? "left" : "died", why ? why : "no reason recorded");
}

/* The beat of a node not in the table: when the log said it had died or
   left (s_rebuild), *out is its entry now, dead or left, so the beat is
   refused and `lux status` lists it; else *out is NULL (a new node).
   Without this a restarted head took such a node back, silently, under an
   ID the log says is dead (t/6109). LUX_ENOMEM when it cannot be kept. */
static int
s_from_gone(s_mon_t *m, const util_id_t *id, const char *text, s_node_t **out)
{
    *out = NULL;
    for (size_t i = 0; i < m->ngone; i++) {
        s_gone_t *g = &m->gone[i];
        if (!util_id_eq(&g->node, id))
            continue;
        s_node_t *nd = s_add(m, id, text);
        if (!nd)
            return LUX_ENOMEM;
        nd->state = g->left ? M_LEFT : M_DEAD;
        s_why_ended(nd, g->left, g->why);
        char hex[UTIL_ID_HEX];
        log_warn("node %.12s beats, but the log says it %s: refused", util_id_hex(id, hex),
                 g->left ? "left" : "died");
        free(g->why);
        m->gone[i] = m->gone[--m->ngone];
        *out = nd;
        return 0;
    }
    return 0;
}

static void
s_beat(s_mon_t *m, zframe_t *who, const char *text)
{
    char hex[64];
    util_id_t id;
    if (!exec_members_get(text, "node", hex, sizeof hex) || util_id_parse(&id, hex)) {
        s_reply(m, who, "ERR", "a BEAT without a valid node line");
        return;
    }
    s_node_t *nd = s_find(m, &id);
    if (!nd && s_from_gone(m, &id, text, &nd)) {
        s_reply(m, who, "ERR", m->n == EXEC_MEMBERS_MAX ? "the head keeps no more nodes"
                                                         : "out of memory");
        return;
    }
    if (nd && nd->state != M_ALIVE) {
        if (nd->from_log) { /* said once: it may beat every half second until it stops */
            nd->from_log = false;
            log_warn("node %.12s beats, but the log says it %s: refused", hex,
                     nd->state == M_LEFT ? "left" : "died");
        }
        s_reply(m, who, "DEAD", nd->why);
        return;
    }
    if (!nd) {
        if (!(nd = s_add(m, &id, text))) {
            s_reply(m, who, "ERR", m->n == EXEC_MEMBERS_MAX ? "the head keeps no more nodes"
                                                             : "out of memory");
            return;
        }
        char addr[128] = "?";
        exec_members_get(text, "address", addr, sizeof addr);
        log_info("node %.12s at %s beats", hex, addr);
    }
    free(nd->beat);
    nd->beat = strdup(text);
    nd->seen_ms = util_mono_ms();
    nd->stalled_ms = 0;
    nd->unconfirmed = false;
    s_reply(m, who, "OK", NULL);
    if (!m->log && s_log_open(m))
        log_error("%s", lux_errmsg());
}

static void
s_leave(s_mon_t *m, zframe_t *who, const char *hex)
{
    util_id_t id;
    s_node_t *nd = hex && util_id_parse(&id, hex) == 0 ? s_find(m, &id) : NULL;
    if (!nd) {
        s_reply(m, who, "ERR", "no such node (it never beat here)");
        return;
    }
    if (nd->state == M_ALIVE) {
        nd->state = M_LEFT;
        snprintf(nd->why, sizeof nd->why, "it left (lux stop)");
        log_info("node %.12s left", hex);
        if (s_append(m, DB_K_node_left, nd, nd->why, 5000)) {
            s_reply(m, who, "ERR", lux_errmsg());
            return;
        }
    }
    s_reply(m, who, "OK", NULL);
}

static void
s_status(s_mon_t *m, zframe_t *who)
{
    size_t cap = 1024, len = 0;
    char *text = malloc(cap);
    int64_t now = util_mono_ms();
    if (!text)
        return;
    text[0] = '\0';
    for (size_t i = 0; i < m->n; i++) {
        const s_node_t *nd = &m->nodes[i];
        size_t need = strlen(nd->beat) + strlen(nd->why) + 128;
        if (len + need >= cap) {
            char *t = realloc(text, cap = (len + need) * 2);
            if (!t)
                break;
            text = t;
        }
        len += (size_t) snprintf(text + len, cap - len, "%s%s%sstate %s\nage_ms %lld\n%s%s%s%s",
                                 i ? "\n" : "", nd->beat,
                                 nd->beat[0] && nd->beat[strlen(nd->beat) - 1] != '\n' ? "\n" : "",
                                 nd->state == M_ALIVE  ? "alive"
                                 : nd->state == M_DEAD ? "dead"
                                                       : "left",
                                 (long long) (now - nd->seen_ms),
                                 nd->state == M_ALIVE && nd->unconfirmed ? "unconfirmed 1\n" : "",
                                 nd->why[0] ? "why " : "", nd->why, nd->why[0] ? "\n" : "");
    }
    s_reply(m, who, "NODES", text);
    free(text);
}

/* The nodes of the log, read when the monitor starts. Those it says are
   alive (joined, neither dead nor left) are taken into the table as if
   they had just beaten, unconfirmed, with the resources and store the log
   says they have (the global scheduler waits for such a node rather
   than placing on it or failing a task only it could run: t/6151): one
   that does not beat within dead_ms is declared dead, "not heard from
   since the head started again", so a node that died or was stopped
   while the head was down (or the head's own node of an earlier run,
   killed with it) gets its node_died (t/6150). Those it
   says have died or left are in the table too, dead or left, as the
   monitor that logged the death had them (`lux status` lists them, the
   global scheduler's table has them: exec_table.c waits a while for a
   lately dead node that had a task's resources), silent since their end
   in the log plus dead_ms, with the resources and store the log says they
   had; beyond the S_ENDED_LISTED latest, they are kept aside (m->gone).
   Either way a beat from one (a node cut off, or stopped, that goes on
   after its death was logged) is refused as the monitor that logged the
   death refused it (s_beat, s_from_gone). Before, all were kept aside:
   after a head restart `lux status` did not list a node that had died
   (t/6138). The head's files are on this machine: the tails are read as
   `lux sql` reads them. */
static void
s_rebuild(s_mon_t *m)
{
    db_query_t *q = db_query_open(&m->cluster);
    sqlite3_stmt *st = NULL;
    if (!q || db_query_prepare(q, "SELECT node_id, address, state, why, resources, store_bytes, "
                               "ended FROM nodes ORDER BY ended DESC", &st, NULL)) {
        log_info("no nodes from the log (%s)", lux_errmsg()); /* a new cluster's files */
        db_query_close(&q);
        return;
    }
    int64_t now = util_mono_ms(), wall_ms = util_now_ns() / 1000000;
    int n = 0, listed = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *hex = (const char *) sqlite3_column_text(st, 0);
        const char *addr = (const char *) sqlite3_column_text(st, 1);
        const char *state = (const char *) sqlite3_column_text(st, 2);
        const char *why = (const char *) sqlite3_column_text(st, 3);
        const char *res = (const char *) sqlite3_column_text(st, 4);
        util_id_t id;
        if (!hex || !state || util_id_parse(&id, hex) || s_find(m, &id))
            continue;
        bool left = strcmp(state, "left") == 0;
        char text[1024];
        snprintf(text, sizeof text, "node %s\naddress %s\nrole from-log\nresources %s\n"
                 "store_bytes %lld\n", hex, addr ? addr : "?", res ? res : "",
                 (long long) sqlite3_column_int64(st, 5));
        s_node_t *nd = strcmp(state, "alive") != 0 && listed < S_ENDED_LISTED
                           ? s_add(m, &id, text) : NULL; /* NULL: kept aside */
        if (nd) {
            nd->state = left ? M_LEFT : M_DEAD;
            nd->from_log = true;
            s_why_ended(nd, left, why);
            /* silent since its end (its last beat was dead_ms before a death) */
            int64_t ended_ms = sqlite3_column_int64(st, 6) / 1000000;
            int64_t silent = (ended_ms > 0 && wall_ms > ended_ms ? wall_ms - ended_ms : 0) +
                             (left ? 0 : m->dead_ms);
            nd->seen_ms = now - silent;
            listed++;
            continue;
        }
        if (strcmp(state, "alive") != 0) {
            s_gone_t *g = realloc(m->gone, (m->ngone + 1) * sizeof *g);
            if (!g)
                break;
            m->gone = g;
            g = &m->gone[m->ngone++];
            g->node = id;
            g->left = left;
            g->why = why ? strdup(why) : NULL;
            continue;
        }
        /* alive: unconfirmed until its first beat, with the resources the
           log says it has (its beat's replace them) */
        if (!(nd = s_add(m, &id, text)))
            break;
        nd->seen_ms = now;
        nd->unconfirmed = true;
        n++;
    }
    sqlite3_finalize(st);
    db_query_close(&q);
    if (n)
        log_info("%d nodes the log says are alive: each is dead unless it beats within %d ms", n,
                 m->dead_ms);
    if (listed || m->ngone)
        log_info("%d nodes the log says have died or left, listed, and %zu more not: their "
                 "beats are refused", listed, m->ngone);
}

/* A dead node's reason: the silence counted and, where the monitor's
   own stop bears on it, that stop, so that no one reads "no heartbeat for
   2000 ms" after a minute's stop of the head and takes it for the whole
   story (t/6121). Two cases: its last beat was read before the stop (the
   stop was taken off its silence: the time since that read is both
   together), or read just after one (within a beat period: it may have
   waited in the socket through the stop, so it may be as old as the
   stop's start). No comma in it: `lux sql --csv` would quote it. */
static void
s_why_dead(s_mon_t *m, s_node_t *nd, int64_t now)
{
    int64_t counted = now - nd->seen_ms;
    int n = nd->unconfirmed
                ? snprintf(nd->why, sizeof nd->why,
                           "no heartbeat for %lld ms: not heard from since the head started "
                           "again (the log said it was alive when the head stopped; a node that "
                           "stopped or died while its head was down cannot log it; the head's "
                           "membership monitor declares a node dead after %d ms of silence)",
                           (long long) counted, m->dead_ms)
                : snprintf(nd->why, sizeof nd->why,
                           "no heartbeat for %lld ms (the head's membership monitor declares a "
                           "node dead after %d ms of silence)",
                           (long long) counted, m->dead_ms);
    if (n <= 0 || (size_t) n >= sizeof nd->why)
        return;
    if (nd->stalled_ms > 0)
        snprintf(nd->why + n, sizeof nd->why - (size_t) n,
                 "; the monitor itself did not run for %lld ms meanwhile (stopped or starved) "
                 "and did not count them: %lld ms since its last beat was read",
                 (long long) nd->stalled_ms, (long long) (counted + nd->stalled_ms));
    else if (m->stall_ms > 0 && nd->seen_ms >= m->stall_end_ms &&
             nd->seen_ms - m->stall_end_ms <= EXEC_MEMBERS_BEAT_MS)
        snprintf(nd->why + n, sizeof nd->why - (size_t) n,
                 "; the monitor itself did not run for %lld ms just before it read that beat "
                 "(stopped or starved): the beat may have waited through that stop and be up "
                 "to %lld ms old",
                 (long long) m->stall_ms, (long long) (now - m->stall_end_ms + m->stall_ms));
}

/* Nodes silent for dead_ms are dead: said in the log once. The time the
   monitor itself did not run (its process stopped, its machine paused or
   starved: its tick came more than a beat period late) is not counted as
   the nodes' silence: their beats meanwhile wait unread in its socket.
   Before, the first tick after a stop longer than dead_ms declared dead
   every node whose beat it had not read yet, and a node told it is dead
   goes (t/6121; t/6059 at load 22). A node that died meanwhile is
   declared dead_ms after the monitor runs again. The rule is
   util_stall.h's, shared with the chain master. */
static void
s_tick(s_mon_t *m)
{
    int64_t now = util_mono_ms();
    int64_t away = util_stall_tick(&m->stall, now);
    if (away) {
        m->stall_ms = away;
        m->stall_end_ms = now;
        log_warn("the membership monitor did not run for %lld ms (stopped or starved): the "
                 "nodes' silence meanwhile is not counted", (long long) away);
        for (size_t i = 0; i < m->n; i++)
            if (m->nodes[i].state == M_ALIVE)
                m->nodes[i].stalled_ms += util_stall_credit(&m->nodes[i].seen_ms, away, now);
    }
    for (size_t i = 0; i < m->n; i++) {
        s_node_t *nd = &m->nodes[i];
        if (nd->state != M_ALIVE || now - nd->seen_ms < m->dead_ms)
            continue;
        if (m->has_own && !m->judge_own && util_id_eq(&nd->node, &m->own))
            continue; /* the head's own: exec_members.h */
        nd->state = M_DEAD;
        s_why_dead(m, nd, now);
        char hex[UTIL_ID_HEX];
        log_warn("node %.12s died: %s", util_id_hex(&nd->node, hex), nd->why);
        if (s_append(m, DB_K_node_died, nd, nd->why, 0))
            log_error("node %.12s: node_died not appended: %s", hex, lux_errmsg());
    }
    if (m->log)
        db_client_poll(m->log, 0);
}

typedef struct {
    s_mon_t *m;
    char err[UTIL_ERRMSG_MAX]; /* set before the signal when the bind failed */
} s_start_t;

static void
s_actor(zsock_t *pipe, void *arg)
{
    s_start_t *st = arg;
    s_mon_t *m = st->m;
    char ep[DB_EP_MAX];
    util_log_name("members");
    m->pipe = pipe;
    db_cluster_members_ep(&m->cluster, true, ep, sizeof ep);
    if (!(m->router = net_bind(ZMQ_ROUTER, ep, m->sec, NULL, 0))) {
        snprintf(st->err, sizeof st->err, "%s", lux_errmsg());
        zsock_signal(pipe, 1);
        return;
    }
    zsock_signal(pipe, 0);
    s_rebuild(m);
    log_info("membership monitor at %s (a node is dead after %d ms of silence)", ep, m->dead_ms);
    zpoller_t *p = zpoller_new(pipe, m->router, NULL);
    zpoller_set_nonstop(p, true); /* it ends on $TERM, after its process's last LEAVE */
    int64_t next = util_mono_ms() + EXEC_MEMBERS_BEAT_MS / 2;
    while (true) {
        int64_t wait = next - util_mono_ms();
        void *which = zpoller_wait(p, wait > 0 ? (int) wait : 0);
        if (which == pipe) {
            zmsg_t *cmd = zmsg_recv(pipe);
            char *what = cmd ? zmsg_popstr(cmd) : NULL, *hex = cmd ? zmsg_popstr(cmd) : NULL;
            bool stop = !what || strcmp(what, "$TERM") == 0;
            if (what && strcmp(what, "OWN") == 0 && hex && util_id_parse(&m->own, hex) == 0)
                m->has_own = true;
            free(what);
            free(hex);
            zmsg_destroy(&cmd);
            if (stop)
                break;
        } else if (which == m->router) {
            zmsg_t *msg = zmsg_recv(m->router);
            zframe_t *who = msg ? zmsg_pop(msg) : NULL;
            char *what = msg ? zmsg_popstr(msg) : NULL;
            char *text = msg ? zmsg_popstr(msg) : NULL;
            if (who && what) {
                if (strcmp(what, "BEAT") == 0 && text)
                    s_beat(m, who, text);
                else if (strcmp(what, "LEAVE") == 0)
                    s_leave(m, who, text);
                else if (strcmp(what, "STATUS") == 0)
                    s_status(m, who);
                else
                    s_reply(m, who, "ERR", "unknown request");
                who = NULL; /* s_reply took it */
            }
            zframe_destroy(&who);
            free(what);
            free(text);
            zmsg_destroy(&msg);
        } else if (zpoller_terminated(p)) {
            break;
        }
        if (util_mono_ms() >= next) {
            s_tick(m);
            next = util_mono_ms() + EXEC_MEMBERS_BEAT_MS / 2;
        }
    }
    zpoller_destroy(&p);
    if (m->log)
        db_client_sync(m->log, 2000);
    db_client_destroy(&m->log);
    net_forget(ep);
    zsock_destroy(&m->router);
}

static void
s_mon_free(s_mon_t *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->nodes[i].beat);
    free(m->nodes);
    for (size_t i = 0; i < m->ngone; i++)
        free(m->gone[i].why);
    free(m->gone);
    free(m);
}

/* The thread owns m from its start, and frees it at its end. */
static void
s_run(zsock_t *pipe, void *arg)
{
    s_mon_t *m = ((s_start_t *) arg)->m;
    s_actor(pipe, arg);
    s_mon_free(m);
}

int
exec_members_dead_ms(void)
{
    const char *env = getenv("LUX_NODE_DEAD_MS");
    return env && atoi(env) > 0 ? atoi(env) : EXEC_MEMBERS_DEAD_MS;
}

zactor_t *
exec_members_new(const exec_members_opts_t *o)
{
    s_start_t st = {.m = calloc(1, sizeof(s_mon_t))};
    s_mon_t *m = st.m;
    if (!m) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    m->cluster = *o->cluster;
    m->sec = o->sec;
    /* s_tick runs every half beat; more than a beat late is a stall */
    util_stall_init(&m->stall, EXEC_MEMBERS_BEAT_MS / 2, EXEC_MEMBERS_BEAT_MS);
    m->dead_ms = o->dead_ms > 0 ? o->dead_ms : exec_members_dead_ms();
    const char *judge = getenv("LUX_TEST_MEMBERS_JUDGE_OWN");
    m->judge_own = judge && strcmp(judge, "1") == 0;
    /* zactor_new waits for the thread's signal: st lives until then */
    zactor_t *a = zactor_new(s_run, &st);
    if (!a) {
        util_err(LUX_EIO, "cannot start the membership monitor");
    } else if (st.err[0]) {
        util_err(LUX_EIO, "the membership monitor: %s", st.err);
        zactor_destroy(&a);
    }
    return a;
}
int
exec_members_ask(const db_cluster_t *c, net_sec_t *sec, const char *what, const char *text,
                 int timeout_ms, char **reply)
{
    char ep[DB_EP_MAX];
    *reply = NULL;
    db_cluster_members_ep(c, false, ep, sizeof ep);
    zsock_t *s = net_connect(ZMQ_DEALER, ep, sec);
    if (!s)
        return util_err_ctx(LUX_EIO, "the membership endpoint %s", ep);
    zsock_set_linger(s, 0);
    zmsg_t *m = zmsg_new();
    zmsg_addstr(m, what);
    if (text)
        zmsg_addstr(m, text);
    zmsg_send(&m, s);
    /* A head whose process is gone refuses the connection at once: no
       need to wait out timeout_ms for it (a node whose head was killed
       took 10 s more to stop, t/5022). Its attempts are watched; refused
       for S_REFUSED_MS with none made, nothing listens there. A head
       that is alive but slow, or unreachable, is waited for as before. */
    zsock_t *w = net_watch(s);
    zpoller_t *p = zpoller_new(s, w, NULL);
    zpoller_set_nonstop(p, true); /* a daemon stopping by a signal still leaves */
    int rc;
    int64_t t0 = util_mono_ms(), refused = 0;
    bool connected = false;
    void *got = NULL;
    for (;;) {
        int64_t now = util_mono_ms(), left = timeout_ms - (now - t0);
        if (!connected && refused) {
            if (now - refused >= S_REFUSED_MS)
                break;
            if (left > refused + S_REFUSED_MS - now)
                left = refused + S_REFUSED_MS - now;
        }
        if (left <= 0)
            break;
        if ((got = zpoller_wait(p, (int) left)) == s)
            break;
        if (got && got == w) {
            int ev = net_watch_read(w);
            connected |= ev > 0;
            if (ev < 0 && !connected && !refused)
                refused = util_mono_ms();
        }
    }
    if (got != s && !connected && refused) {
        rc = util_err(LUX_EDEAD,
                      "the head's membership endpoint %s refuses connections (for %lld ms: "
                      "nothing listens there, the head is gone)",
                      ep, (long long) (util_mono_ms() - refused));
    } else if (got != s) {
        rc = util_err(LUX_ETIMEDOUT,
                      "the head's membership endpoint %s did not answer within %d ms (is the "
                      "head running there, do this machine's keys match the cluster's, does a "
                      "firewall let port %s through?)",
                      ep, timeout_ms, strrchr(ep, ':') ? strrchr(ep, ':') + 1 : ep);
    } else {
        zmsg_t *r = zmsg_recv(s);
        char *head = r ? zmsg_popstr(r) : NULL;
        char *body = r ? zmsg_popstr(r) : NULL;
        *reply = body ? body : strdup("");
        if (head && (strcmp(head, "OK") == 0 || strcmp(head, "NODES") == 0))
            rc = 0;
        else if (head && strcmp(head, "DEAD") == 0)
            rc = util_err(LUX_EDEAD, "the head declared this node dead: %s", *reply);
        else
            rc = util_err(LUX_EIO, "the head's membership monitor refused %s: %s", what,
                          *reply);
        free(head);
        zmsg_destroy(&r);
    }
    zpoller_destroy(&p);
    zsock_destroy(&w);
    zsock_destroy(&s);
    return rc;
}

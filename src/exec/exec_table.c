/*  exec_table - the global scheduler on the head: its table of nodes and
    its decisions (issue 28, doc/DESIGN.md 7.2, doc/protocol.md 17.2).

    The table. The membership monitor knows every node from its
    heartbeats (resources total and free, workers, queue: exec_members.c);
    the head's node manager asks it for that table (STATUS) on a socket it
    keeps (a CURVE connection per read cost 4-29 ms on the loop at load
    14), and asks ahead: a table older than S_TABLE_MS is asked again at
    the next decision, which uses the one held meanwhile, up to
    S_TABLE_STALE_MS old (0b72c44: a spilled task waited on the head's loop
    for the monitor's answer every 100 ms before). A table is as old as
    its ask, whenever its answer was taken. Only a decision with no
    table, or one older than that, waits for the answer (nm->n_table_waits
    counts them: `lux status --json`, table_waits). Deaths count whatever
    the table's age: those in the log (exec_rplace.c reads node_died and
    node_left) and those the requester knows.

    The decision. NODE_PLACE's text (exec_rplace.c writes it) names the
    requester, the resources the task needs, the arguments' bytes it holds
    and the refs of the others, which the log places (exec_xfer.c); the
    requester is left out unless it is the only choice or asks to be
    weighed; exec_gsched.c weighs the rest. A task no node fits is said
    infeasible on a fresh table only (33f9110). Test hooks:
    LUX_TEST_TABLE_HOLD_MS (a table read serves this long: t/6093, t/6094),
    LUX_TEST_TABLE_STALE_MS (a held table serves up to this old, for
    S_TABLE_STALE_MS: t/6120, so that a decision uses a held table and
    asks ahead whatever the load) and LUX_TEST_TABLE_SLOW_MS
    (exec_rplace.c: the monitor's answer is taken late: t/6105).
    LUX_PLACE_RANDOM=1 places at random among the nodes that fit
    (benchmarks only; LUX_PLACE_SEED repeats the draws).
*/
#include "exec_table.h"
#include "exec_gsched.h"
#include "exec_members.h"
#include "exec_peer.h"
#include "exec_rplace.h"
#include "exec_xfer.h"
#include "../net/net_ep.h"
#include "../util/util_err.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TABLE_MS 100        /* the head refreshes its table of nodes this often, at most */
#define S_TABLE_STALE_MS 1000 /* ... using the one it has meanwhile, up to this old */
#define S_NOT_YET 1           /* s_table_take: no answer yet */
#define S_NODES_MAX 1024
#define S_ARGS_MAX 64         /* (node, bytes) pairs of a task's arguments weighed */
#define S_DEAD_WAIT EXEC_MEMBERS_DEAD_WAIT /* a task only dead nodes could run waits for
                                 one to come back until this many LUX_NODE_DEAD_MS after
                                 their last beat ... */
#define S_DEAD_POLL_MS 500    /* ... asking again this often (s_no_place) */

struct nm_table {
    net_sec_t *sec;       /* to ask the membership monitor (the watch too) */
    gs_node_t *nodes;     /* the head: the monitor's table, with what was placed since */
    size_t nnodes;
    int64_t table_ms;     /* when the table was read */
    int hold_ms;          /* test hook LUX_TEST_TABLE_HOLD_MS: a table read serves this long */
    int stale_ms;         /* a held table serves up to this old: S_TABLE_STALE_MS, or the
                             test hook LUX_TEST_TABLE_STALE_MS */
    zsock_t *tsock;       /* to the monitor, kept: the table asked without waiting */
    int64_t tasked_ms;    /* when the ask in flight on it went (0: none) */
    bool random;          /* LUX_PLACE_RANDOM=1: placed at random (benchmarks only) */
    gs_rand_t rng;        /* ... drawn from this (seed: LUX_PLACE_SEED, or said in the log) */
};

/* --- the table of nodes --------------------------------------------------------------------- */

/* The monitor's table (STATUS's answer) taken as the scheduler's, as old
   as asked_ms, when it was asked. */
static void
s_table_parse(nm_t *nm, char *text, int64_t asked_ms)
{
    nm_table_t *r = nm->table;
    size_t n = 0, cap = 8;
    gs_node_t *v = calloc(cap, sizeof *v);
    for (char *blk = text; v && blk && *blk && n < S_NODES_MAX;) {
        char *end = strstr(blk, "\n\n");
        if (end)
            end[1] = '\0';
        if (n == cap) {
            gs_node_t *p = realloc(v, 2 * cap * sizeof *v);
            if (!p)
                break;
            v = p;
            cap *= 2;
        }
        if (gs_node_from_text(&v[n], blk) == 0) {
            /* what was placed there since its beat still counts */
            for (size_t i = 0; i < r->nnodes; i++)
                if (util_id_eq(&r->nodes[i].id, &v[n].id))
                    v[n].placed = r->nodes[i].placed;
            n++;
        }
        blk = end ? end + 2 : NULL;
    }
    if (!v) {
        log_error("out of memory reading the table of nodes: the last one is used");
        return;
    }
    free(r->nodes);
    r->nodes = v;
    r->nnodes = n;
    r->table_ms = asked_ms;
}

int
nm_table_monitor_ask(nm_t *nm, zsock_t **sock)
{
    nm_table_t *r = nm->table;
    char keys[PATH_MAX + 32], ep[DB_EP_MAX];
    if (!r->sec &&
        !(r->sec = net_sec_load(db_cluster_path(&nm->cluster, keys, sizeof keys, "keys"))))
        return util_err_ctx(LUX_EAUTH, "asking the membership monitor");
    db_cluster_members_ep(&nm->cluster, false, ep, sizeof ep);
    if (!*sock && (*sock = net_connect(ZMQ_DEALER, ep, r->sec)))
        zsock_set_linger(*sock, 0);
    if (!*sock || zstr_send(*sock, "STATUS") != 0)
        return util_err_ctx(LUX_EIO, "the membership endpoint %s", ep);
    return 0;
}

/* The monitor's answer to the table's STATUS, when it came (wait_ms: how long
   to wait for it). 0, S_NOT_YET (1: not yet), or a code with the message;
   an ask unanswered for NM_TABLE_ASK_WAIT_MS is given up (its socket closed, so
   a late answer is dropped). The table taken is as old as the ask, not
   the taking: an answer asked before an idle spell and taken at the
   first decision after it is as old as the spell. Stamped with the time
   it was taken, it counted as fresh, and a "no" was said on it though a
   node had joined since the ask (t/6120). */
static int
s_table_take(nm_t *nm, int64_t now, int wait_ms)
{
    nm_table_t *r = nm->table;
    char ep[DB_EP_MAX];
    if (!r->tasked_ms || nm_rplace_slow(nm, r->tasked_ms, now, wait_ms)) /* test hook */
        return S_NOT_YET;
    if (wait_ms > 0) {
        zpoller_t *p = zpoller_new(r->tsock, NULL);
        zpoller_set_nonstop(p, true);
        zpoller_wait(p, wait_ms);
        zpoller_destroy(&p);
        now = util_mono_ms();
    }
    zmsg_t *m = zmsg_recv_nowait(r->tsock);
    if (!m) {
        if (now - r->tasked_ms < NM_TABLE_ASK_WAIT_MS)
            return S_NOT_YET;
        r->tasked_ms = 0;
        zsock_destroy(&r->tsock);
        db_cluster_members_ep(&nm->cluster, false, ep, sizeof ep);
        return util_err(LUX_ETIMEDOUT, "the global scheduler: the head's membership endpoint "
                        "%s did not answer STATUS within %d ms", ep, NM_TABLE_ASK_WAIT_MS);
    }
    int64_t asked_ms = r->tasked_ms;
    r->tasked_ms = 0;
    char *head = zmsg_popstr(m), *body = zmsg_popstr(m);
    int rc = 0;
    if (head && body && (strcmp(head, "OK") == 0 || strcmp(head, "NODES") == 0))
        s_table_parse(nm, body, asked_ms);
    else
        rc = util_err(LUX_EIO, "the global scheduler: the head's membership monitor refused "
                      "STATUS: %s", body ? body : "no reason given");
    free(head);
    free(body);
    zmsg_destroy(&m);
    return rc;
}

/* The table of nodes for a decision, on a socket kept to the monitor (not
   a new CURVE connection per read: 4-29 ms on the loop at load 14) and
   asked ahead: one older than S_TABLE_MS is asked again and serves, up to
   S_TABLE_STALE_MS, meanwhile; only an older one, or none, is waited for.
   With fresh, any older than S_TABLE_MS is waited for: a "no" is not said
   on a held table (nm_table_decide). A decision that waits is counted
   (nm->n_table_waits: `lux status --json`, table_waits; t/6105). */
static int
s_table(nm_t *nm, bool fresh)
{
    nm_table_t *r = nm->table;
    int64_t now = util_mono_ms();
    int rc = s_table_take(nm, now, 0);
    if (rc && rc != S_NOT_YET)
        log_warn("%s", lux_errmsg());
    if (r->nodes && now - r->table_ms < (r->hold_ms ? r->hold_ms : S_TABLE_MS))
        return 0;
    bool held = !fresh && r->nodes && now - r->table_ms < r->stale_ms;
    if (!r->tasked_ms && (rc = nm_table_monitor_ask(nm, &r->tsock)))
        return held ? 0 : rc;
    if (!r->tasked_ms)
        r->tasked_ms = now;
    if (held)
        return 0; /* the answer is read by a later decision */
    nm->n_table_waits++;
    while ((rc = s_table_take(nm, now, NM_TABLE_ASK_WAIT_MS / 4)) == S_NOT_YET)
        now = util_mono_ms();
    return r->nodes && now - r->table_ms < r->stale_ms ? 0 : rc;
}

/* --- the decision ----------------------------------------------------------------------------- */

/* The (node, bytes) pairs of a request's arguments into args
   [S_ARGS_MAX]: those it holds ("arg HEX BYTES" lines), then where the
   log says the others live ("ref HEX" lines). Returns how many. */
static size_t
s_args(nm_t *nm, const char *text, gs_arg_t *args)
{
    size_t nargs = 0;
    for (const char *p = strstr(text, "arg "); p && nargs < S_ARGS_MAX;
         p = strstr(p + 1, "\narg ")) {
        const char *q = p[0] == '\n' ? p + 5 : p + 4;
        char hex[40];
        unsigned long long bytes;
        if (sscanf(q, "%32s %llu", hex, &bytes) == 2 && !util_id_parse(&args[nargs].node, hex))
            args[nargs++].bytes = bytes;
    }
    for (const char *p = strstr(text, "\nref "); p && nargs < S_ARGS_MAX;
         p = strstr(p + 1, "\nref ")) {
        char hex[2 * LUX_REF_LEN + 2];
        lux_ref_t id;
        util_id_t at[8];
        uint64_t size = 0;
        if (sscanf(p + 5, "%41s", hex) != 1 || strlen(hex) != 2 * LUX_REF_LEN ||
            util_unhex(id.b, LUX_REF_LEN, hex))
            continue;
        int k = nm_xfer_where(nm, &id, at, 8, &size);
        for (int i = 0; i < k && nargs < S_ARGS_MAX; i++)
            args[nargs++] = (gs_arg_t) {.node = at[i], .bytes = size};
    }
    return nargs;
}

/* Deaths known here, in the log or to the requester ("dead HEX" lines of
   text), marked in the table whatever its age; and each dead node's
   silence now (silent_ms, for s_no_place), measured against the clock at
   each decision, never read from the table alone: a table held (its age
   not moving, LUX_TEST_TABLE_HOLD_MS in t/6093, t/6094) said the same
   silence at every ask, and a task waited for ever for a node that was
   never coming back. Two lower bounds, the larger taken: the table says
   dead with age_ms as of its ask (table_ms), so now - table_ms + age_ms;
   a death learned here at an instant (exec_rplace.c) had been silent for
   the monitor's dead time by then, so now - learned + dead time. */
static void
s_deaths(nm_t *nm, const char *text)
{
    nm_table_t *r = nm->table;
    char v[64];
    util_id_t gone;
    nm_rplace_from_log(nm);
    for (const char *p = strstr(text, "\ndead "); p; p = strstr(p + 1, "\ndead "))
        if (sscanf(p + 6, "%32s", v) == 1 && !util_id_parse(&gone, v))
            nm_rplace_dead(nm, &gone);
    int64_t now = util_mono_ms(), dead_ms = exec_members_dead_ms();
    for (size_t i = 0; i < r->nnodes; i++) {
        gs_node_t *x = &r->nodes[i];
        int64_t learned = 0;
        bool left = false, known = nm_rplace_dead_since(nm, &x->id, &learned, &left);
        if ((x->alive || x->unconfirmed) && known) {
            x->alive = x->unconfirmed = false;
            x->dead = !left; /* a node that left cleanly is not waited for */
        }
        x->silent_ms = 0;
        if (!x->dead)
            continue;
        if (x->said_dead)
            x->silent_ms = now - r->table_ms + x->age_ms;
        if (known && now - learned + dead_ms > x->silent_ms)
            x->silent_ms = now - learned + dead_ms;
    }
}

/* A node of the table for a task needing needs: the requester (from)
   only when nobody else can, unless it asks to be one of the places
   (self: a task it can run, placed for its arguments' sake). true with
   *pick, or false with why[nwhy]. */
static bool
s_pick(nm_table_t *r, const gs_res_t *needs, const gs_arg_t *args, size_t nargs,
       const util_id_t *from, bool self, size_t *pick, char *why, size_t nwhy)
{
    for (size_t i = 0; i < r->nnodes && !self; i++) {
        if (!util_id_eq(&r->nodes[i].id, from) || !r->nodes[i].alive)
            continue;
        r->nodes[i].alive = false;
        int rc = gs_place(r->nodes, r->nnodes, needs, args, nargs, pick, why, nwhy);
        r->nodes[i].alive = true;
        if (rc == GS_PLACED)
            return true;
        break;
    }
    return gs_place(r->nodes, r->nnodes, needs, args, nargs, pick, why, nwhy) == GS_PLACED;
}

/* The answer for a task that no alive node of a fresh table can run
   (why: gs_place's reason). When nodes that had its resources died less
   than S_DEAD_WAIT x LUX_NODE_DEAD_MS ago (silent for less, as measured
   at this decision by s_deaths), "wait MS REASON": the asker asks again
   in MS,
   for such a node may be restarting (all the nodes of a cluster killed
   and started again at once, as t/6091 does, left none alive for a
   moment, and every spilled task failed "no node of the cluster has
   ..."). Else "infeasible REASON", naming those dead nodes when there
   were some. */
static void
s_no_place(nm_t *nm, const gs_res_t *needs, const char *why, char *answer, size_t n)
{
    nm_table_t *r = nm->table;
    char list[240];
    int had = 0;
    int64_t wait_ms = (int64_t) S_DEAD_WAIT * exec_members_dead_ms();
    int young = gs_dead_had(r->nodes, r->nnodes, needs, wait_ms, &had, list, sizeof list);
    bool unconfirmed = strstr(list, "(unconfirmed") != NULL;
    if (young && unconfirmed) /* the head restarted: those alive in the log may yet beat */
        snprintf(answer, n, "wait %d %s; the nodes that had it: %s; waiting for their first "
                 "beat (up to LUX_NODE_DEAD_MS after the head's restart, then until %lld ms "
                 "after their last beat, %d x LUX_NODE_DEAD_MS, once declared dead)\n",
                 S_DEAD_POLL_MS, why, list, (long long) wait_ms, S_DEAD_WAIT);
    else if (young)
        snprintf(answer, n, "wait %d %s; the nodes that had it died: %s; waiting until %lld ms "
                 "after their last beat (%d x LUX_NODE_DEAD_MS) for one to come back\n",
                 S_DEAD_POLL_MS, why, list, (long long) wait_ms, S_DEAD_WAIT);
    else if (had)
        snprintf(answer, n, "infeasible %s; the nodes that had it died: %s, and none came "
                 "back within %lld ms of their last beats (%d x LUX_NODE_DEAD_MS)\n", why, list,
                 (long long) wait_ms, S_DEAD_WAIT);
    else
        snprintf(answer, n, "infeasible %s\n", why);
}

void
nm_table_decide(nm_t *nm, const char *text, char *answer, size_t n)
{
    nm_table_t *r = nm->table;
    char v[512], why[300];
    util_id_t from;
    gs_res_t needs;
    memset(&from, 0, sizeof from);
    if (exec_members_get(text, "from", v, sizeof v))
        util_id_parse(&from, v);
    if (!exec_members_get(text, "needs", v, sizeof v) || gs_res_parse(&needs, v, false)) {
        snprintf(answer, n, "infeasible its resources do not parse\n");
        return;
    }
    gs_arg_t args[S_ARGS_MAX];
    size_t nargs = s_args(nm, text, args), pick = 0;
    bool self = strstr(text, "\nself\n") != NULL;
    /* a "no" is said on a fresh table only, one asked at most S_TABLE_MS
       before this decision began: a node may have joined since the held
       one was asked (t/6061, t/6120), so a task no node of it fits is
       decided again on a fresh one. One this decision waited for was
       asked after it began: no second wait */
    int64_t began = util_mono_ms();
    for (bool fresh = false;; fresh = true) {
        if (s_table(nm, fresh)) {
            snprintf(answer, n, "infeasible the global scheduler cannot read the table of "
                     "nodes: %s\n", lux_errmsg());
            return;
        }
        s_deaths(nm, text);
        if (s_pick(r, &needs, args, nargs, &from, self, &pick, why, sizeof why))
            break;
        if (fresh || began - r->table_ms < S_TABLE_MS) {
            s_no_place(nm, &needs, why, answer, n);
            return;
        }
    }
    if (r->random) /* benchmarks only: any node that fits, not the one the bytes are on */
        gs_pick_random(r->nodes, r->nnodes, &needs, self ? NULL : &from, &r->rng, &pick);
    gs_node_t *x = &r->nodes[pick];
    char ep[DB_EP_MAX], hex[UTIL_ID_HEX];
    if (util_id_eq(&x->id, &from))
        snprintf(answer, n, "local\n");
    else if (!db_cluster_node_ep(&nm->cluster, x->address, ep, sizeof ep))
        snprintf(answer, n, "infeasible node %s has no endpoint\n", util_id_hex(&x->id, hex));
    else
        snprintf(answer, n, "node %s\nendpoint %s\n", util_id_hex(&x->id, hex), ep);
}

/* --- setup ------------------------------------------------------------------------------------ */

nm_table_t *
nm_table_new(nm_t *nm)
{
    nm_table_t *r = calloc(1, sizeof *r);
    if (!r) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    const char *hold = getenv("LUX_TEST_TABLE_HOLD_MS");
    r->hold_ms = hold && atoi(hold) > 0 ? atoi(hold) : 0;
    const char *stale = getenv("LUX_TEST_TABLE_STALE_MS");
    r->stale_ms = stale && atoi(stale) > 0 ? atoi(stale) : S_TABLE_STALE_MS;
    const char *rnd = getenv("LUX_PLACE_RANDOM");
    r->random = rnd && strcmp(rnd, "1") == 0;
    if (r->random && nm_peer_is_head(nm)) {
        const char *sd = getenv("LUX_PLACE_SEED");
        uint64_t seed = gs_rand_seed(&r->rng, sd ? strtoull(sd, NULL, 10) : 0);
        log_warn("the global scheduler places tasks at random (LUX_PLACE_RANDOM=1, for "
                 "benchmarks only), seed %llu: LUX_PLACE_SEED=%llu repeats its draws",
                 (unsigned long long) seed, (unsigned long long) seed);
    }
    return r;
}

void
nm_table_destroy(nm_table_t **self_p)
{
    nm_table_t *r = *self_p;
    if (!r)
        return;
    zsock_destroy(&r->tsock);
    net_sec_destroy(&r->sec);
    free(r->nodes);
    free(r);
    *self_p = NULL;
}

/*  exec_rmodule - modules fetched by content hash between nodes (issue 28,
    doc/DESIGN.md 7.2, doc/protocol.md 17.4).

    A task sent to another node (NODE_TASK, exec_remote.c) names its
    module by hash and carries no bytes. The node that takes it runs it
    only with a module it holds: the builtin one, or DIR/modules/HASH.so
    whose bytes still hash to HASH (checked once per hash, then
    remembered). Otherwise the whole NODE_TASK waits here (a copy) and
    the sender is asked for the bytes (NODE_MODULE_GET: the hash); it
    answers NODE_MODULE (the hash, the bytes or nothing, and why none)
    from its own modules directory, the bytes checked against the hash
    before they go. The bytes are checked again here, kept
    (exec_module_store, which also rewrites a changed file) and the
    NODE_TASK is taken.

    When the sender cannot give them (no answer within S_SENDER_MS: it
    died, before the ask or during it; no bytes; bytes that do not hash
    to the name, refused), the head is asked the same: it answers from
    its modules directory or else from the log, where every module a
    driver brought is recorded with its bytes (module_registered, DESIGN
    9); on the head itself the log is read at once. No good bytes from
    the head either, or no answer within S_FETCH_MS: the NODE_TASK is
    taken anyway, and its tasks fail as a worker finds no such module,
    the error naming the hash and the reason (DIR/modules/HASH.why,
    written here, read by exec_module_load); each reason is logged here.

    Test hooks (read once): LUX_TEST_MODULE_GATE=FILE: while FILE does
    not exist this node neither sends its asks nor answers those of
    others (they wait), so a test can kill a peer before or during a
    fetch; LUX_TEST_MODULE_BAD=1: this node answers with one byte of the
    module changed.
*/
#include "exec_rmodule.h"
#include "exec_module.h"
#include "../db/db_event.h"
#include "../db/db_query.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_HELD_MAX 64     /* NODE_TASKs waiting for modules at once */
#define S_KNOWN_MAX 64    /* module hashes checked here, remembered */
#define S_SENDER_MS 5000  /* the sender unanswering this long: the head is asked */
#define S_FETCH_MS 20000  /* the head unanswering this long: given up */
#define S_PARKED_MAX 16   /* asks of others held by the test gate */

enum { S_ASK_SENDER, S_ASK_HEAD };

struct nm_rmodule {
    nm_rmodule_run_fn *run;
    struct {
        zmsg_t *msg;      /* the NODE_TASK's frames (a copy) */
        zframe_t *rid;    /* its sender */
        uint8_t hash[16]; /* the module it waits for */
    } held[S_HELD_MAX];
    int nheld;
    struct {
        uint8_t hash[16];
        int64_t until_ms; /* given up on (no bytes can come) until then; 0: held here */
    } known[S_KNOWN_MAX];
    int nknown, known_next;
    /* the fetches under way, one per hash: whom they ask, since when */
    struct {
        uint8_t hash[16];
        int stage;        /* S_ASK_SENDER, S_ASK_HEAD */
        bool sent;        /* false: held by the test gate */
        zframe_t *rid;    /* the sender */
        int64_t since_ms;
    } asks[S_HELD_MAX];
    int nasks;
    char head_ep[DB_EP_MAX];
    db_query_t *q;        /* the head: the log, for modules' bytes */
    char *gate;           /* LUX_TEST_MODULE_GATE */
    bool bad;             /* LUX_TEST_MODULE_BAD=1: answers with a byte changed */
    struct {              /* others' asks held by the gate */
        uint8_t hash[16];
        zframe_t *rid;
        char ep[DB_EP_MAX];
    } parked[S_PARKED_MAX];
    int nparked;
};

static int
s_known(nm_rmodule_t *self, const uint8_t hash[16])
{
    for (int i = 0; i < self->nknown; i++)
        if (memcmp(self->known[i].hash, hash, 16) == 0)
            return i;
    return -1;
}

static void
s_know(nm_rmodule_t *self, const uint8_t hash[16], int64_t until_ms)
{
    int k = s_known(self, hash);
    if (k < 0)
        k = self->nknown < S_KNOWN_MAX ? self->nknown++ : self->known_next++ % S_KNOWN_MAX;
    memcpy(self->known[k].hash, hash, 16);
    self->known[k].until_ms = until_ms;
}

/* Whether this node can run hash's tasks now (or has given up on it). */
static bool
s_have(nm_t *nm, nm_rmodule_t *self, const uint8_t hash[16])
{
    if (memcmp(exec_module_hash(exec_module_builtin()), hash, 16) == 0)
        return true;
    char hex[33], path[PATH_MAX + 64];
    util_hex(hex, hash, 16);
    snprintf(path, sizeof path, "%s/modules/%s.so", nm->cluster.dir, hex);
    int k = s_known(self, hash);
    if (k >= 0 && self->known[k].until_ms && util_mono_ms() < self->known[k].until_ms)
        return true; /* given up on: its tasks fail as a worker finds no module */
    if (k >= 0 && !self->known[k].until_ms && util_exists(path))
        return true; /* checked before (a worker checks the bytes again as it loads) */
    uint8_t *bytes = NULL, got[16];
    size_t n = 0;
    if (!util_exists(path) || exec_module_read(path, &bytes, &n, got))
        return false;
    free(bytes);
    if (memcmp(got, hash, 16) != 0) {
        log_warn("module %s: %s does not match its hash (changed or damaged): asking for it "
                 "again", hex, path);
        return false;
    }
    s_know(self, hash, 0);
    return true;
}

/* Run again the held NODE_TASKs that waited for hash. */
static void
s_release(nm_t *nm, nm_rmodule_t *self, const uint8_t hash[16])
{
    for (int i = 0; i < self->nheld;) {
        if (memcmp(self->held[i].hash, hash, 16) != 0) {
            i++;
            continue;
        }
        zmsg_t *msg = self->held[i].msg;
        zframe_t *rid = self->held[i].rid;
        self->held[i] = self->held[--self->nheld];
        nm_peer_msg_t m = {.type = NET_NODE_TASK, .rid = rid, .msg = msg};
        self->run(nm, &m);
        zmsg_destroy(&msg);
        zframe_destroy(&rid);
    }
}

/* Whether the test gate holds asks and answers now. */
static bool
s_gated(nm_rmodule_t *self)
{
    return self->gate && !util_exists(self->gate);
}

/* The fetch of hash under way, or -1. */
static int
s_ask_find(nm_rmodule_t *self, const uint8_t hash[16])
{
    for (int i = 0; i < self->nasks; i++)
        if (memcmp(self->asks[i].hash, hash, 16) == 0)
            return i;
    return -1;
}

static void
s_ask_drop(nm_rmodule_t *self, int k)
{
    zframe_destroy(&self->asks[k].rid);
    self->asks[k] = self->asks[--self->nasks];
}

/* The module hash's bytes as the head's log records them (its
   module_registered event), into *bytes (malloc'd), checked against the
   hash. 0, or a code with the message. */
static int
s_from_log(nm_t *nm, db_query_t **q, const uint8_t hash[16], uint8_t **bytes, size_t *n)
{
    static const char sql[] = "SELECT body FROM event WHERE kind = ?1 AND fp = ?2 "
                              "AND length(body) > 0 LIMIT 1";
    char hex[33];
    util_hex(hex, hash, 16);
    if (!*q && !(*q = db_query_open(&nm->cluster)))
        return util_err_ctx(LUX_EIO, "module %s: reading the log", hex);
    sqlite3_stmt *st;
    int rc = db_query_prepare(*q, sql, &st, NULL);
    if (rc) {
        db_query_close(q); /* the tails may have changed: open again next time */
        return rc;
    }
    sqlite3_bind_int(st, 1, DB_K_module_registered);
    sqlite3_bind_blob(st, 2, hash, 16, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        size_t len = (size_t) sqlite3_column_bytes(st, 0);
        uint8_t got[16];
        util_blake(got, 16, sqlite3_column_blob(st, 0), len);
        if (memcmp(got, hash, 16) != 0)
            rc = util_err(LUX_ECORRUPT, "module %s: the bytes the log records do not match "
                          "its hash", hex);
        else if (!(*bytes = malloc(len ? len : 1)))
            rc = util_err(LUX_ENOMEM, "out of memory");
        else {
            memcpy(*bytes, sqlite3_column_blob(st, 0), len);
            *n = len;
        }
    } else if (step == SQLITE_DONE) {
        rc = util_err(LUX_ENOTFOUND, "module %s: the log records no such module", hex);
    } else {
        rc = util_err(LUX_ESQL, "module %s: reading the log: %s", hex,
                      sqlite3_errmsg(db_query_db(*q)));
        db_query_close(q);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Keep the module's bytes (checked against the hash) or give up on it,
   then run the NODE_TASKs that waited for it. why: NULL when bytes are
   the module; else why none (logged, naming the hash). */
static void
s_settle(nm_t *nm, nm_rmodule_t *self, const uint8_t hash[16], const uint8_t *bytes, size_t n,
         const char *from, const char *why)
{
    char hex[33], path[PATH_MAX + 64];
    util_hex(hex, hash, 16);
    int k = s_ask_find(self, hash);
    if (k >= 0)
        s_ask_drop(self, k);
    char note[PATH_MAX + 64], text[1100];
    snprintf(note, sizeof note, "%s/modules/%s.why", nm->cluster.dir, hex);
    if (why) {
        log_error("module %s: %s: its tasks fail", hex, why);
        s_know(self, hash, util_mono_ms() + S_FETCH_MS);
    } else if (exec_module_store(nm->cluster.dir, hash, bytes, n, path, sizeof path)) {
        snprintf(text, sizeof text, "fetched, but it cannot be kept: %s", lux_errmsg());
        why = text;
        log_error("module %s: %s", hex, why);
        s_know(self, hash, util_mono_ms() + S_FETCH_MS);
    } else {
        log_info("module %s: fetched from %s and kept (%zu bytes)", hex, from, n);
        s_know(self, hash, 0);
        unlink(note);
    }
    /* why its tasks fail, for the worker that finds no module to say
       (exec_module_load) */
    snprintf(path, sizeof path, "%s/modules", nm->cluster.dir);
    if (why && (util_private_dir(path) || util_write_file(note, why, strlen(why), 0600)))
        log_warn("module %s: cannot note why it is not here: %s", hex, lux_errmsg());
    s_release(nm, self, hash);
}

/* Send the ask k (to its stage's peer), unless the gate holds it. */
static void
s_ask_send(nm_t *nm, nm_rmodule_t *self, int k)
{
    char hex[33];
    util_hex(hex, self->asks[k].hash, 16);
    if (s_gated(self)) {
        log_warn("test hook LUX_TEST_MODULE_GATE: ask for module %s held until %s exists", hex,
                 self->gate);
        return;
    }
    self->asks[k].sent = true;
    self->asks[k].since_ms = util_mono_ms(); /* its wait starts as it goes */
    zmsg_t *ask = zmsg_new();
    zmsg_addmem(ask, self->asks[k].hash, 16);
    if (self->asks[k].stage == S_ASK_SENDER) {
        nm_peer_msg_t to = {.type = NET_NODE_MODULE_GET, .rid = self->asks[k].rid};
        nm_peer_reply(nm, &to, NET_NODE_MODULE_GET, &ask);
    } else if (nm_peer_send(nm, self->head_ep, NET_NODE_MODULE_GET, &ask)) {
        char why[600];
        snprintf(why, sizeof why, "the node that sent its task could not give it, and the "
                 "head (%s) cannot be asked: %s", self->head_ep, lux_errmsg());
        uint8_t hash[16];
        memcpy(hash, self->asks[k].hash, 16);
        s_settle(nm, self, hash, NULL, 0, NULL, why);
    }
}

/* The sender could not give hash (why): ask the head, whose log records
   every module; the head itself reads its log now. */
static void
s_ask_head(nm_t *nm, nm_rmodule_t *self, const uint8_t hash[16], const char *why)
{
    char hex[33], msg[900];
    util_hex(hex, hash, 16);
    int k = s_ask_find(self, hash);
    if (nm_peer_is_head(nm)) {
        uint8_t *bytes = NULL;
        size_t n = 0;
        if (s_from_log(nm, &self->q, hash, &bytes, &n)) {
            snprintf(msg, sizeof msg, "%s, and the log cannot give it: %s", why, lux_errmsg());
            s_settle(nm, self, hash, NULL, 0, NULL, msg);
        } else {
            log_warn("module %s: %s: taken from the log", hex, why);
            s_settle(nm, self, hash, bytes, n, "the log", NULL);
        }
        free(bytes);
        return;
    }
    if (k < 0)
        return;
    log_warn("module %s: %s: asking the head (%s), whose log keeps every module", hex, why,
             self->head_ep);
    self->asks[k].stage = S_ASK_HEAD;
    self->asks[k].since_ms = util_mono_ms();
    self->asks[k].sent = false;
    s_ask_send(nm, self, k);
}

bool
nm_rmodule_hold(nm_t *nm, nm_rmodule_t *self, nm_peer_msg_t *m)
{
    if (!self || !m->rid)
        return false;
    /* each task: its spec, its module's bytes (empty), a count of
       objects, and the objects (two frames each) */
    for (zframe_t *f = zmsg_first(m->msg); f;) {
        exec_spec_t s;
        util_rd_t rd;
        util_rd_init(&rd, zframe_data(f), zframe_size(f));
        zframe_t *mod = zmsg_next(m->msg), *cnt = mod ? zmsg_next(m->msg) : NULL;
        if (exec_spec_decode(&rd, &s) || !cnt || zframe_size(cnt) < 4)
            return false; /* s_on_task says what is wrong */
        if (!zframe_size(mod) && !s_have(nm, self, s.module)) {
            if (self->nheld == S_HELD_MAX)
                return false;
            int k = self->nheld++;
            self->held[k].msg = zmsg_dup(m->msg);
            self->held[k].rid = zframe_dup(m->rid);
            memcpy(self->held[k].hash, s.module, 16);
            if (s_ask_find(self, s.module) < 0) {
                char hex[33];
                util_hex(hex, s.module, 16);
                log_info("module %s: not held here, asked of the node that sent a task of it",
                         hex);
                int a = self->nasks++; /* nasks <= nheld <= S_HELD_MAX */
                memcpy(self->asks[a].hash, s.module, 16);
                self->asks[a].stage = S_ASK_SENDER;
                self->asks[a].sent = false;
                self->asks[a].rid = zframe_dup(m->rid);
                self->asks[a].since_ms = util_mono_ms();
                s_ask_send(nm, self, a);
            }
            return true;
        }
        const uint8_t *c = zframe_data(cnt);
        uint32_t nobj = (uint32_t) c[0] | (uint32_t) c[1] << 8 | (uint32_t) c[2] << 16 |
                        (uint32_t) c[3] << 24;
        for (uint32_t i = 0; i < 2 * nobj; i++)
            zmsg_next(m->msg);
        f = zmsg_next(m->msg);
    }
    return false;
}

/* Answer an ask for hash (from rid, or on our DEALER to ep): NODE_MODULE,
   the hash, the bytes (empty when they are not here), why not. The head
   answers from the log what its modules directory lacks. */
static void
s_answer(nm_t *nm, nm_rmodule_t *self, const uint8_t hash[16], zframe_t *rid, const char *ep)
{
    uint8_t got[16];
    char hex[33], path[PATH_MAX + 64], why[PATH_MAX + 200] = "";
    util_hex(hex, hash, 16);
    snprintf(path, sizeof path, "%s/modules/%s.so", nm->cluster.dir, hex);
    uint8_t *bytes = NULL;
    size_t n = 0;
    if (exec_module_read(path, &bytes, &n, got))
        snprintf(why, sizeof why, "%s", lux_errmsg());
    else if (memcmp(got, hash, 16) != 0)
        snprintf(why, sizeof why, "%s does not match its hash there", path);
    if (why[0]) {
        free(bytes);
        bytes = NULL;
        n = 0;
        if (self && nm_peer_is_head(nm)) {
            if (s_from_log(nm, &self->q, hash, &bytes, &n))
                snprintf(why + strlen(why), sizeof why - strlen(why), "; %s", lux_errmsg());
            else
                why[0] = '\0';
        }
    }
    if (self && self->bad && n) { /* test hook: one byte changed */
        log_warn("test hook LUX_TEST_MODULE_BAD: module %s answered with a byte changed", hex);
        bytes[n / 2] ^= 0x5a;
    }
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, hash, 16);
    zmsg_addmem(out, bytes, n);
    zmsg_addstr(out, why);
    free(bytes);
    if (rid) {
        nm_peer_msg_t to = {.type = NET_NODE_MODULE_GET, .rid = rid};
        nm_peer_reply(nm, &to, NET_NODE_MODULE, &out);
    } else if (ep && nm_peer_send(nm, ep, NET_NODE_MODULE, &out))
        log_warn("module %s: cannot answer node %s: %s", hex, ep, lux_errmsg());
    zmsg_destroy(&out);
}

/* NODE_MODULE_GET (the sender of a task, or the head): the hash. */
static void
s_on_get(nm_t *nm, nm_peer_msg_t *m)
{
    nm_rmodule_t *self = nm->rmodule;
    zframe_t *h = zmsg_first(m->msg);
    if (!h || zframe_size(h) != 16) {
        nm_complain(nm, "NODE_MODULE_GET without a module hash");
        return;
    }
    if (self && s_gated(self)) { /* test hook: answered when the gate opens */
        if (self->nparked == S_PARKED_MAX)
            return;
        int k = self->nparked++;
        memcpy(self->parked[k].hash, zframe_data(h), 16);
        self->parked[k].rid = m->rid ? zframe_dup(m->rid) : NULL;
        snprintf(self->parked[k].ep, sizeof self->parked[k].ep, "%s", m->ep ? m->ep : "");
        log_warn("test hook LUX_TEST_MODULE_GATE: an ask for a module held until %s exists",
                 self->gate);
        return;
    }
    s_answer(nm, self, zframe_data(h), m->rid, m->ep);
}

/* NODE_MODULE (the node that asked): the hash, the bytes, why none. An
   answer from the head comes on our DEALER to it (m->ep is the head's). */
static void
s_on_module(nm_t *nm, nm_peer_msg_t *m)
{
    nm_rmodule_t *self = nm->rmodule;
    zframe_t *h = zmsg_first(m->msg), *b = h ? zmsg_next(m->msg) : NULL;
    zframe_t *w = b ? zmsg_next(m->msg) : NULL;
    if (!self || !h || !b || zframe_size(h) != 16) {
        nm_complain(nm, "NODE_MODULE: malformed");
        return;
    }
    uint8_t hash[16], got[16];
    memcpy(hash, zframe_data(h), 16);
    bool head = !m->rid && m->ep && strcmp(m->ep, self->head_ep) == 0;
    int k = s_ask_find(self, hash);
    char why[900] = "";
    util_blake(got, 16, zframe_data(b), zframe_size(b));
    if (!zframe_size(b)) {
        char *w_ = w ? zframe_strdup(w) : NULL;
        snprintf(why, sizeof why, "%s does not have it (%s)",
                 head ? "the head" : "the node that sent its task",
                 w_ && *w_ ? w_ : "no reason given");
        free(w_);
    } else if (memcmp(got, hash, 16) != 0) {
        snprintf(why, sizeof why, "the bytes %s sent do not match the hash: refused",
                 head ? "the head" : "the node that sent its task");
    }
    if (!why[0]) {
        s_settle(nm, self, hash, zframe_data(b), zframe_size(b),
                 head ? "the head" : "the node that sent its task", NULL);
    } else if (k >= 0 && self->asks[k].stage == S_ASK_SENDER && !head) {
        s_ask_head(nm, self, hash, why);
    } else if (k >= 0 && (head || self->asks[k].stage == S_ASK_SENDER)) {
        s_settle(nm, self, hash, NULL, 0, NULL, why);
    } else {
        char hex[33];
        util_hex(hex, hash, 16);
        log_warn("module %s: a late answer ignored: %s", hex, why);
    }
}

void
nm_rmodule_tick(nm_t *nm, nm_rmodule_t *self)
{
    if (!self)
        return;
    if (!s_gated(self)) {
        for (int i = 0; i < self->nasks; i++)
            if (!self->asks[i].sent)
                s_ask_send(nm, self, i);
        while (self->nparked > 0) {
            int k = --self->nparked;
            s_answer(nm, self, self->parked[k].hash, self->parked[k].rid,
                     self->parked[k].ep[0] ? self->parked[k].ep : NULL);
            zframe_destroy(&self->parked[k].rid);
        }
    }
    int64_t now = util_mono_ms();
    for (int i = 0; i < self->nasks; i++) {
        if (!self->asks[i].sent)
            continue;
        int64_t waited = now - self->asks[i].since_ms;
        uint8_t hash[16];
        char why[300];
        memcpy(hash, self->asks[i].hash, 16);
        if (self->asks[i].stage == S_ASK_SENDER && waited >= S_SENDER_MS) {
            snprintf(why, sizeof why, "no answer from the node that sent its task in %d s (is "
                     "it dead?)", S_SENDER_MS / 1000);
            s_ask_head(nm, self, hash, why);
            return; /* the list changed: the rest next tick */
        }
        if (self->asks[i].stage == S_ASK_HEAD && waited >= S_FETCH_MS) {
            snprintf(why, sizeof why, "neither the node that sent its task nor the head (%s, "
                     "in %d s) gave it", self->head_ep, S_FETCH_MS / 1000);
            s_settle(nm, self, hash, NULL, 0, NULL, why);
            return;
        }
    }
}

nm_rmodule_t *
nm_rmodule_new(nm_t *nm, nm_rmodule_run_fn *run)
{
    nm_rmodule_t *self = calloc(1, sizeof *self);
    if (!self) {
        util_err(LUX_ENOMEM, "out of memory");
        return NULL;
    }
    self->run = run;
    nm_peer_head_ep(nm, self->head_ep, sizeof self->head_ep);
    const char *gate = getenv("LUX_TEST_MODULE_GATE");
    const char *bad = getenv("LUX_TEST_MODULE_BAD");
    self->bad = bad && strcmp(bad, "1") == 0;
    if ((gate && *gate && !(self->gate = strdup(gate))) ||
        nm_peer_on(nm, NET_NODE_MODULE_GET, s_on_get) ||
        nm_peer_on(nm, NET_NODE_MODULE, s_on_module)) {
        free(self->gate);
        free(self);
        return NULL;
    }
    nm->rmodule = self;
    return self;
}

void
nm_rmodule_destroy(nm_rmodule_t **self_p)
{
    nm_rmodule_t *self = *self_p;
    if (!self)
        return;
    for (int i = 0; i < self->nheld; i++) {
        zmsg_destroy(&self->held[i].msg);
        zframe_destroy(&self->held[i].rid);
    }
    for (int i = 0; i < self->nasks; i++)
        zframe_destroy(&self->asks[i].rid);
    for (int i = 0; i < self->nparked; i++)
        zframe_destroy(&self->parked[i].rid);
    db_query_close(&self->q);
    free(self->gate);
    free(self);
    *self_p = NULL;
}

int
nm_rmodule_from_log(nm_t *nm, const uint8_t hash[16])
{
    char hex[33], path[PATH_MAX + 64];
    util_hex(hex, hash, 16);
    snprintf(path, sizeof path, "%s/modules/%s.so", nm->cluster.dir, hex);
    if (memcmp(exec_module_hash(exec_module_builtin()), hash, 16) == 0 || util_exists(path) ||
        !nm_peer_is_head(nm))
        return 0;
    db_query_t *q = NULL;
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = s_from_log(nm, &q, hash, &bytes, &n);
    db_query_close(&q);
    if (!rc && (rc = exec_module_store(nm->cluster.dir, hash, bytes, n, path, sizeof path)))
        util_err_ctx(rc, "module %s: writing it", hex);
    if (!rc)
        log_info("module %s: written from the log for a task no node sent (%zu bytes)", hex, n);
    free(bytes);
    return rc;
}

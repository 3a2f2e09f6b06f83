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
    NODE_TASK is taken. Bytes that do not hash to the name, no bytes, or
    no answer within S_FETCH_MS: the NODE_TASK is taken anyway, and its
    tasks fail as a worker finds no such module, the error naming the
    hash; the reason is logged here.
*/
#include "exec_rmodule.h"
#include "exec_module.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"
#include "../util/util_log.h"
#include "../util/util_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_HELD_MAX 64     /* NODE_TASKs waiting for modules at once */
#define S_KNOWN_MAX 64    /* module hashes checked here, remembered */
#define S_FETCH_MS 20000  /* an ask unanswered this long gives up */

struct nm_rmodule {
    nm_rmodule_run_fn *run;
    struct {
        zmsg_t *msg;      /* the NODE_TASK's frames (a copy) */
        zframe_t *rid;    /* its sender */
        uint8_t hash[16]; /* the module it waits for */
        int64_t since_ms;
    } held[S_HELD_MAX];
    int nheld;
    struct {
        uint8_t hash[16];
        int64_t until_ms; /* given up on (no bytes can come) until then; 0: held here */
    } known[S_KNOWN_MAX];
    int nknown, known_next;
};

static nm_rmodule_t *s_self; /* the handlers' (one node manager per process) */

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
            bool asked = false;
            for (int i = 0; i < self->nheld; i++)
                asked = asked || memcmp(self->held[i].hash, s.module, 16) == 0;
            int k = self->nheld++;
            self->held[k].msg = zmsg_dup(m->msg);
            self->held[k].rid = zframe_dup(m->rid);
            memcpy(self->held[k].hash, s.module, 16);
            self->held[k].since_ms = util_mono_ms();
            if (!asked) {
                char hex[33];
                util_hex(hex, s.module, 16);
                log_info("module %s: not held here, asked of the node that sent a task of it",
                         hex);
                zmsg_t *ask = zmsg_new();
                zmsg_addmem(ask, s.module, 16);
                nm_peer_reply(nm, m, NET_NODE_MODULE_GET, &ask);
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

/* NODE_MODULE_GET (the sender of a task): the hash; answered NODE_MODULE:
   the hash, the bytes (empty when they are not here), why not. */
static void
s_on_get(nm_t *nm, nm_peer_msg_t *m)
{
    zframe_t *h = zmsg_first(m->msg);
    if (!h || zframe_size(h) != 16) {
        nm_complain(nm, "NODE_MODULE_GET without a module hash");
        return;
    }
    uint8_t hash[16], got[16];
    memcpy(hash, zframe_data(h), 16);
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
    }
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, hash, 16);
    zmsg_addmem(out, bytes, n);
    zmsg_addstr(out, why);
    free(bytes);
    if (m->rid)
        nm_peer_reply(nm, m, NET_NODE_MODULE, &out);
    else if (m->ep && nm_peer_send(nm, m->ep, NET_NODE_MODULE, &out))
        log_warn("module %s: cannot answer node %s: %s", hex, m->ep, lux_errmsg());
    zmsg_destroy(&out);
}

/* NODE_MODULE (the node that asked): the hash, the bytes, why none. */
static void
s_on_module(nm_t *nm, nm_peer_msg_t *m)
{
    nm_rmodule_t *self = s_self;
    zframe_t *h = zmsg_first(m->msg), *b = h ? zmsg_next(m->msg) : NULL;
    zframe_t *w = b ? zmsg_next(m->msg) : NULL;
    if (!self || !h || !b || zframe_size(h) != 16) {
        nm_complain(nm, "NODE_MODULE: malformed");
        return;
    }
    uint8_t hash[16], got[16];
    memcpy(hash, zframe_data(h), 16);
    char hex[33], path[PATH_MAX + 64];
    util_hex(hex, hash, 16);
    util_blake(got, 16, zframe_data(b), zframe_size(b));
    if (!zframe_size(b)) {
        char *why = w ? zframe_strdup(w) : NULL;
        log_error("module %s: the node that sent its task does not have it either (%s): its "
                  "tasks fail", hex, why && *why ? why : "no reason given");
        free(why);
        s_know(self, hash, util_mono_ms() + S_FETCH_MS);
    } else if (memcmp(got, hash, 16) != 0) {
        log_error("module %s: the bytes another node sent do not match the hash: refused, its "
                  "tasks fail", hex);
        s_know(self, hash, util_mono_ms() + S_FETCH_MS);
    } else if (exec_module_store(nm->cluster.dir, hash, zframe_data(b), zframe_size(b), path,
                                 sizeof path)) {
        log_error("module %s: cannot keep it: %s", hex, lux_errmsg());
        s_know(self, hash, util_mono_ms() + S_FETCH_MS);
    } else {
        log_info("module %s: fetched from another node and kept (%zu bytes)", hex,
                 zframe_size(b));
        s_know(self, hash, 0);
    }
    s_release(nm, self, hash);
}

void
nm_rmodule_tick(nm_t *nm, nm_rmodule_t *self)
{
    if (!self)
        return;
    int64_t now = util_mono_ms();
    for (int i = 0; i < self->nheld; i++)
        if (now - self->held[i].since_ms >= S_FETCH_MS) {
            uint8_t hash[16];
            char hex[33];
            memcpy(hash, self->held[i].hash, 16);
            util_hex(hex, hash, 16);
            log_error("module %s: no answer from the node that sent its task in %d s: its "
                      "tasks fail", hex, S_FETCH_MS / 1000);
            s_know(self, hash, now + S_FETCH_MS);
            s_release(nm, self, hash);
            return; /* the list changed: the rest next tick */
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
    if (nm_peer_on(nm, NET_NODE_MODULE_GET, s_on_get) ||
        nm_peer_on(nm, NET_NODE_MODULE, s_on_module)) {
        free(self);
        return NULL;
    }
    s_self = self;
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
    if (s_self == self)
        s_self = NULL;
    free(self);
    *self_p = NULL;
}

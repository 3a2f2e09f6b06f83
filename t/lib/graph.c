/*  graph - random task graphs (see graph.h). */
#include "graph.h"
#include "fx.h"
#include "../tap.h"
#include "hx.h"
#include "util/util_err.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

static char s_ticks[1100]; /* the file the test module's tasks tick in */

#define S_CHECK_MS 120000 /* graph_check fails after this long with no progress */
#define S_SLICE_MS 1000    /* how often a waiting get looks for progress */

static int64_t
s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t
graph_rand(uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return *rng >> 33;
}

bool
graph_says(const char *m, const char *what, const lux_ref_t *r, const char *say)
{
    char hex[LUX_REF_LEN * 2 + 1], pat[200];
    lux_ref_hex(r, hex);
    snprintf(pat, sizeof pat, "%s %s", hex, say);
    if (strstr(m, pat))
        return true;
    diag("no '%s' (%s) in: %s", pat, what, m);
    return false;
}

int64_t
graph_mix(const int64_t *v, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s = (s + v[i]) % GRAPH_M;
    return (s * 3 + 1) % GRAPH_M;
}

/* A random int-valued output of an earlier node (or -1 when none). */
static int
s_pick(graph_t *g, int upto, int *out)
{
    for (int tries = 0; tries < 8 && upto > 0; tries++) {
        int i = (int) (graph_rand(&g->rng) % (uint64_t) upto);
        /* lean towards recent nodes: deeper graphs */
        if (graph_rand(&g->rng) % 2)
            i = upto - 1 - (int) (graph_rand(&g->rng) % (uint64_t) (upto < 8 ? upto : 8));
        if (!g->nodes[i].blob) {
            *out = (int) (graph_rand(&g->rng) % (uint64_t) g->nodes[i].nout);
            return i;
        }
    }
    return -1;
}

/* Byte i (8 and up) of the large value made from seed; its first 8 are seed. */
static uint8_t
s_byte(int64_t seed, int64_t i)
{
    return (uint8_t) (seed * 31 + i);
}

static void
s_pattern(uint8_t *p, int64_t seed, int64_t n)
{
    memcpy(p, &seed, 8);
    for (int64_t i = 8; i < n; i++)
        p[i] = s_byte(seed, i);
}

int
graph_call_big(lux_t *lx, int64_t seed, int64_t n, lux_ref_t *ref)
{
    return lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&n, 8)}, 1, ref);
}

bool
graph_big_ok(const lux_val_t *v, int64_t seed, int64_t n)
{
    const uint8_t *p = v->data;
    int64_t got;
    if ((int64_t) v->size != n || n < 8)
        return false;
    memcpy(&got, p, 8);
    for (int64_t i = 8; got == seed && i < n; i++)
        if (p[i] != s_byte(seed, i))
            return false;
    return got == seed;
}

int
graph_submit(lux_t *lx, graph_t *g, int n, uint64_t seed, int64_t max_blob)
{
    return graph_submit_opts(lx, g, n, seed, max_blob, NULL);
}

int
graph_call_int(lux_t *lx, const lux_opts_t *opts, int fn, int n, const lux_arg_t *args,
               const int64_t *vals, lux_ref_t *refs, int64_t *want)
{
    if (fn == 0) {
        want[0] = graph_mix(vals, n);
        return lux_call_opts(lx, opts, "t_mix", n, args, 1, refs);
    }
    if (fn == 1) {
        want[0] = (vals[0] + vals[1]) % GRAPH_M;
        want[1] = ((vals[0] - vals[1]) % GRAPH_M + GRAPH_M) % GRAPH_M;
        return lux_call_opts(lx, opts, "t_split", 2, args, 2, refs);
    }
    int64_t m[8], s = 0;
    for (int k = 0; k < n; k++) {
        m[k] = graph_mix(&vals[k], 1);
        s = (s + m[k]) % GRAPH_M;
    }
    for (int k = 0; k + 1 < n; k++)
        s = (s + graph_mix(&m[k], 2)) % GRAPH_M;
    want[0] = s;
    return lux_call_opts(lx, opts, "t_nested", n, args, 1, refs);
}

int
graph_submit_opts(lux_t *lx, graph_t *g, int n, uint64_t seed, int64_t max_blob,
                  const lux_opts_t *opts)
{
    memset(g, 0, sizeof *g);
    g->nodes = calloc((size_t) n, sizeof *g->nodes);
    g->rng = seed;
    int rc = 0;
    int blobs[4096], nblobs = 0;
    for (int i = 0; i < n && !rc; i++) {
        graph_node_t *x = &g->nodes[i];
        int kind = (int) (graph_rand(&g->rng) % 100);
        kind = kind < 10 ? G_PUT : kind < 14 ? G_BIGPUT : kind < 55 ? G_MIX : kind < 70 ? G_SPLIT
               : kind < 80 ? G_BIG : kind < 92 ? G_CHECK : G_NESTED;
        if (kind == G_CHECK && nblobs == 0)
            kind = G_MIX;
        x->kind = kind;
        x->nout = kind == G_SPLIT ? 2 : 1;
        g->counts[kind]++;
        lux_arg_t args[8];
        int64_t vals[8], lits[8];
        int na = 0;
        switch (kind) {
        case G_PUT: {
            int64_t v = (int64_t) (graph_rand(&g->rng) % GRAPH_M);
            x->want[0] = v;
            rc = lux_put(lx, &v, 8, &x->ref[0]);
            break;
        }
        case G_BIGPUT:
        case G_BIG: {
            x->seed = (int64_t) (graph_rand(&g->rng) % GRAPH_M);
            x->size = 70000 + (int64_t) (graph_rand(&g->rng) % (uint64_t) max_blob);
            x->want[0] = (x->seed + x->size) % GRAPH_M;
            x->blob = true;
            if (nblobs < 4096)
                blobs[nblobs++] = i;
            if (kind == G_BIGPUT) {
                uint8_t *p = malloc((size_t) x->size);
                s_pattern(p, x->seed, x->size);
                rc = lux_put(lx, p, (size_t) x->size, &x->ref[0]);
                free(p);
            } else {
                rc = lux_call_opts(lx, opts, "t_big", 2,
                                   (lux_arg_t[]) {LUX_VAL(&x->seed, 8), LUX_VAL(&x->size, 8)},
                                   1, x->ref);
            }
            break;
        }
        case G_CHECK: {
            graph_node_t *b = &g->nodes[blobs[graph_rand(&g->rng) % (uint64_t) nblobs]];
            x->want[0] = b->want[0];
            x->in[x->nin++] = (int) (b - g->nodes);
            rc = lux_call_opts(lx, opts, "t_check", 1, (lux_arg_t[]) {LUX_REF(b->ref[0])}, 1,
                               x->ref);
            break;
        }
        case G_MIX:
        case G_SPLIT:
        case G_NESTED: {
            int want_args = kind == G_SPLIT ? 2 : (int) (graph_rand(&g->rng) % 5) + (kind == G_NESTED);
            for (na = 0; na < want_args; na++) {
                int k, j = s_pick(g, i, &k);
                x->in[x->nin++] = -1;
                if (j < 0 || graph_rand(&g->rng) % 4 == 0) { /* a value */
                    lits[na] = (int64_t) (graph_rand(&g->rng) % GRAPH_M);
                    vals[na] = lits[na];
                    args[na] = LUX_VAL(&lits[na], 8);
                } else { /* a ref */
                    x->in[x->nin - 1] = j;
                    vals[na] = g->nodes[j].want[k];
                    args[na] = LUX_REF(g->nodes[j].ref[k]);
                }
            }
            rc = graph_call_int(lx, opts, kind == G_MIX ? 0 : kind == G_SPLIT ? 1 : 2, na, args,
                                vals, x->ref, x->want);
            break;
        }
        }
        g->n = i + 1;
    }
    return rc;
}

void
graph_ticks_start(void)
{
    /* a cluster started before this program (t/6091) was given the file
       in its environment, which its workers inherit */
    const char *given = getenv("LUX_T_TICKS");
    if (given && *given)
        snprintf(s_ticks, sizeof s_ticks, "%s", given);
    else
        snprintf(s_ticks, sizeof s_ticks, "%s/ticks", tap_tmpdir());
    setenv("LUX_T_TICKS", s_ticks, 1);
}

int64_t
graph_ticks(void)
{
    struct stat st;
    return s_ticks[0] && stat(s_ticks, &st) == 0 ? (int64_t) st.st_size : 0;
}

/* lux_get of ref, waiting as long as the graph makes progress: until
   *last (the last progress seen, moved here) is S_CHECK_MS ago. Progress
   is a task of the graph finishing (graph_ticks) or a get succeeding, so
   that a slow machine makes a round slower, not failed, while a hang
   still ends it. Once a get has timed out, *last is -1: the gets after it
   do not wait (a hang is one stall, not one after another). */
static int
s_get(lux_t *lx, const lux_ref_t *ref, lux_val_t *v, int64_t *last, int64_t *ticks)
{
    for (;;) {
        int64_t left = *last < 0 ? 0 : *last + S_CHECK_MS - s_now_ms();
        int rc = lux_get(lx, ref, v, left <= 0 ? 0 : left < S_SLICE_MS ? (int) left : S_SLICE_MS);
        if (rc != LUX_ETIMEDOUT) {
            if (*last >= 0)
                *last = s_now_ms();
            return rc;
        }
        if (left <= 0) {
            *last = -1;
            return rc;
        }
        int64_t t = graph_ticks();
        if (t != *ticks) {
            *ticks = t;
            *last = s_now_ms();
        }
    }
}

int
graph_check(lux_t *lx, graph_t *g, char *why, size_t wn)
{
    int bad = 0;
    int64_t last = s_now_ms(), ticks = graph_ticks();
    why[0] = '\0';
    /* in a random order, so gets interleave with evictions */
    int *order = malloc((size_t) g->n * sizeof *order);
    for (int i = 0; i < g->n; i++)
        order[i] = i;
    for (int i = g->n - 1; i > 0; i--) {
        int j = (int) (graph_rand(&g->rng) % (uint64_t) (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int oi = 0; oi < g->n; oi++) {
        graph_node_t *x = &g->nodes[order[oi]];
        for (int k = 0; k < x->nout; k++) {
            lux_val_t v;
            int rc = s_get(lx, &x->ref[k], &v, &last, &ticks);
            int64_t got = -1;
            if (!rc && x->blob) {
                int64_t seed = -1;
                if (v.size >= 8)
                    memcpy(&seed, v.data, 8);
                got = (seed + (int64_t) v.size) % GRAPH_M;
                const uint8_t *p = v.data;
                for (size_t b = 8; b < v.size; b += 4093)
                    if (p[b] != s_byte(seed, (int64_t) b))
                        got = -2;
            } else if (!rc && v.size == 8) {
                memcpy(&got, v.data, 8);
            }
            if (rc || got != x->want[k]) {
                x->wrong = true;
                if (!bad++)
                    snprintf(why, wn, "node %d (kind %d) output %d: %s%s, got %lld, want %lld",
                             order[oi], x->kind, k,
                             rc == LUX_ETIMEDOUT ? "no task of the graph finished and no get "
                                                   "succeeded for 120 s: " : "",
                             rc ? lux_errmsg() : "wrong value", (long long) got,
                             (long long) x->want[k]);
            }
        }
        /* blobs are let go once checked, so the store can drop them */
        if (x->blob)
            lux_free(lx, 1, x->ref);
    }
    free(order);
    /* the first wrong node whose arguments all came right is where to look */
    for (int i = 0; bad && i < g->n; i++) {
        graph_node_t *x = &g->nodes[i];
        bool inputs_right = true;
        for (int k = 0; k < x->nin; k++)
            inputs_right = inputs_right && (x->in[k] < 0 || !g->nodes[x->in[k]].wrong);
        if (x->wrong && inputs_right) {
            char hex[LUX_REF_LEN * 2 + 1];
            diag("first wrong node with right arguments: %d (kind %d), %s", i, x->kind,
                 lux_ref_hex(&x->ref[0], hex));
            break;
        }
    }
    return bad;
}

void
graph_free(graph_t *g)
{
    free(g->nodes);
    g->nodes = NULL;
}

const char *
graph_module(void)
{
    static char path[1024];
    const char *b = getenv("LUX_BUILDDIR");
    snprintf(path, sizeof path, "%s/t/lib/.libs/testmod.so", b && *b ? b : ".");
    return path;
}

lux_t *
graph_unrecorded(const char *dir, int workers, uint64_t store_bytes)
{
    lux_config_t cfg = {.module = graph_module(), .dir = dir ? dir : tap_tmpdir(),
                        .store_bytes = store_bytes, .workers = workers, .record_puts = -1};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    return lx;
}

lux_t *
graph_small_spill(const char *dir, uint64_t store_bytes, char *spill, size_t n)
{
    if (unshare(CLONE_NEWNS) != 0)
        skip_all("no mount namespace of our own (needs root): a full spill disk is not tried");
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
        skip_all("cannot make the mounts private here");
    lux_t *lx = graph_unrecorded(dir, 1, store_bytes);
    snprintf(spill, n, "%s/spill", lux_dir(lx));
    if (mount("tmpfs", spill, "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,mode=0700") != 0) {
        lux_shutdown(&lx);
        skip_all("cannot mount a small tmpfs on the spill directory here");
    }
    return lx;
}

int
graph_puts_until_full(lux_t *lx, size_t size, uint64_t seed, int max, lux_ref_t *refs, int *rc,
                      char *why, size_t n)
{
    uint8_t *buf = malloc(size);
    if (!buf)
        bail("out of memory");
    int k = 0;
    *rc = 0;
    why[0] = 0;
    for (; k < max; k++) {
        hx_fill(buf, size, seed + (uint64_t) k);
        if ((*rc = lux_put(lx, buf, size, &refs[k])) != 0) {
            snprintf(why, n, "%s", lux_errmsg());
            break;
        }
    }
    free(buf);
    return k;
}

int
graph_puts_wrong(lux_t *lx, size_t size, uint64_t seed, int count, lux_ref_t *refs)
{
    uint8_t *buf = malloc(size);
    if (!buf)
        bail("out of memory");
    int wrong = 0;
    lux_val_t v;
    for (int i = 0; i < count; i++) {
        hx_fill(buf, size, seed + (uint64_t) i);
        int rc = lux_get(lx, &refs[i], &v, 60000);
        if (rc != 0 || v.size != size || memcmp(v.data, buf, size) != 0) {
            diag("put %d: %s", i, rc ? lux_errmsg() : "other bytes");
            wrong++;
        }
        lux_free(lx, 1, &refs[i]);
    }
    free(buf);
    return wrong;
}

lux_t *
graph_embedded(int workers, uint64_t store_bytes, const char *what)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(),
                        .store_bytes = store_bytes, .workers = workers};
    graph_ticks_start();
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "%s", what);
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    return lx;
}

int
graph_get8(lux_t *lx, const lux_ref_t *ref, int64_t *out)
{
    lux_val_t v;
    int rc = lux_get(lx, ref, &v, 120000);
    if (!rc && v.size != 8)
        rc = util_err(LUX_EPROTO, "%zu bytes, not 8", v.size);
    if (!rc)
        memcpy(out, v.data, 8);
    return rc;
}

int
graph_hacc_busy(lux_t *lx, int64_t h0, const lux_actor_opts_t *ao, char *gate, size_t n,
                lux_actor_t *a, lux_ref_t *w)
{
    char waiting[PATH_MAX + 16];
    snprintf(gate, n, "%s/gate", tap_tmpdir());
    snprintf(waiting, sizeof waiting, "%s.waiting", gate);
    int rc = lux_actor_create(lx, "HAcc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)}, ao, a);
    rc = rc ? rc : lux_actor_call(lx, a, "wait", 1, (lux_arg_t[]) {LUX_VAL(gate, strlen(gate))},
                                  1, w);
    int ready = 0;
    if (!rc)
        lux_wait(lx, 1, w, 1, 0, &ready); /* the call goes to the node now */
    if (!rc && !fx_wait_file(waiting, 120000))
        rc = util_err(LUX_ETIMEDOUT, "%s did not appear in 120 s", waiting);
    return rc;
}

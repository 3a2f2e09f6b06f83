/*  exec_gsched - the global scheduler's decision (exec_gsched.h). */
#include "exec_gsched.h"
#include "exec_members.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
gs_res_parse(gs_res_t *r, const char *text, bool add)
{
    if (!add)
        memset(r, 0, sizeof *r);
    if (!text)
        return 0;
    const char *p = text;
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end || eq == p || eq - p >= 32)
            return -1;
        char *stop;
        double v = strtod(eq + 1, &stop);
        if (stop != end || v < 0)
            return -1;
        int k = -1;
        for (int i = 0; i < r->n; i++)
            if (strlen(r->name[i]) == (size_t) (eq - p) && !strncmp(r->name[i], p, eq - p))
                k = i;
        if (k < 0) {
            if (r->n == GS_RES_MAX)
                return -1;
            k = r->n++;
            snprintf(r->name[k], sizeof r->name[k], "%.*s", (int) (eq - p), p);
            r->amount[k] = 0;
        }
        r->amount[k] += (int64_t) (v * 1000 + 0.5);
        p = *end ? end + 1 : end;
    }
    return 0;
}

int64_t
gs_res_get(const gs_res_t *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->name[i], name) == 0)
            return r->amount[i];
    return 0;
}

int
gs_node_from_text(gs_node_t *n, const char *text)
{
    char v[512];
    memset(n, 0, sizeof *n);
    if (!exec_members_get(text, "node", v, sizeof v) || util_id_parse(&n->id, v))
        return -1;
    if (exec_members_get(text, "address", v, sizeof v))
        snprintf(n->address, sizeof n->address, "%s", v);
    if (exec_members_get(text, "resources", v, sizeof v))
        gs_res_parse(&n->total, v, false);
    if (exec_members_get(text, "free", v, sizeof v))
        gs_res_parse(&n->free, v, false);
    if (exec_members_get(text, "workers", v, sizeof v))
        n->workers = (uint32_t) strtoul(v, NULL, 10);
    if (exec_members_get(text, "queue", v, sizeof v))
        n->queue = strtoull(v, NULL, 10);
    n->alive = !exec_members_get(text, "state", v, sizeof v) || strcmp(v, "alive") == 0;
    n->dead = n->said_dead = !n->alive && strcmp(v, "dead") == 0;
    if (n->alive && exec_members_get(text, "unconfirmed", v, sizeof v) && strcmp(v, "1") == 0)
        n->alive = false, n->unconfirmed = true; /* not placed on: waited for */
    if (exec_members_get(text, "age_ms", v, sizeof v))
        n->age_ms = strtoll(v, NULL, 10);
    return 0;
}

/* Whether have covers needs, resource by resource. */
static bool
s_covers(const gs_res_t *have, const gs_res_t *needs)
{
    for (int i = 0; i < needs->n; i++)
        if (needs->amount[i] > gs_res_get(have, needs->name[i]))
            return false;
    return true;
}

int
gs_place(gs_node_t *nodes, size_t n, const gs_res_t *needs, const gs_arg_t *args,
         size_t nargs, size_t *pick, char *why, size_t nwhy)
{
    size_t best = n;
    bool best_fits = false;
    double best_load = 0;
    for (size_t i = 0; i < n; i++) {
        gs_node_t *x = &nodes[i];
        x->local = 0;
        if (!x->alive || !s_covers(&x->total, needs))
            continue;
        for (size_t a = 0; a < nargs; a++)
            if (util_id_eq(&args[a].node, &x->id))
                x->local += args[a].bytes;
        bool fits = s_covers(&x->free, needs);
        double load = (double) (x->queue + x->placed) / (x->workers ? x->workers : 1);
        bool better;
        if (best == n)
            better = true;
        else if (fits != best_fits)
            better = fits;
        else if (x->local != nodes[best].local)
            better = x->local > nodes[best].local;
        else
            better = load < best_load;
        if (better) {
            best = i;
            best_fits = fits;
            best_load = load;
        }
    }
    if (best == n) {
        /* name the first resource that no alive node has enough of */
        for (int r = 0; r < needs->n; r++) {
            int64_t most = 0;
            for (size_t i = 0; i < n; i++)
                if (nodes[i].alive && gs_res_get(&nodes[i].total, needs->name[r]) > most)
                    most = gs_res_get(&nodes[i].total, needs->name[r]);
            if (needs->amount[r] > most) {
                snprintf(why, nwhy, "no node of the cluster has %s=%g (the most any alive "
                         "node has is %g)", needs->name[r], needs->amount[r] / 1000.0,
                         most / 1000.0);
                return GS_INFEASIBLE;
            }
        }
        snprintf(why, nwhy, "no alive node of the cluster has all of what it asks for at once");
        return GS_INFEASIBLE;
    }
    nodes[best].placed++;
    *pick = best;
    return GS_PLACED;
}

int
gs_dead_had(const gs_node_t *nodes, size_t n, const gs_res_t *needs, int64_t wait_ms,
            int *had, char *list, size_t nlist)
{
    int young = 0;
    size_t k = 0;
    *had = 0;
    if (nlist)
        list[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const gs_node_t *x = &nodes[i];
        if (x->alive || !(x->dead || x->unconfirmed) || !s_covers(&x->total, needs))
            continue;
        (*had)++;
        young += x->unconfirmed || x->silent_ms < wait_ms;
        char hex[UTIL_ID_HEX];
        if (x->unconfirmed && k + 120 < nlist)
            k += (size_t) snprintf(list + k, nlist - k, "%snode %s (unconfirmed: not heard "
                                   "from since the head started again)",
                                   k ? ", " : "", util_id_hex(&x->id, hex));
        else if (!x->unconfirmed && k + 80 < nlist)
            k += (size_t) snprintf(list + k, nlist - k, "%snode %s (silent %lld ms)",
                                   k ? ", " : "", util_id_hex(&x->id, hex),
                                   (long long) x->silent_ms);
    }
    return young;
}

/* splitmix64: the next of g's numbers */
static uint64_t
s_next(gs_rand_t *g)
{
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t
gs_rand_seed(gs_rand_t *g, uint64_t seed)
{
    static uint64_t drawn; /* two draws in one process differ */
    if (!seed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        gs_rand_t m = {.s = (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec +
                            ((uint64_t) getpid() << 32) + ++drawn};
        seed = s_next(&m);
        seed = seed ? seed : 1;
    }
    g->s = seed;
    return seed;
}

int
gs_pick_random(const gs_node_t *nodes, size_t n, const gs_res_t *needs, const util_id_t *skip,
               gs_rand_t *g, size_t *pick)
{
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++) { /* count those that fit, then take the drawn one */
        size_t want = pass ? (size_t) (s_next(g) % k) : 0, seen = 0;
        for (size_t i = 0; i < n; i++) {
            const gs_node_t *x = &nodes[i];
            bool covers = x->alive && !(skip && util_id_eq(&x->id, skip));
            for (int j = 0; j < needs->n && covers; j++)
                covers = gs_res_get(&x->total, needs->name[j]) >= needs->amount[j];
            if (!covers)
                continue;
            if (pass && seen == want) {
                *pick = i;
                return GS_PLACED;
            }
            seen++;
        }
        k = seen;
        if (!k)
            break;
    }
    return GS_INFEASIBLE;
}

bool
gs_table_alive(const char *table, const util_id_t *node)
{
    char hex[UTIL_ID_HEX], v[64];
    util_id_hex(node, hex);
    for (const char *blk = table; blk && *blk;) {
        const char *end = strstr(blk, "\n\n");
        if (exec_members_get(blk, "node", v, sizeof v) && strcmp(v, hex) == 0) {
            /* exec_members_get reads to the block's end only when it is cut */
            char state[32] = "alive";
            const char *st = strstr(blk, "\nstate ");
            if (st && (!end || st < end))
                sscanf(st + 7, "%31s", state);
            return strcmp(state, "alive") == 0;
        }
        blk = end ? end + 2 : NULL;
    }
    return false;
}

/*  lux_lineage - `lux lineage RUN|OUT.db OBJ [--dot|--svg] [-o FILE]`: the
    lineage graph of one object, drawn from the log.

    The walk is breadth first from the object: an object leads to the task
    that made it (its task_submitted, actor_call or actor_created event: the
    object ID is the task ID and a return index); a task to the objects it
    read (its event's deps); an actor call to its actor, whose state it
    read, and the actor to what its constructor read. An object with no such
    event is a put (its object_put event gives its size) or, when not even
    that is in the log, unknown. Each task's attempts come from its
    task_finished, task_failed and task_retried events: the graph marks the
    failed ones and says why each retry happened.

    Outputs:
      text (default)  one block per task in the order of the walk, with its
                      depth, function, outcome, attempts, retries and the
                      objects it read
      --dot           graphviz: tasks are boxes (red when failed, orange
                      when retried), objects ellipses (puts as notes),
                      actors hexagons; edges object -> task ("arg N"),
                      task -> object ("out N"), actor -> call ("state")
      --svg           the same through graphviz's dot(1)
*/
#include "lux_cmd.h"
#include "lux_hist.h"
#include "lux_opt.h"
#include "db/db_event.h"
#include "util/util_err.h"
#include "util/util_hash.h"
#include "util/util_idmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The return index of an object ID: 4 bytes big-endian after the task. */
static uint32_t
s_be32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static const char s_usage[] = "lux lineage RUN|OUT.db OBJECT [--dot|--svg] [-o FILE]";

/* One retry or failure of a task, for the graph. */
typedef struct {
    int kind;       /* task_retried or task_failed */
    int64_t attempt;
    char *why;
} s_mark_t;

typedef struct {
    util_id_t id;
    int kind;         /* task_submitted, actor_call, actor_created; 0: a put or unknown */
    char *name;       /* function, Class.method, Class */
    util_id_t actor;  /* actor_call: its actor */
    bool is_call;
    uint8_t *deps;    /* 20 bytes each */
    uint32_t ndeps;
    int depth;
    /* outcome */
    int outcome;      /* 0 pending, task_finished or task_failed */
    int64_t attempts; /* the last attempt number seen */
    s_mark_t *marks;
    size_t nmarks;
    /* a put: */
    bool put;
    int64_t put_size;
} s_task_t;

typedef struct {
    lux_hist_t *h;
    sqlite3_stmt *spec, *outcome, *put, *restarts;
    util_idmap_t *seen;   /* task ID -> uint32 index + 1 */
    s_task_t *t;
    size_t n, cap;
    util_idmap_t *actors; /* actor ID -> uint32 index + 1 of its constructor's task */
} s_walk_t;

static s_task_t *
s_add(s_walk_t *w, const uint8_t *id, int depth, bool *fresh_out)
{
    int fresh;
    uint32_t *ix = util_idmap_put(w->seen, id, &fresh);
    if (!ix)
        return NULL;
    *fresh_out = fresh;
    if (!fresh)
        return &w->t[*ix - 1];
    if (w->n == w->cap) {
        size_t c = w->cap ? 2 * w->cap : 64;
        s_task_t *p = realloc(w->t, c * sizeof *p);
        if (!p)
            return NULL;
        w->t = p;
        w->cap = c;
    }
    s_task_t *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    memcpy(t->id.b, id, UTIL_ID_LEN);
    t->depth = depth;
    *ix = (uint32_t) ++w->n;
    return t;
}

/* Fill t from its events. */
static int
s_describe(s_walk_t *w, s_task_t *t, uint32_t put_idx)
{
    sqlite3_stmt *st = w->spec;
    sqlite3_bind_blob(st, 1, t->id.b, UTIL_ID_LEN, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        t->kind = sqlite3_column_int(st, 0);
        const char *name = (const char *) sqlite3_column_text(st, 1);
        t->name = strdup(name ? name : "?");
        int nd = sqlite3_column_bytes(st, 2);
        if (nd >= DB_DEP_LEN && (t->deps = malloc((size_t) nd))) {
            memcpy(t->deps, sqlite3_column_blob(st, 2), (size_t) nd);
            t->ndeps = (uint32_t) nd / DB_DEP_LEN;
        }
        if (sqlite3_column_bytes(st, 3) == UTIL_ID_LEN) {
            memcpy(t->actor.b, sqlite3_column_blob(st, 3), UTIL_ID_LEN);
            t->is_call = t->kind == DB_K_actor_call;
        }
    }
    sqlite3_reset(st);
    if (!t->kind) {
        st = w->put;
        sqlite3_bind_blob(st, 1, t->id.b, UTIL_ID_LEN, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, put_idx);
        if (sqlite3_step(st) == SQLITE_ROW) {
            t->put = true;
            t->put_size = sqlite3_column_int64(st, 0);
        }
        sqlite3_reset(st);
        return 0;
    }
    st = t->kind == DB_K_actor_created ? w->restarts : w->outcome;
    sqlite3_bind_blob(st, 1, t->id.b, UTIL_ID_LEN, SQLITE_STATIC);
    if (st == w->restarts) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *info = (const char *) sqlite3_column_text(st, 1);
            s_mark_t *m = realloc(t->marks, (t->nmarks + 1) * sizeof *m);
            if (!m)
                break;
            t->marks = m;
            m[t->nmarks++] = (s_mark_t) {.kind = DB_K_actor_restarted,
                                         .attempt = sqlite3_column_int64(st, 0),
                                         .why = strdup(info ? info : "")};
        }
        sqlite3_reset(st);
        return 0;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int kind = sqlite3_column_int(st, 0);
        int64_t attempt = sqlite3_column_int64(st, 1);
        const char *info = (const char *) sqlite3_column_text(st, 2);
        if (attempt > t->attempts)
            t->attempts = attempt;
        if (kind != DB_K_task_retried)
            t->outcome = kind;
        if (kind == DB_K_task_finished)
            continue;
        s_mark_t *m = realloc(t->marks, (t->nmarks + 1) * sizeof *m);
        if (!m)
            break;
        t->marks = m;
        m[t->nmarks++] = (s_mark_t) {.kind = kind, .attempt = attempt,
                                     .why = strdup(info ? info : "")};
    }
    sqlite3_reset(st);
    return 0;
}

static int
s_walk(s_walk_t *w, const uint8_t *obj, bool is_task)
{
    bool fresh;
    uint32_t idx0 = is_task ? 0 : s_be32(obj + UTIL_ID_LEN);
    s_task_t *t = s_add(w, obj, 0, &fresh);
    if (!t)
        return util_err(LUX_ENOMEM, "out of memory");
    s_describe(w, t, idx0);
    if (!t->kind && !t->put)
        return LUX_ENOTFOUND; /* the caller says what */
    for (size_t i = 0; i < w->n; i++) {
        /* rows may move as we add: index, never hold a pointer */
        int depth = w->t[i].depth + 1;
        for (uint32_t d = 0; d < w->t[i].ndeps; d++) {
            const uint8_t *dep = w->t[i].deps + (size_t) d * DB_DEP_LEN;
            s_task_t *c = s_add(w, dep, depth, &fresh);
            if (!c)
                return util_err(LUX_ENOMEM, "out of memory");
            if (fresh)
                s_describe(w, c, s_be32(dep + UTIL_ID_LEN));
        }
        if (w->t[i].is_call) {
            util_id_t actor = w->t[i].actor;
            s_task_t *c = s_add(w, actor.b, depth, &fresh);
            if (!c)
                return util_err(LUX_ENOMEM, "out of memory");
            if (fresh)
                s_describe(w, c, 0);
            char name[512];
            snprintf(name, sizeof name, "%s.%s", c->name ? c->name : "actor",
                     w->t[i].name ? w->t[i].name : "?");
            free(w->t[i].name);
            w->t[i].name = strdup(name);
        }
    }
    return 0;
}

/* "1a2b3c4d..0e:1": short, for people; the full ID is in the tooltip and
   the text form. */
static const char *
s_short_obj(const uint8_t *obj, char *out)
{
    char hex[2 * LUX_REF_LEN + 1];
    util_hex(hex, obj, LUX_REF_LEN);
    sprintf(out, "%.8s..%.4s:%" PRIu32, hex, hex + 28, s_be32(obj + UTIL_ID_LEN));
    return out;
}

static const char *
s_outcome(const s_task_t *t)
{
    if (t->put)
        return "put";
    if (!t->kind)
        return "not in the log";
    if (t->kind == DB_K_actor_created)
        return "actor";
    return t->outcome == DB_K_task_finished ? "finished"
           : t->outcome == DB_K_task_failed ? "failed"
                                            : "pending";
}

static size_t
s_retries(const s_task_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nmarks; i++)
        n += t->marks[i].kind == DB_K_task_retried;
    return n;
}

static void
s_text(s_walk_t *w, FILE *f, const char *arg)
{
    char hex[UTIL_ID_HEX], sh[48];
    size_t tasks = 0, failed = 0, retried = 0, puts = 0, actors = 0;
    for (size_t i = 0; i < w->n; i++) {
        s_task_t *t = &w->t[i];
        if (t->kind == DB_K_actor_created)
            actors++;
        else if (t->kind)
            tasks++, failed += t->outcome == DB_K_task_failed, retried += s_retries(t) > 0;
        else
            puts++;
    }
    fprintf(f, "lineage of %s: %zu tasks (%zu failed, %zu retried), %zu actors, %zu objects "
               "without a task (puts)\n",
            arg, tasks, failed, retried, actors, puts);
    for (size_t i = 0; i < w->n; i++) {
        s_task_t *t = &w->t[i];
        util_id_hex(&t->id, hex);
        fprintf(f, "\n%-5d %s  %s  %s", t->depth, hex, t->name ? t->name : "-", s_outcome(t));
        if (t->put)
            fprintf(f, ", %" PRId64 " bytes", t->put_size);
        if (t->attempts > 1 || s_retries(t))
            fprintf(f, ", %" PRId64 " attempts", t->attempts);
        fputc('\n', f);
        for (size_t k = 0; k < t->nmarks; k++)
            fprintf(f, "      %s %" PRId64 ": %s\n",
                    t->marks[k].kind == DB_K_task_retried     ? "retried, to attempt"
                    : t->marks[k].kind == DB_K_actor_restarted ? "restart"
                                                               : "FAILED, attempt",
                    t->marks[k].attempt, t->marks[k].why);
        if (t->is_call)
            fprintf(f, "      state of actor %s\n", util_id_hex(&t->actor, hex));
        if (t->ndeps) {
            fprintf(f, "      reads");
            for (uint32_t d = 0; d < t->ndeps; d++)
                fprintf(f, "%s %s", d ? "," : "", s_short_obj(t->deps + (size_t) d * DB_DEP_LEN, sh));
            fputc('\n', f);
        }
    }
}

/* A DOT string literal. */
static void
s_dot_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void
s_dot(s_walk_t *w, FILE *f, const uint8_t *start, bool start_task)
{
    char hex[2 * LUX_REF_LEN + 1], sh[48], label[1024];
    fputs("digraph lineage {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=8];\n",
          f);
    /* objects: every dep, and the start */
    util_idmap_t *objs = util_idmap_new_keyed(LUX_REF_LEN, 1);
    for (size_t i = 0; i < w->n; i++) {
        s_task_t *t = &w->t[i];
        util_id_hex(&t->id, hex);
        if (t->kind == DB_K_actor_created) {
            int n = snprintf(label, sizeof label, "actor %s\n%.8s", t->name, hex);
            for (size_t k = 0; k < t->nmarks && n < (int) sizeof label - 80; k++)
                n += snprintf(label + n, sizeof label - (size_t) n, "\n%.60s", t->marks[k].why);
            fprintf(f, "  \"t%s\" [shape=hexagon, style=filled, fillcolor=\"#dde8ff\", label=", hex);
        } else if (t->kind) {
            int n = snprintf(label, sizeof label, "%s\ntask %.8s..%.4s\n%s", t->name, hex,
                             hex + 28, s_outcome(t));
            if (t->attempts > 1 || s_retries(t))
                n += snprintf(label + n, sizeof label - (size_t) n, ", %" PRId64 " attempts",
                              t->attempts);
            for (size_t k = 0; k < t->nmarks && n < (int) sizeof label - 80; k++)
                n += snprintf(label + n, sizeof label - (size_t) n, "\n%s %" PRId64 ": %.60s",
                              t->marks[k].kind == DB_K_task_retried ? "retried, to attempt"
                                                                    : "failed, attempt",
                              t->marks[k].attempt, t->marks[k].why);
            const char *style = t->outcome == DB_K_task_failed ? "filled, bold\", fillcolor=\"#f4b0b0"
                                : s_retries(t)                 ? "filled, bold\", fillcolor=\"#ffd9a0"
                                                               : "filled\", fillcolor=\"#d8f0d8";
            fprintf(f, "  \"t%s\" [shape=box, style=\"%s\", tooltip=\"task %s\", label=", hex,
                    style, hex);
        } else {
            continue; /* puts and unknowns are drawn as their objects */
        }
        s_dot_str(f, label);
        fputs("];\n", f);
    }
    /* edges */
    for (size_t i = 0; i < w->n; i++) {
        s_task_t *t = &w->t[i];
        char thex[UTIL_ID_HEX];
        util_id_hex(&t->id, thex);
        for (uint32_t d = 0; d < t->ndeps; d++) {
            const uint8_t *dep = t->deps + (size_t) d * DB_DEP_LEN;
            util_hex(hex, dep, LUX_REF_LEN);
            int fresh;
            if (objs && util_idmap_put(objs, dep, &fresh) && fresh) {
                s_task_t *p = &w->t[*(uint32_t *) util_idmap_get(w->seen, dep) - 1];
                char plabel[128];
                if (p->put)
                    snprintf(plabel, sizeof plabel, "put %s\n%" PRId64 " B", s_short_obj(dep, sh),
                             p->put_size);
                else
                    snprintf(plabel, sizeof plabel, "%s%s", p->kind ? "" : "? ",
                             s_short_obj(dep, sh));
                fprintf(f, "  \"o%s\" [shape=%s, tooltip=\"object %s\", label=", hex,
                        p->put ? "note" : "ellipse", hex);
                s_dot_str(f, plabel);
                fputs("];\n", f);
                if (p->kind && p->kind != DB_K_actor_created) {
                    char phex[UTIL_ID_HEX];
                    util_id_hex(&p->id, phex);
                    fprintf(f, "  \"t%s\" -> \"o%s\" [label=\"out %" PRIu32 "\"];\n", phex, hex,
                            s_be32(dep + UTIL_ID_LEN));
                }
            }
            fprintf(f, "  \"o%s\" -> \"t%s\" [label=\"arg %" PRIu32 "\"];\n", hex, thex, d);
        }
        if (t->is_call) {
            char ahex[UTIL_ID_HEX];
            fprintf(f, "  \"t%s\" -> \"t%s\" [style=dashed, label=\"state\"];\n",
                    util_id_hex(&t->actor, ahex), thex);
        }
    }
    /* the object asked about, if no task read it in the graph */
    if (!start_task) {
        int fresh;
        util_hex(hex, start, LUX_REF_LEN);
        if (objs && util_idmap_put(objs, start, &fresh) && fresh) {
            s_task_t *p = &w->t[0];
            char thex[UTIL_ID_HEX];
            fprintf(f, "  \"o%s\" [shape=%s, peripheries=2, tooltip=\"object %s\", label=",
                    hex, p->put ? "note" : "ellipse", hex);
            s_dot_str(f, s_short_obj(start, sh));
            fputs("];\n", f);
            if (p->kind)
                fprintf(f, "  \"t%s\" -> \"o%s\" [label=\"out %" PRIu32 "\"];\n",
                        util_id_hex(&p->id, thex), hex, s_be32(start + UTIL_ID_LEN));
        }
    }
    util_idmap_destroy(&objs);
    fputs("}\n", f);
}

static void
s_free(s_walk_t *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->t[i].name);
        free(w->t[i].deps);
        for (size_t k = 0; k < w->t[i].nmarks; k++)
            free(w->t[i].marks[k].why);
        free(w->t[i].marks);
    }
    free(w->t);
    sqlite3_finalize(w->spec);
    sqlite3_finalize(w->outcome);
    sqlite3_finalize(w->put);
    sqlite3_finalize(w->restarts);
    util_idmap_destroy(&w->seen);
    lux_hist_close(&w->h);
}

int
cmd_lineage(int argc, char **argv)
{
    const char *src = NULL, *obj = NULL, *out = NULL;
    enum { TEXT, DOT, SVG } mode = TEXT;
    static const struct option opts[] = {{"dot", no_argument, 0, 'D'},
                                         {"svg", no_argument, 0, 'S'},
                                         {"output", required_argument, 0, 'o'}, {0}};
    lux_opt_t cl = {.cmd = "lineage", .usage = s_usage, .opts = opts, .shorts = "o:",
                   .help = "The lineage of an object (40 hex digits; 32 for a task): every task, "
                           "object and actor\nit depends on, with failed and retried attempts "
                           "and why. Plain text by default;\n--dot writes graphviz, --svg draws "
                           "it with dot(1). RUN is a run's or a cluster's\ndirectory; OUT.db a "
                           "file `lux pull` wrote. See lux(1).\n"};
    int o;
    while ((o = lux_opt_next(&cl, argc, argv)) != -1) {
        if (o == 'D' || o == 'S')
            mode = o == 'D' ? DOT : SVG;
        else if (o == 'o')
            out = optarg;
        else
            return cl.status;
    }
    if (!lux_opt_args(&cl, argc, argv, 2, 2,
                      argc - optind == 0 ? "a RUN directory or OUT.db" : "an OBJECT ID"))
        return 2;
    src = argv[optind];
    obj = argv[optind + 1];
    uint8_t start[LUX_REF_LEN] = {0};
    size_t len = strlen(obj);
    bool is_task = len == 32;
    char buf[33];
    util_id_t id;
    snprintf(buf, sizeof buf, "%.32s", obj);
    if ((len != 40 && len != 32) || util_id_parse(&id, buf) ||
        strspn(obj, "0123456789abcdefABCDEF") != len)
        return lux_opt_usage(&cl, "OBJECT is an object ID of 40 hex digits (or a task ID of 32), not '%s'",
                         obj);
    memcpy(start, id.b, UTIL_ID_LEN);
    if (!is_task) {
        unsigned long ix = strtoul(obj + 32, NULL, 16);
        start[16] = (uint8_t) (ix >> 24);
        start[17] = (uint8_t) (ix >> 16);
        start[18] = (uint8_t) (ix >> 8);
        start[19] = (uint8_t) ix;
    }

    s_walk_t w = {0};
    int rc = 0;
    if (!(w.h = lux_hist_open(src)) || lux_hist_snapshot(w.h)) {
        lux_hist_close(&w.h); /* NULL when it did not open */
        return lux_fail("lineage", "%s", lux_errmsg());
    }
    if (!(w.seen = util_idmap_new(sizeof(uint32_t))))
        rc = util_err(LUX_ENOMEM, "out of memory");
    if (!rc && (!(w.spec = lux_hist_prepare(w.h, "SELECT kind, name, deps, actor FROM event"
                                                   " WHERE task = ?1 AND kind IN (4, 11, 12)"
                                                   " ORDER BY kind = 11, ts LIMIT 1")) ||
                !(w.outcome = lux_hist_prepare(w.h, "SELECT kind, attempt, info FROM event"
                                                     " WHERE task = ?1 AND kind IN (5, 6, 7)"
                                                     " ORDER BY ts, shard, seq")) ||
                !(w.put = lux_hist_prepare(w.h, "SELECT size FROM event WHERE task = ?1"
                                                 " AND kind = 8 AND idx = ?2 LIMIT 1")) ||
                !(w.restarts = lux_hist_prepare(w.h, "SELECT attempt, info FROM event"
                                                      " WHERE actor = ?1 AND kind = 14"
                                                      " ORDER BY ts, shard, seq"))))
        rc = LUX_ESQL;
    if (!rc && (rc = s_walk(&w, start, is_task)) == LUX_ENOTFOUND)
        util_err(LUX_ENOTFOUND, "%s %s: no task made it and no put of it is in %s",
                 is_task ? "task" : "object", obj, lux_hist_what(w.h));
    FILE *f = NULL, *pipe = NULL;
    char cmdline[PATH_MAX + 64];
    if (!rc) {
        if (mode == SVG) {
            snprintf(cmdline, sizeof cmdline, "dot -Tsvg%s%s", out ? " -o " : "", "");
            if (out) {
                /* dot writes the file: quote its name for the shell */
                char *q = cmdline + strlen(cmdline);
                *q++ = '\'';
                for (const char *p = out; *p && q < cmdline + sizeof cmdline - 8; p++) {
                    if (*p == '\'') {
                        memcpy(q, "'\\''", 4);
                        q += 4;
                    } else
                        *q++ = *p;
                }
                *q++ = '\'';
                *q = 0;
            }
            if (system("command -v dot >/dev/null 2>&1") != 0)
                rc = util_err(LUX_ENOTFOUND, "--svg needs graphviz's dot, which is not "
                              "installed (apt-get install graphviz; or use --dot)");
            else if (!(pipe = f = popen(cmdline, "w")))
                rc = util_err(LUX_EIO, "cannot run dot: %s", strerror(errno));
        } else {
            f = out && strcmp(out, "-") != 0 ? fopen(out, "w") : stdout;
            if (!f)
                rc = util_err(LUX_EIO, "%s: cannot write: %s", out, strerror(errno));
        }
    }
    if (!rc) {
        if (mode == TEXT)
            s_text(&w, f, obj);
        else
            s_dot(&w, f, start, is_task);
        if (pipe) {
            int st = pclose(pipe);
            if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                rc = util_err(LUX_EIO, "dot failed (status %d)%s%s", st,
                              out ? " writing " : "", out ? out : "");
        } else if (f != stdout) {
            if (fclose(f))
                rc = util_err(LUX_EIO, "%s: cannot write: %s", out, strerror(errno));
        } else if (fflush(stdout)) {
            rc = util_err(LUX_EIO, "cannot write: %s", strerror(errno));
        }
    }
    s_free(&w);
    return rc ? lux_fail("lineage", "%s", lux_errmsg()) : 0;
}

/*  lux_sql - reading the log: `lux sql` (queries over all shards, read-only)
    and `lux audit` (hash-chain verification of every replica file).

    Output of `lux sql`: an aligned table with a header (default), CSV
    (RFC 4180 quoting), or JSON (an array of objects, one per row). BLOBs
    print as lower-case hex. Every row is printed: there is no cap.
*/
#include "lux_cmd.h"
#include "lux_hist.h"
#include "lux_opt.h"
#include "db/db_audit.h"
#include "db/db_chain.h"
#include "db/db_query.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_hash.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OUT_TABLE, OUT_CSV, OUT_JSON };

/* A value as text: hex for blobs; NULL for SQL NULL. Caller frees. */
static char *
s_text(sqlite3_stmt *st, int col)
{
    int t = sqlite3_column_type(st, col);
    if (t == SQLITE_NULL)
        return NULL;
    if (t == SQLITE_BLOB) {
        int n = sqlite3_column_bytes(st, col);
        char *out = malloc((size_t) n * 2 + 1);
        if (out)
            util_hex(out, sqlite3_column_blob(st, col), (size_t) n);
        return out;
    }
    const char *s = (const char *) sqlite3_column_text(st, col);
    return strdup(s ? s : "");
}

static void
s_csv(const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

/* One row as a JSON object, written by SQLite's json_object() (its
   quoting of strings, its numbers): a statement "SELECT json_object(?1,
   ?2, ...)" prepared at the first row, binding each column's name and
   value; a BLOB, which JSON cannot hold, as its hex (sodium_bin2hex). A row wider than
   what one SQL function call takes is one json_object() per 60 columns,
   joined here. SQLITE_ROW, or a LUX_E* code with the message set. */
#define S_JSON_COLS 60
/* a value; an infinite REAL as 9e999, which JSON parsers read as infinity
   (the json_object() of SQLite before 3.45 writes Inf, which they do not) */
#define S_JSON_VAL "CASE WHEN ?%d IN (9e999, -9e999) THEN json(iif(?%d > 0, '9e999', '-9e999')) ELSE ?%d END"
static int
s_json_row(db_query_t *q, sqlite3_stmt *st, int ncol, sqlite3_stmt **js, bool *first)
{
    sqlite3 *db = db_query_db(q);
    int nchunks = ncol ? (ncol + S_JSON_COLS - 1) / S_JSON_COLS : 1;
    if (!*js) {
        size_t cap = 64 + (size_t) ncol * (sizeof S_JSON_VAL + 32) + (size_t) nchunks * 16, len = 0;
        char *sql = malloc(cap);
        if (!sql)
            return util_err(LUX_ENOMEM, "out of memory");
        len += (size_t) snprintf(sql + len, cap - len, "SELECT ");
        for (int k = 0; k < nchunks; k++) {
            len += (size_t) snprintf(sql + len, cap - len, "%sjson_object(", k ? "," : "");
            for (int c = k * S_JSON_COLS; c < ncol && c < (k + 1) * S_JSON_COLS; c++)
                len += (size_t) snprintf(sql + len, cap - len, "%s?%d," S_JSON_VAL,
                                         c > k * S_JSON_COLS ? "," : "", 2 * c + 1, 2 * c + 2,
                                         2 * c + 2, 2 * c + 2);
            len += (size_t) snprintf(sql + len, cap - len, ")");
        }
        int rc = sqlite3_prepare_v2(db, sql, -1, js, NULL);
        free(sql);
        if (rc != SQLITE_OK)
            return util_err(LUX_ESQL, "--json: %s", sqlite3_errmsg(db));
    }
    sqlite3_reset(*js);
    sqlite3_clear_bindings(*js);
    for (int c = 0; c < ncol; c++) {
        sqlite3_bind_text(*js, 2 * c + 1, sqlite3_column_name(st, c), -1, SQLITE_STATIC);
        if (sqlite3_column_type(st, c) == SQLITE_BLOB) {
            char *hex = s_text(st, c);
            if (!hex)
                return util_err(LUX_ENOMEM, "out of memory");
            sqlite3_bind_text(*js, 2 * c + 2, hex, -1, free);
        } else {
            sqlite3_bind_value(*js, 2 * c + 2, sqlite3_column_value(st, c));
        }
    }
    if (sqlite3_step(*js) != SQLITE_ROW)
        return util_err(LUX_ESQL, "--json: %s", sqlite3_errmsg(db));
    printf("%s\n  ", *first ? "" : ",");
    *first = false;
    if (nchunks == 1) {
        printf("%s", (const char *) sqlite3_column_text(*js, 0));
        return SQLITE_ROW;
    }
    /* {a},{b} -> {a,b}: each chunk's members without its braces */
    putchar('{');
    for (int k = 0, any = 0; k < nchunks; k++) {
        const char *o = (const char *) sqlite3_column_text(*js, k);
        int n = o ? (int) strlen(o) : 0;
        if (n > 2) {
            printf("%s%.*s", any ? "," : "", n - 2, o + 1);
            any = 1;
        }
    }
    putchar('}');
    return SQLITE_ROW;
}

/* Run one statement and print its rows. */
static int
s_run(db_query_t *q, sqlite3_stmt *st, int mode, bool *first_json)
{
    int ncol = sqlite3_column_count(st), rc;
    sqlite3_stmt *js = NULL; /* SELECT json_object(...) for --json */
    char ***rows = NULL;
    size_t nrows = 0, cap = 0;
    size_t *width = calloc((size_t) ncol + 1, sizeof *width);

    if (mode == OUT_CSV && ncol) {
        for (int c = 0; c < ncol; c++) {
            if (c)
                putchar(',');
            s_csv(sqlite3_column_name(st, c));
        }
        putchar('\n');
    }
    for (int c = 0; c < ncol; c++)
        width[c] = strlen(sqlite3_column_name(st, c));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (mode == OUT_CSV) {
            for (int c = 0; c < ncol; c++) {
                char *v = s_text(st, c);
                if (c)
                    putchar(',');
                s_csv(v);
                free(v);
            }
            putchar('\n');
        } else if (mode == OUT_JSON) {
            if ((rc = s_json_row(q, st, ncol, &js, first_json)) != SQLITE_ROW)
                break;
        } else {
            if (nrows == cap) {
                cap = cap ? 2 * cap : 64;
                rows = realloc(rows, cap * sizeof *rows);
            }
            char **row = calloc((size_t) ncol, sizeof *row);
            for (int c = 0; c < ncol; c++) {
                row[c] = s_text(st, c);
                size_t w = row[c] ? strlen(row[c]) : 0;
                if (w > width[c])
                    width[c] = w;
            }
            rows[nrows++] = row;
        }
    }
    if (mode == OUT_TABLE && ncol) {
        for (int c = 0; c < ncol; c++)
            printf("%s%-*s", c ? "  " : "", (int) width[c], sqlite3_column_name(st, c));
        putchar('\n');
        for (int c = 0; c < ncol; c++) {
            printf("%s", c ? "  " : "");
            for (size_t k = 0; k < width[c]; k++)
                putchar('-');
        }
        putchar('\n');
        for (size_t r = 0; r < nrows; r++) {
            for (int c = 0; c < ncol; c++) {
                int t = 0;
                const char *v = rows[r][c] ? rows[r][c] : "";
                /* numbers right-aligned */
                char *end;
                strtod(v, &end);
                t = *v && !*end;
                printf("%s%*s", c ? "  " : "", t ? (int) width[c] : -(int) width[c], v);
                free(rows[r][c]);
            }
            putchar('\n');
            free(rows[r]);
        }
        printf("(%zu row%s)\n", nrows, nrows == 1 ? "" : "s");
    }
    free(rows);
    free(width);
    sqlite3_finalize(js);
    if (rc < 0) /* a LUX_E* code from s_json_row, its message set */
        return rc;
    if (rc != SQLITE_DONE)
        return util_err(LUX_ESQL, "%s", sqlite3_errmsg(db_query_db(q)));
    return 0;
}

/* Say on stderr when the tail's file a query reads is behind the newest
   signed checkpoint of its shard, or far behind another replica: answers
   from a short file must not look complete. Needs no verdict, so the quick
   audit: last seqs and the checkpoints that verify with the cluster's
   public key (none checked without one). */
static void
s_sql_warnings(const db_cluster_t *c)
{
    char pkpath[PATH_MAX], wpath[PATH_MAX];
    db_ckpt_keys_t keys = {0};
    bool have_pk = db_ckpt_keys_cluster(c, &keys, pkpath, sizeof pkpath) == 0;
    db_audit_shard_t *sh = calloc(c->shards, sizeof *sh);
    db_audit_opts_t o = {.cluster = c, .keys = have_pk ? &keys : NULL,
                         .witness = db_ckpt_witness_path(c, wpath, sizeof wpath), .quick = true};
    if (!sh || db_audit_run(&o, sh) < 0) {
        free(sh);
        return;
    }
    for (uint32_t s = 0; s < c->shards; s++) {
        if (sh[s].tail == UINT32_MAX)
            continue;
        if (sh[s].ckpt_seq > sh[s].tail_last)
            fprintf(stderr,
                    "lux sql: warning: shard %u: the tail's file (replica %u) ends at seq %llu,"
                    " before the signed checkpoint at seq %llu (%s): committed events are"
                    " missing from what this query reads; run lux audit\n",
                    s, sh[s].tail, (unsigned long long) sh[s].tail_last,
                    (unsigned long long) sh[s].ckpt_seq, sh[s].ckpt_src);
        else if (sh[s].max_last > sh[s].tail_last + DB_AUDIT_WINDOW)
            fprintf(stderr,
                    "lux sql: warning: shard %u: the tail's file (replica %u) ends at seq %llu,"
                    " %llu events behind another replica's: run lux audit\n",
                    s, sh[s].tail, (unsigned long long) sh[s].tail_last,
                    (unsigned long long) (sh[s].max_last - sh[s].tail_last));
    }
    free(sh);
}

int
cmd_sql(int argc, char **argv)
{
    static const char usage[] = "lux sql --dir DIR|OUT.db [--csv|--json] \"QUERY\"";
    const char *dir = NULL, *query = NULL, *file = NULL;
    int mode = OUT_TABLE, rc = 0;
    db_cluster_t c;

    static const struct option opts[] = {{"dir", required_argument, 0, 'd'},
                                         {"csv", no_argument, 0, 'c'},
                                         {"json", no_argument, 0, 'j'}, {0}};
    lux_opt_t p = {.cmd = "sql", .usage = usage, .opts = opts,
                   .help = "Views spanning all shards: events, tasks, retries, objects, task_deps,"
                           " actors,\nactor_calls, actor_restarts, nodes, jobs; raw rows in `event`;"
                           " the function\nlineage(object_id). See lux(1) and the files in sql/.\n"};
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o == 'd')
            dir = optarg;
        else if (o == 'c' || o == 'j')
            mode = o == 'c' ? OUT_CSV : OUT_JSON;
        else
            return p.status;
    }
    /* lux sql --dir DIR QUERY, or lux sql OUT.db QUERY (a file lux pull wrote) */
    if (!lux_opt_args(&p, argc, argv, dir ? 1 : 2, dir ? 1 : 2,
                      argc - optind == 0 || dir ? "a QUERY" : "--dir DIR or a file lux pull wrote"))
        return 2;
    if (!dir)
        file = argv[optind++];
    query = argv[optind];
    if (dir && db_cluster_load(&c, dir))
        return lux_fail("sql", "%s", lux_errmsg());
    if (dir)
        s_sql_warnings(&c);
    db_query_t *q = dir ? db_query_open(&c) : db_query_open_pulled(file);
    if (!q)
        return lux_fail("sql", "%s", lux_errmsg());
    lux_hist_test_gate("open");
    bool first_json = true;
    if (mode == OUT_JSON)
        printf("[");
    const char *sql = query;
    int statements = 0;
    while (sql && *sql && !rc) {
        sqlite3_stmt *st;
        const char *tail;
        /* each statement in one snapshot of the whole log */
        if ((rc = db_query_begin(q)) || (rc = db_query_prepare(q, sql, &st, &tail)))
            break;
        if (!st) /* only whitespace or a comment left */
            break;
        statements++;
        lux_hist_test_gate("statement");
        rc = s_run(q, st, mode, &first_json);
        sqlite3_finalize(st);
        int end = db_query_end(q);
        rc = rc ? rc : end;
        sql = tail;
    }
    if (mode == OUT_JSON)
        printf("%s]\n", first_json ? "" : "\n");
    if (!rc && statements == 0)
        rc = util_err(LUX_EINVAL, "the query is empty");
    db_query_close(&q);
    return rc ? lux_fail("sql", "%s", lux_errmsg()) : 0;
}

static void
s_audit_say(void *arg, bool problem, const char *line)
{
    (void) arg;
    printf("%s%s\n", problem ? "PROBLEM: " : "", line);
}

int
cmd_audit(int argc, char **argv)
{
    static const char usage[] =
        "lux audit --dir DIR [--public-key FILE]... [--witness FILE] [--window N]\n"
        "       lux audit OUT.db [--public-key FILE]...";
    const char *dir = NULL, *file = NULL, *witness = NULL;
    unsigned long window = 0;
    char pkpath[PATH_MAX], wpath[PATH_MAX];
    db_ckpt_keys_t keys = {0};
    int nkeyfiles = 0;
    db_cluster_t c;
    static const struct option opts[] = {
        {"dir", required_argument, 0, 'd'},     {"public-key", required_argument, 0, 'k'},
        {"witness", required_argument, 0, 'w'}, {"window", required_argument, 0, 'n'}, {0}};
    lux_opt_t cl = {.cmd = "audit", .usage = usage, .opts = opts};
    int opt;
    while ((opt = lux_opt_next(&cl, argc, argv)) != -1) {
        if (opt == 'd')
            dir = optarg;
        else if (opt == 'k') {
            /* several: a key rotation leaves checkpoints of each key */
            if (db_ckpt_keys_add(&keys, optarg))
                return lux_fail("audit", "--public-key: %s", lux_errmsg());
            nkeyfiles++;
        }
        else if (opt == 'w')
            witness = optarg;
        else if (opt == 'n') {
            if (!lux_opt_uint(&cl, "--window", 1ul << 40, false, &window))
                return 2;
        } else
            return cl.status;
    }
    if (!lux_opt_args(&cl, argc, argv, dir ? 0 : 1, dir ? 0 : 1,
                      "--dir DIR (or a file lux pull wrote)"))
        return 2;
    if (!dir)
        file = argv[optind];
    if (file)
        return lux_pull_audit(file, nkeyfiles ? &keys : NULL);
    if (db_cluster_load(&c, dir))
        return lux_fail("audit", "%s", lux_errmsg());
    /* the public keys and the witness: given, or the cluster's own (its
       key history, else its public key) */
    if (!nkeyfiles) {
        int rc = db_ckpt_keys_cluster(&c, &keys, pkpath, sizeof pkpath);
        if (rc && rc != LUX_ENOTFOUND)
            return lux_fail("audit", "%s", lux_errmsg());
        if (rc)
            printf("no public key (%s): signed checkpoints not checked\n",
                   db_ckpt_public_path(&c, pkpath, sizeof pkpath));
    }
    if (!witness)
        witness = db_ckpt_witness_path(&c, wpath, sizeof wpath);
    if (keys.n > 1)
        printf("checking signatures with %d public keys\n", keys.n);
    db_audit_opts_t o = {.cluster = &c, .keys = keys.n ? &keys : NULL, .witness = witness,
                         .window = window, .say = s_audit_say};
    int bad = db_audit_run(&o, NULL);
    if (bad < 0)
        return lux_fail("audit", "%s", lux_errmsg());
    if (bad) {
        printf("%d problem%s found: the log failed the audit\n", bad, bad == 1 ? "" : "s");
        return 1;
    }
    printf("every replica's hash chain verified; the replicas of each shard agree%s\n",
           keys.n ? " and match every signed checkpoint" : "");
    return 0;
}

/* 4001-actor: actors on the embedded default. Calls through one handle
   run in order; handles passed to tasks are called from there too, and
   the order the actor applied its calls is the order of its actor_call
   events; names, kill, checkpoints on demand; and bad input: a method
   that does not exist, a call to a killed actor, a constructor that
   fails, a corrupt checkpoint to load, each a clear error naming the
   actor and the call. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "db/db_query.h"
#include "exec/exec_proto.h"
#include "util/util_buf.h"
#include "util/util_err.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define M 1000003

static int64_t
s_i64(lux_t *lx, const lux_ref_t *r, int k)
{
    lux_val_t v;
    if (lux_get(lx, r, &v, 20000) || v.size < 8 * (size_t) (k + 1))
        return -1;
    return ((const int64_t *) v.data)[k];
}

/* add(caller, x) on a, returning its ref. */
static lux_ref_t
s_add(lux_t *lx, const lux_actor_t *a, int64_t caller, int64_t x)
{
    lux_ref_t r;
    memset(&r, 0, sizeof r);
    if (lux_actor_call(lx, a, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&x, 8)}, 1,
                       &r))
        diag("add: %s", lux_errmsg());
    return r;
}

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 64 << 20,
                        .workers = 2};
    char dir[PATH_MAX], hex[33];
    lux_t *lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());

    /* --- order through one handle ------------------------------------------------------ */
    lux_actor_t a;
    int64_t h0 = 7;
    int rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                              &(lux_actor_opts_t) {.name = "acc"}, &a);
    is_int(rc, 0, "create an Acc actor named acc");
    lux_actor_hex(&a, hex);
    enum { N = 2000 };
    lux_ref_t *refs = calloc(N, sizeof *refs);
    for (int i = 0; i < N; i++)
        refs[i] = s_add(lx, &a, 0, i);
    int64_t h = h0, sum = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        h = (h * 31 + i) % M;
        sum = (sum + i) % M;
        if (s_i64(lx, &refs[i], 0) != h || s_i64(lx, &refs[i], 1) != sum)
            bad++;
    }
    lux_free(lx, N, refs);
    is_int(bad, 0, "%d calls through one handle ran in the order they were made", N);
    lux_ref_t g;
    lux_actor_call(lx, &a, "get", 0, NULL, 1, &g);
    is_int(s_i64(lx, &g, 1), N, "the actor applied each call once");

    /* --- handles passed to tasks ----------------------------------------------------------- */
    lux_ref_t t[3];
    for (int64_t c = 1; c <= 3; c++) {
        int64_t n = 300;
        rc = lux_call(lx, "t_acc_caller", 3,
                      (lux_arg_t[]) {LUX_VAL(&a, sizeof a), LUX_VAL(&c, 8), LUX_VAL(&n, 8)}, 1,
                      &t[c - 1]);
        if (rc)
            diag("t_acc_caller: %s", lux_errmsg());
    }
    for (int64_t c = 1; c <= 3; c++) {
        int64_t want = 0, s = 0;
        for (int64_t i = 0; i < 300; i++) {
            s = (s + c * 1000 + i) % M;
            want = (want + s) % M;
        }
        is_int(s_i64(lx, &t[c - 1], 0), want, "task caller %lld saw its own calls in its order",
               (long long) c);
    }
    lux_actor_call(lx, &a, "get", 0, NULL, 1, &g);
    int64_t final_h = s_i64(lx, &g, 0);
    is_int(s_i64(lx, &g, 1), N + 900, "the actor applied the driver's and the tasks' calls");

    /* --- a handle passed to another actor ---------------------------------------------- */
    lux_actor_t fw;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)}, NULL, &fw);
    int64_t c5 = 5, x5 = 77;
    lux_ref_t fr;
    if (!rc)
        rc = lux_actor_call(lx, &fw, "forward", 3,
                            (lux_arg_t[]) {LUX_VAL(&a, sizeof a), LUX_VAL(&c5, 8), LUX_VAL(&x5, 8)},
                            1, &fr);
    is_int(rc ? -1 : s_i64(lx, &fr, 1), 77,
           "an actor given the handle calls it too (caller 5's sum is what it added)");
    lux_actor_call(lx, &a, "get", 0, NULL, 1, &g);
    final_h = s_i64(lx, &g, 0);
    is_int(s_i64(lx, &g, 1), N + 901, "... and the first actor applied that call");

    /* --- a call waiting for the result of the call before it ---------------------------- */
    /* Made together, the two calls go to the actor's worker in one batch;
       the second waits (a ref passed inside a value) for the first's
       result, which the worker must report before it waits. Also with
       room in the store held by the waiting call, which the node must not
       take back when that report comes. */
    for (int room = 0; room <= 1; room++) {
        int64_t n = 256 << 10, x = 40 + room;
        lux_ref_t first = s_add(lx, &fw, 6, x), second;
        lux_val_t v;
        memset(&second, 0, sizeof second);
        rc = lux_actor_call(lx, &fw, "getref", room ? 2 : 1,
                            (lux_arg_t[]) {LUX_VAL(first.b, sizeof first.b), LUX_VAL(&n, 8)}, 1,
                            &second);
        if (!rc)
            rc = lux_get(lx, &second, &v, 20000);
        if (rc == LUX_ETIMEDOUT)
            bail("a call waiting for the call before it hung: %s", lux_errmsg());
        ok(rc == 0 && v.size == (room ? (size_t) n : 16) && s_i64(lx, &second, 1) == s_i64(lx, &first, 1),
           "a call gets the result of the call made just before it%s (%s)",
           room ? ", holding room in the store" : "", rc ? lux_errmsg() : "ok");
        lux_free(lx, 1, &first);
        lux_free(lx, 1, &second);
    }

    /* --- a method calling its own actor ----------------------------------------------------- */
    /* The call runs after the method returns: left alone it is applied;
       waited for (lux_get, lux_wait), it fails at once instead of hanging. */
    for (int64_t wait = 0; wait <= 2; wait++) {
        lux_ref_t sr, gn;
        lux_val_t v;
        int64_t before, after;
        lux_actor_call(lx, &fw, "get", 0, NULL, 1, &gn);
        before = s_i64(lx, &gn, 1);
        lux_free(lx, 1, &gn);
        rc = lux_actor_call(lx, &fw, "selfcall", 2,
                            (lux_arg_t[]) {LUX_VAL(&fw, sizeof fw), LUX_VAL(&wait, 8)}, 1, &sr);
        if (!rc)
            rc = lux_get(lx, &sr, &v, 40000);
        if (rc == LUX_ETIMEDOUT)
            bail("a method waiting for a call to its own actor hung");
        if (wait == 0)
            is_int(rc, 0, "a method may call its own actor without waiting (%s)",
                   rc ? lux_errmsg() : "ok");
        else
            /* without the check, the method's own 30 s wait would end in
               ETIMEDOUT, not in this message */
            ok(rc == LUX_ETASK && strstr(lux_errmsg(), "own actor") &&
                   strstr(lux_errmsg(), "would deadlock"),
               "waiting with %s for a call to its own actor fails with LUX_EDEADLK: %s",
               wait == 1 ? "lux_get" : "lux_wait", lux_errmsg());
        lux_free(lx, 1, &sr);
        lux_actor_call(lx, &fw, "get", 0, NULL, 1, &gn);
        after = s_i64(lx, &gn, 1);
        lux_free(lx, 1, &gn);
        is_int(after - before, 1, "  the call it made ran after it, once");
    }

    /* --- resources ------------------------------------------------------------------------ */
    lux_actor_t gpu;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                          &(lux_actor_opts_t) {.resources = "GPU=1"}, &gpu);
    lux_ref_t gr;
    lux_val_t gv;
    lux_actor_call(lx, &gpu, "get", 0, NULL, 1, &gr);
    rc = lux_get(lx, &gr, &gv, 20000);
    ok(rc != 0 && strstr(lux_errmsg(), "GPU=1") && strstr(lux_errmsg(), "none"),
       "an actor asking for a resource the node lacks fails, saying so: %s", lux_errmsg());

    /* --- names ------------------------------------------------------------------------------ */
    lux_actor_t found;
    rc = lux_actor_lookup(lx, "acc", &found, 0);
    ok(rc == 0 && memcmp(&found, &a, sizeof a) == 0, "lookup by name finds it");
    rc = lux_actor_lookup(lx, "nobody", &found, 0);
    is_int(rc, LUX_ENOTFOUND, "a name nobody has: LUX_ENOTFOUND (%s)", lux_errmsg());
    rc = lux_actor_lookup(lx, "nobody", &found, 200);
    is_int(rc, LUX_ETIMEDOUT, "waiting 200 ms for it: LUX_ETIMEDOUT (%s)", lux_errmsg());

    /* --- bad input ----------------------------------------------------------------------- */
    lux_ref_t r;
    lux_val_t v;
    rc = lux_actor_call(lx, &a, "nope", 0, NULL, 1, &r);
    is_int(rc, 0, "a call of a method that does not exist returns a ref");
    rc = lux_get(lx, &r, &v, 20000);
    ok(rc != 0 && strstr(lux_errmsg(), "no method 'nope'") && strstr(lux_errmsg(), hex) &&
           strstr(lux_errmsg(), "Acc"),
       "... whose get fails naming the actor, the class and the method: %s", lux_errmsg());
    lux_actor_call(lx, &a, "fail", 0, NULL, 1, &r);
    rc = lux_get(lx, &r, &v, 20000);
    ok(rc != 0 && strstr(lux_errmsg(), "asked to fail") && strstr(lux_errmsg(), "call "),
       "a method that fails: its error, naming the call: %s", lux_errmsg());
    rc = lux_actor_create(lx, "Nope", 0, NULL, NULL, &found);
    is_int(rc, LUX_ENOTFOUND, "an unknown class: LUX_ENOTFOUND (%s)", lux_errmsg());
    int64_t neg = -1;
    lux_actor_t b;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&neg, 8)}, NULL, &b);
    lux_actor_call(lx, &b, "get", 0, NULL, 1, &r);
    rc = lux_get(lx, &r, &v, 20000);
    ok(rc != 0 && strstr(lux_errmsg(), "constructor failed") &&
           strstr(lux_errmsg(), "negative start"),
       "a constructor that fails: calls fail with its message: %s", lux_errmsg());
    lux_actor_t dup;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                          &(lux_actor_opts_t) {.name = "acc"}, &dup);
    ok(rc == LUX_EEXIST && strstr(lux_errmsg(), "is taken"),
       "a second actor named acc is refused (t/9014 has more): %s", lux_errmsg());

    /* --- kill --------------------------------------------------------------------------- */
    rc = lux_actor_kill(lx, &a);
    is_int(rc, 0, "kill it");
    r = s_add(lx, &a, 0, 1);
    rc = lux_get(lx, &r, &v, 20000);
    ok(rc != 0 && strstr(lux_errmsg(), "killed") && strstr(lux_errmsg(), hex),
       "a call to the killed actor fails, naming it: %s", lux_errmsg());
    rc = lux_actor_lookup(lx, "acc", &found, 0);
    is_int(rc, LUX_ENOTFOUND, "its name is free again");

    /* --- restart from a checkpoint, and a corrupt one ------------------------------------ */
    lux_actor_t c;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                          &(lux_actor_opts_t) {.max_restarts = 2}, &c);
    for (int i = 0; i < 50; i++)
        s_add(lx, &c, 1, i);
    rc = lux_actor_checkpoint(lx, &c);
    is_int(rc, 0, "checkpoint on demand (%s)", rc ? lux_errmsg() : "ok");
    for (int i = 50; i < 60; i++)
        s_add(lx, &c, 1, i);
    lux_actor_call(lx, &c, "pid", 0, NULL, 1, &r);
    pid_t pid = (pid_t) s_i64(lx, &r, 0);
    ok(pid > 0 && kill(pid, SIGKILL) == 0, "kill -9 its process (%d)", (int) pid);
    lux_actor_call(lx, &c, "get", 0, NULL, 1, &r);
    h = h0, sum = 0;
    for (int i = 0; i < 60; i++) {
        h = (h * 31 + i + 1) % M;
        sum = (sum + i) % M;
    }
    is_int(s_i64(lx, &r, 0), h, "after the restart its state is the same (checkpoint + replay)");
    is_int(s_i64(lx, &r, 1), 60, "... each call applied once");
    lux_actor_call(lx, &c, "pid", 0, NULL, 1, &r);
    pid_t pid2 = (pid_t) s_i64(lx, &r, 0);
    ok(pid2 > 0 && pid2 != pid, "it runs in a new process (%d)", (int) pid2);
    lux_actor_call(lx, &c, "corrupt", 0, NULL, 0, NULL);
    rc = lux_actor_checkpoint(lx, &c);
    is_int(rc, 0, "a checkpoint whose bytes are corrupt is made");
    ok(pid2 > 0 && kill(pid2, SIGKILL) == 0, "kill -9 its process again");
    r = s_add(lx, &c, 1, 99);
    rc = lux_get(lx, &r, &v, 20000);
    ok(rc != 0 && strstr(lux_errmsg(), "loading its checkpoint") &&
           strstr(lux_errmsg(), "corrupt") && strstr(lux_errmsg(), lux_actor_hex(&c, hex)),
       "loading the corrupt checkpoint fails, and the call says so: %s", lux_errmsg());

    free(refs);
    snprintf(dir, sizeof dir, "%s", lux_dir(lx));
    lux_shutdown(&lx);

    /* --- the log ------------------------------------------------------------------------- */
    db_query_t *q = fx_query_open(dir);
    lux_actor_hex(&a, hex);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM actor_calls WHERE actor_id = '%s'", hex);
    ok(fx_count(q, "%s", sql) >= N + 901, "the log has every call of the first actor (%lld)",
       (long long) fx_count(q, "%s", sql));
    snprintf(sql, sizeof sql,
             "SELECT count(DISTINCT shard) FROM actor_calls WHERE actor_id = '%s'", hex);
    is_int(fx_count(q, "%s", sql), 1, "its actor_call events are all in its shard");
    /* the order of its events is the order it applied them: re-apply the
       adds in log order, from the bodies, and reach the state it reported */
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql,
             "SELECT name, body FROM event WHERE kind = 12 AND lower(hex(actor)) = '%s' "
             "ORDER BY seq", hex);
    int64_t hl = h0, nl = 0, undecoded = 0;
    if (db_query_prepare(q, sql, &st, NULL) == 0)
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *m = (const char *) sqlite3_column_text(st, 0);
            exec_spec_t sp = {0};
            if (exec_call_from_body(&sp, sqlite3_column_blob(st, 1),
                                    (size_t) sqlite3_column_bytes(st, 1))) {
                undecoded++;
                continue;
            }
            if (strcmp(m, "add") != 0)
                continue;
            util_rd_t rd;
            exec_arg_t x0, x1;
            util_rd_init(&rd, sp.args, sp.args_len);
            if (!exec_arg_next(&rd, &x0) || !exec_arg_next(&rd, &x1) || x0.size != 8 ||
                x1.size != 8) {
                undecoded++;
                continue;
            }
            int64_t cal, x;
            memcpy(&cal, x0.data, 8);
            memcpy(&x, x1.data, 8);
            hl = (hl * 31 + x + cal) % M;
            nl++;
        }
    sqlite3_finalize(st);
    is_int(undecoded, 0, "every actor_call event's body decodes");
    ok(nl == N + 901 && hl == final_h,
       "re-applying the %lld logged adds in log order reaches the state it reported", (long long) nl);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT call_number, row_number() OVER (ORDER BY seq) AS k "
             "FROM actor_calls WHERE actor_id = '%s') WHERE call_number != k", hex);
    is_int(fx_count(q, "%s", sql), 0, "call numbers follow the log's order");
    lux_actor_hex(&c, hex);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM actor_restarts WHERE actor_id = '%s'", hex);
    is_int(fx_count(q, "%s", sql), 2, "lux sql shows the second actor's two restarts");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM actor_restarts WHERE actor_id = '%s' AND checkpoint_call = 50 "
             "AND calls_replayed BETWEEN 11 AND 12",
             hex);
    is_int(fx_count(q, "%s", sql), 1, "the first loaded the checkpoint of call 50 and replayed 11 calls (12 with the get sent before the death was seen)");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM actors WHERE actor_id = '%s' AND state = 'dead'", hex);
    is_int(fx_count(q, "%s", sql), 1, "and the actor is dead in the log");
    db_query_close(&q);
    return done_testing();
}

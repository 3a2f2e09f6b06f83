/* 1050-pull-checkpoint: `lux pull` verifies the signed checkpoints of the
   witness against the events it copies, and its file's views are those of
   sql/views.sql (not copies that drift from them).

   A 2-shard, 2-replica cluster takes events (notes, and tasks: one
   finished, one cancelled) and stops, which signs a checkpoint of each
   shard into DIR/witness. Then:
     - a pull of the untouched log verifies both checkpoints and keeps them
       in the file, and `lux audit OUT.db --public-key K` checks them;
     - every view of the file gives what `lux sql --dir` gives on the
       cluster, the cancelled task's status included;
     - every replica forged alike (an event edited, every hash after it
       recomputed, so that the hash chain alone verifies): the pull fails,
       naming the shard and the checkpoint's seq;
     - a witness line edited (its signature fails): the pull fails, naming
       the line, shard and seq;
     - the last event of shard 0 cut from every replica: the pull fails,
       saying the log ends before the signed checkpoint;
     - a checkpoint row altered in a pulled file: lux audit OUT.db fails. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/tamper.h"
#include "db/db_ckpt.h"
#include "db/db_client.h"
#include "db/db_store.h"
#include "util/util_err.h"
#include "util/util_fs.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static db_cluster_t s_c;
static char s_out[65536], s_err[65536];

static void
s_append(int n)
{
    db_client_t *cl = fx_client(&s_c, 64, 1024);
    fx_notes_spread(cl, n, "an event to pull", 0); /* notes in both shards */
    util_id_t job;
    util_id_random(&job);
    /* two tasks: one finishes, one is cancelled */
    for (int k = 0; k < 2; k++) {
        util_id_t task;
        util_id_random(&task);
        db_event_t s = {.kind = DB_K_task_submitted};
        DB_SET_ID(&s, job, DB_F_JOB, &job);
        DB_SET_ID(&s, task, DB_F_TASK, &task);
        DB_SET_INT(&s, idx, DB_F_IDX, 1);
        s.name = k ? "cancelled_fn" : "finished_fn";
        s.name_len = (uint32_t) strlen(s.name);
        s.mask |= DB_F_NAME;
        db_event_t f = {.kind = k ? DB_K_task_cancelled : DB_K_task_finished};
        DB_SET_ID(&f, job, DB_F_JOB, &job);
        DB_SET_ID(&f, task, DB_F_TASK, &task);
        DB_SET_INT(&f, attempt, DB_F_ATTEMPT, 1);
        if (db_client_append(cl, &s) || db_client_append(cl, &f))
            bail("append: %s", lux_errmsg());
    }
    if (db_client_sync(cl, 60000))
        bail("sync: %s", lux_errmsg());
    db_client_destroy(&cl);
}


/* lux pull --dir dir into a new file; its exit status */
static int
s_pull(const char *dir, const char *name, char *file, size_t n)
{
    snprintf(file, n, "%s/%s.db", tap_tmpdir(), name);
    unlink(file);
    return fx_lux(s_out, sizeof s_out, s_err, sizeof s_err, "pull --dir %s %s", dir, file);
}

int
main(void)
{
    char dir[PATH_MAX], path[PATH_MAX], file[PATH_MAX], frag[PATH_MAX + 128], pub[PATH_MAX];
    fx_start(&s_c, 2, 2, "--log-only");
    s_append(300);
    fx_stop(&s_c);
    db_ckpt_public_path(&s_c, pub, sizeof pub);

    db_chain_t chain[2];
    db_chain_load_state(&s_c, chain);
    uint32_t tail = chain[0].m[chain[0].n - 1].index;
    uint64_t last = tamper_last(tamper_db(s_c.dir, 0, tail, path, sizeof path));
    ok(last > 10, "shard 0 holds %llu events", (unsigned long long) last);

    /* the untouched log */
    int rc = s_pull(s_c.dir, "good", file, sizeof file);
    ok(rc == 0 && strstr(s_out, "2 signed checkpoints verified"),
       "the untouched log: pulled, its 2 signed checkpoints verified (%d)", rc);
    if (rc || !strstr(s_out, "2 signed checkpoints verified"))
        diag("%s%s", s_out, s_err);
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit %s --public-key %s", file, pub);
    ok(rc == 0 && strstr(s_out, "2 signed checkpoints match the events, every signature"),
       "lux audit OUT.db --public-key K checks the checkpoints the file keeps (%d)", rc);
    if (rc)
        diag("%s", s_out);

    /* the file's views are views.sql's */
    const char *views[] = {"events", "tasks",       "retries",        "objects", "task_deps",
                           "actors", "actor_calls", "actor_restarts", "nodes",   "jobs"};
    for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
        char a[65536], b[65536];
        fx_lux(a, sizeof a, NULL, 0, "sql --dir %s --csv \"SELECT * FROM %s ORDER BY shard, seq\"",
               s_c.dir, views[v]);
        fx_lux(b, sizeof b, NULL, 0, "sql %s --csv \"SELECT * FROM %s ORDER BY shard, seq\"", file,
               views[v]);
        ok(strcmp(a, b) == 0 && *a, "view %s: the file answers as the cluster does", views[v]);
        if (strcmp(a, b) != 0)
            diag("cluster:\n%.400s\nfile:\n%.400s", a, b);
    }
    fx_lux(s_out, sizeof s_out, NULL, 0,
           "sql %s --csv \"SELECT status FROM tasks WHERE function = 'cancelled_fn'\"", file);
    ok(strstr(s_out, "cancelled") != NULL, "the file's tasks view says 'cancelled' (%s)", s_out);

    /* every replica forged alike: only the checkpoint tells */
    uint64_t at = last / 2;
    tamper_copy(s_c.dir, "forged", dir, sizeof dir);
    for (uint32_t r = 0; r < 2; r++)
        tamper_forge(tamper_db(dir, 0, r, path, sizeof path), &s_c.id, 0, tamper_edit_ts, &at);
    rc = s_pull(dir, "forged", file, sizeof file);
    snprintf(frag, sizeof frag, "shard 0 seq %llu: the log's hash there is",
             (unsigned long long) last);
    ok(rc == 1 && strstr(s_err, frag) && strstr(s_err, "the one signed"),
       "every replica forged alike (hashes recomputed): the pull fails naming shard 0 seq %llu "
       "(%d)", (unsigned long long) last, rc);
    if (rc != 1 || !strstr(s_err, frag))
        diag("%s%s", s_out, s_err);

    /* a witness line edited: its signature fails */
    tamper_copy(s_c.dir, "witness", dir, sizeof dir);
    tamper_sh("sed -i '1s/ 0 \\([0-9]*\\) / 0 1\\1 /' '%s/witness'", dir);
    rc = s_pull(dir, "witness", file, sizeof file);
    ok(rc == 1 && strstr(s_err, "line 1: shard 0 seq 1") && strstr(s_err, "bad signature"),
       "a witness line edited: the pull refuses it, naming line, shard and seq (%d)", rc);
    if (rc != 1)
        diag("%s%s", s_out, s_err);
    ok(!util_exists(file), "...before creating OUT.db");

    /* the last event cut from every replica of shard 0 */
    tamper_copy(s_c.dir, "cut", dir, sizeof dir);
    for (uint32_t r = 0; r < 2; r++)
        tamper_exec(tamper_db(dir, 0, r, path, sizeof path), "DELETE FROM event WHERE seq > %llu",
               (unsigned long long) last - 1);
    rc = s_pull(dir, "cut", file, sizeof file);
    snprintf(frag, sizeof frag, "shard 0: the log ends at seq %llu, before the signed checkpoint"
             " at seq %llu", (unsigned long long) last - 1, (unsigned long long) last);
    ok(rc == 1 && strstr(s_err, frag), "the last event cut: the pull fails: %s", s_err);

    /* a checkpoint altered in a pulled file */
    snprintf(path, sizeof path, "%s/good.db", tap_tmpdir());
    snprintf(file, sizeof file, "%s/altered.db", tap_tmpdir());
    tamper_sh("cp '%s' '%s'", path, file);
    tamper_exec(file, "UPDATE checkpoint SET ts = ts + 1 WHERE shard = 1");
    rc = fx_lux(s_out, sizeof s_out, NULL, 0, "audit %s --public-key %s", file, pub);
    ok(rc == 1 && strstr(s_out, "shard 1: BROKEN at seq") && strstr(s_out, "signature fails"),
       "a checkpoint altered in the file: lux audit OUT.db --public-key fails (%d)", rc);
    if (rc != 1)
        diag("%s", s_out);
    return done_testing();
}

/* 5305-master-kill: the chain master (inside the supervisor) is killed
   with SIGKILL under a running log (2 shards x 2 replicas, --log-only).
   As the README says, the replicas outlive it and keep serving their last
   configuration: they are the same processes, and a client that was
   appending goes on appending, every event acknowledged (before, they
   died with the supervisor through PR_SET_PDEATHSIG and appends stopped).
   `lux start --head` on the directory starts a new supervisor that takes
   the running replicas back (same pids, serving), appends go on, and
   `lux stop` stops everything, the adopted replicas included. Then the
   log holds every acknowledged event exactly once. */
#include "tap.h"
#include "lib/fx.h"
#include "db/db_client.h"
#include "db/db_query.h"
#include "util/util_err.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static db_client_t *s_cl;
static util_id_t s_job;
static int64_t s_appended;
static pid_t s_pids[16];
static int s_np;

static void
s_kill_all(void)
{
    for (int i = 0; i < s_np; i++)
        if (s_pids[i] > 0 && util_proc_alive(s_pids[i]))
            kill(s_pids[i], SIGKILL);
}

/* Append n events and wait for them all to be acknowledged (60 s). */
static int
s_append_sync(int n)
{
    for (int i = 0; i < n; i++) {
        db_event_t e = {.kind = DB_K_note};
        DB_SET_ID(&e, job, DB_F_JOB, &s_job);
        DB_SET_INT(&e, idx, DB_F_IDX, s_appended);
        db_event_set_info(&e, "5305");
        int rc = db_client_append(s_cl, &e);
        if (rc)
            return rc;
        s_appended++;
    }
    return db_client_sync(s_cl, 60000);
}

int
main(void)
{
    db_cluster_t c;
    fx_start(&c, 2, 2, "--log-only");
    tap_atexit(s_kill_all);
    s_np = fx_pids(&c, s_pids, 16);
    if (s_np != 5)
        bail("expected a supervisor and 4 replicas, found %d pids", s_np);
    util_id_random(&s_job);
    db_client_opts_t o = {.cluster = &c, .timeout_ms = 60000};
    if (!(s_cl = db_client_new(&o)))
        bail("db_client_new: %s", lux_errmsg());
    is_int(s_append_sync(1000), 0, "1000 events acknowledged");

    ok(kill(s_pids[0], SIGKILL) == 0, "the supervisor and its chain master (pid %d) killed",
       (int) s_pids[0]);
    for (int64_t end = util_mono_ms() + 30000; util_mono_ms() < end && util_proc_alive(s_pids[0]);)
        usleep(10000);
    int rc = s_append_sync(1000);
    is_int(rc, 0, "1000 more events acknowledged with no master (%s)", rc ? lux_errmsg() : "ok");
    int alive = 0;
    for (int i = 1; i < s_np; i++)
        alive += util_proc_alive(s_pids[i]);
    is_int(alive, 4, "the 4 replicas outlive it");

    char err[2048];
    rc = fx_lux(NULL, 0, err, sizeof err, "start --head --dir %s --log-only", c.dir);
    is_int(rc, 0, "lux start --head restarts the head (%s)", rc ? err : "ok");
    pid_t now[16];
    int nn = fx_pids(&c, now, 16);
    if (nn > 0 && s_np < 16)
        s_pids[s_np++] = now[0]; /* the new supervisor, killed at exit if need be */
    int same = 0;
    for (int i = 1; i < nn; i++)
        for (int j = 1; j < 5; j++)
            same += now[i] == s_pids[j];
    is_int(same, 4, "its master took the running replicas back (same pids)");
    bool whole = fx_wait_chain(&c, 0, 2, 30000) && fx_wait_chain(&c, 1, 2, 30000);
    ok(whole, "both chains whole and serving");
    rc = s_append_sync(1000);
    is_int(rc, 0, "1000 more events acknowledged (%s)", rc ? lux_errmsg() : "ok");
    db_client_destroy(&s_cl);

    rc = fx_lux(NULL, 0, err, sizeof err, "stop --dir %s", c.dir);
    is_int(rc, 0, "lux stop (%s)", rc ? err : "ok");
    alive = 0;
    for (int j = 1; j < 5; j++)
        for (int64_t end = util_mono_ms() + 30000;
             util_mono_ms() < end && util_proc_alive(s_pids[j]);)
            usleep(10000);
    for (int j = 1; j < 5; j++)
        alive += util_proc_alive(s_pids[j]);
    is_int(alive, 0, "the adopted replicas are stopped too");

    db_query_t *q = fx_query_open(c.dir);
    char hex[UTIL_ID_HEX];
    int64_t n = fx_count(q,
                         "SELECT count(DISTINCT idx) FROM events WHERE kind = 'note' AND job_id = '%s'",
                         util_id_hex(&s_job, hex));
    is_int((int) n, (int) s_appended, "the log holds every acknowledged event");
    db_query_close(&q);
    return done_testing();
}

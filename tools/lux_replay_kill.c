/*  lux_replay_kill - re-enacting a recorded actor restart (see
    lux_replay_kill.h): which process to kill is read from the replay's own
    log (the worker of the call's task_finished event), and only a `lux
    worker` child of this process is ever killed: the replay's embedded
    node manager runs here, so its workers are its children. The replay
    waits for the restart's actor_restarted event before it goes on, as
    the recorded driver's later calls came after the recorded restart. */
#include "lux_replay_kill.h"
#include "lux_hist.h"
#include "lux.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define S_POLL_US 10000

/* The first column of st's first row (bound already), or -1. */
static int64_t
s_value(sqlite3_stmt *st)
{
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return v;
}

int
lux_replay_kill(const char *dir, const uint8_t call[16], const uint8_t actor[16],
                int timeout_ms, pid_t *killed, char *why, size_t n)
{
    int rc = 0;
    int64_t deadline = util_mono_ms() + timeout_ms, pid = -1, before, now = -1;
    *killed = 0;
    lux_hist_t *h = lux_hist_open(dir);
    if (!h) {
        snprintf(why, n, "the replay's log in %s: %s", dir, lux_errmsg());
        return LUX_EIO;
    }
    sqlite3_stmt *w = lux_hist_prepare(h, "SELECT worker FROM event WHERE kind = 5 AND"
                                          " task = ?1 AND worker IS NOT NULL"
                                          " ORDER BY seq DESC LIMIT 1");
    sqlite3_stmt *c = lux_hist_prepare(h, "SELECT count(*) FROM event WHERE kind = 14 AND"
                                          " actor = ?1");
    if (!w || !c) {
        snprintf(why, n, "the replay's log: %s", lux_errmsg());
        rc = LUX_ESQL;
        goto out;
    }
    sqlite3_bind_blob(w, 1, call, 16, SQLITE_STATIC);
    sqlite3_bind_blob(c, 1, actor, 16, SQLITE_STATIC);
    before = s_value(c);
    /* the call's result reached the driver; its task_finished may come
       a moment later */
    while ((pid = s_value(w)) <= 0 && util_mono_ms() < deadline)
        usleep(S_POLL_US);
    if (pid <= 0) {
        snprintf(why, n, "the replayed call's task_finished event (with its process) did not "
                 "come within %d ms", timeout_ms);
        rc = LUX_ETIMEDOUT;
        goto out;
    }
    if (util_proc_ppid((pid_t) pid) != getpid() || !util_proc_is_worker((pid_t) pid)) {
        snprintf(why, n, "process %lld that ran the replayed call is not a live worker of the "
                 "replay's cluster (it restarted already, or the call ran elsewhere)",
                 (long long) pid);
        rc = LUX_ENOTFOUND;
        goto out;
    }
    if (kill((pid_t) pid, SIGKILL)) {
        snprintf(why, n, "kill -9 %lld: %s", (long long) pid, strerror(errno));
        rc = LUX_EIO;
        goto out;
    }
    *killed = (pid_t) pid;
    while ((now = s_value(c)) <= before && util_mono_ms() < deadline)
        usleep(S_POLL_US);
    if (now <= before) {
        snprintf(why, n, "its process %lld was killed, and no actor_restarted event came within "
                 "%d ms", (long long) pid, timeout_ms);
        rc = LUX_ETIMEDOUT;
    }
out:
    sqlite3_finalize(w);
    sqlite3_finalize(c);
    lux_hist_close(&h);
    return rc;
}

/* 1019-db-restart-hooks: which test hooks a restarted replica is given.
   The supervisor restarted every replica with its own environment, so a
   hook a test set for the processes it started (LUX_TEST_TAKE_FAIL fails
   one replica's take once, the gates hold the first process armed)
   reached every replica restarted after them, for the cluster's life.
   Now a replica started again gets only db_replica_restart_hooks:
   LUX_TEST_REPLICA_HOLD (it holds restarts back: t/5020, t/5021) and
   LUX_TEST_APPEND_GATE (a restarted head's appends gated: t/5304).

   A log-only head of one shard x 3 replicas is started with five hooks
   set, each harmless here (no gate armed, a take that fails at a seq
   never reached); the test unsets them. Replica 1's first process has
   all five in /proc/PID/environ; killed -9, its restarted process has
   the two, not the three others; other variables (LUX_ and not) stay. */
#include "tap.h"
#include "lib/fx.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *s_all[] = {"LUX_TEST_REPLICA_HOLD", "LUX_TEST_APPEND_GATE",
                              "LUX_TEST_TAKE_FAIL", "LUX_TEST_COMMIT_GATE",
                              "LUX_TEST_READ_GATE"};

/* Whether pid's environment holds name=value. */
static bool
s_has(pid_t pid, const char *name, const char *value)
{
    char path[64], want[PATH_MAX + 64];
    size_t n = 0;
    snprintf(path, sizeof path, "/proc/%d/environ", (int) pid);
    char *env = util_read_file(path, &n);
    bool found = false;
    snprintf(want, sizeof want, "%s=%s", name, value);
    for (size_t i = 0; env && i < n && !found; i += strlen(env + i) + 1)
        found = strcmp(env + i, want) == 0;
    free(env);
    return found;
}

/* Replica 1's pid, once it runs and its pid is not old; 0 after 30 s. */
static pid_t
s_replica1(const db_cluster_t *c, pid_t old)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/run/replica-0-1.pid", c->dir);
    for (int64_t t0 = util_mono_ms(); util_mono_ms() - t0 < 30000; usleep(20000)) {
        pid_t pid = util_pidfile_read(path);
        if (pid > 0 && pid != old && util_proc_alive(pid))
            return pid;
    }
    return 0;
}

int
main(void)
{
    char dir[PATH_MAX], val[5][PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/hooks", tap_tmpdir());
    if (util_mkdirs(dir, 0700))
        bail("%s", dir);
    for (int k = 0; k < 5; k++) {
        if (k == 2)
            snprintf(val[k], sizeof val[k], "1:1000000000");
        else
            snprintf(val[k], sizeof val[k], "%s/%d", dir, k);
        setenv(s_all[k], val[k], 1);
    }
    setenv("LUX_PLACE_SEED", "1019", 1);
    db_cluster_t c;
    fx_start(&c, 1, 3, "--log-only");
    for (int k = 0; k < 5; k++)
        unsetenv(s_all[k]);
    ok(fx_wait_chain(&c, 0, 3, 30000), "a chain of 3");

    pid_t first = s_replica1(&c, 0);
    bool all = first > 0;
    for (int k = 0; k < 5 && all; k++)
        all = s_has(first, s_all[k], val[k]);
    ok(all, "replica 1's first process (pid %d) has the five hooks", (int) first);

    if (first > 0)
        kill(first, SIGKILL);
    pid_t again = s_replica1(&c, first);
    ok(again > 0, "killed -9, it is restarted (pid %d)", (int) again);
    for (int k = 0; k < 5; k++) {
        bool want = k < 2, has = again > 0 && s_has(again, s_all[k], val[k]);
        ok(again > 0 && has == want, "the restarted process %s %s", has ? "has" : "has no",
           s_all[k]);
    }
    ok(again > 0 && s_has(again, "LUX_PLACE_SEED", "1019"),
       "...and the other variables, LUX_PLACE_SEED among them");
    ok(fx_wait_chain(&c, 0, 3, 60000), "it rejoined: the chain is whole");
    fx_stop(&c);
    return done_testing();
}

/*  9016-fd-limit-init: lux_init under a low open-files limit (with
    t/9015-fd-limit.sh for the lux command). Before, ZeroMQ aborted the
    process (czmq's zsock_new_checked assertion) as soon as a socket found
    no descriptor. Now a soft limit below what Lux needs is raised, and a
    hard one refuses with an error naming the limit. Each case runs in a
    child process, since a lowered hard limit cannot be raised again.
*/
#include "lux.h"
#include "tap.h"
#include "lib/graph.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* In a child: open files limited to soft/hard (0: as it is), then
   lux_init, one task and its result. Exit 0 when the task's value came,
   3 when lux_init failed (its message in msg's file), 4 for the task. */
static int
s_child(rlim_t soft, rlim_t hard, const char *msgfile)
{
    pid_t pid = fork();
    if (pid < 0)
        bail("fork: %s", strerror(errno));
    if (pid > 0) {
        int st = 0;
        waitpid(pid, &st, 0);
        return st;
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (hard)
        rl.rlim_max = hard;
    rl.rlim_cur = soft;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        _exit(5);
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .workers = 1};
    lux_t *lx = lux_init(&cfg);
    if (!lx) {
        FILE *f = fopen(msgfile, "w");
        if (f) {
            fputs(lux_errmsg(), f);
            fclose(f);
        }
        _exit(3);
    }
    lux_ref_t ref;
    lux_val_t v;
    int rc = graph_call_big(lx, 7, 1000, &ref);
    rc = rc ? rc : lux_get(lx, &ref, &v, 120000);
    lux_shutdown(&lx);
    _exit(rc ? 4 : 0);
}

int
main(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 1024)
        skip_all("the hard open-files limit here is below 1024");
    char msgfile[4096], msg[1024] = "";
    snprintf(msgfile, sizeof msgfile, "%s/msg", tap_tmpdir());

    int st = s_child(20, 0, msgfile);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "soft limit 20: lux_init raises it, a task runs and its value comes (%s %d)",
       WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

    st = s_child(100, 100, msgfile);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 3, "hard limit 100: lux_init returns NULL (%s %d)",
       WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    FILE *f = fopen(msgfile, "r");
    if (f) {
        size_t n = fread(msg, 1, sizeof msg - 1, f);
        msg[n] = '\0';
        fclose(f);
    }
    ok(strstr(msg, "open-files limit (ulimit -n) is 100") && strstr(msg, "ulimit -n 1024"),
       "... its error names the limit and the fix: %s", msg);
    return done_testing();
}

/* 5301-head-gone: drivers attached to a head (lux_init with its
   directory as the address) while its node manager is killed with
   SIGKILL (the supervisor, which hosts it). Each driver waits on a task
   that would run for ten minutes: one in lux_get, one in lux_wait, one in
   lux_get_many, all with no timeout. Each wait must end with LUX_EDEAD
   and a message naming the node manager at the cluster's directory (not
   spin for ever, as it did), and a call made afterwards must fail the
   same way. The drivers are child processes that write what they got to
   a pipe; the test gives each 60 s, which only a hang reaches, and kills
   only the processes it started (by pid). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "exec/exec_client.h"
#include "util/util_err.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NDRIVERS 3

static const char *s_how[NDRIVERS] = {"lux_get", "lux_wait", "lux_get_many"};

typedef struct {
    int rc;          /* what the wait returned */
    int call_rc;     /* what a lux_call after it returned */
    char msg[400];   /* the wait's lux_errmsg */
    char call_msg[400];
} s_report_t;

/* A driver: connect to the head at dir, start a long task, tell the test
   (one byte on fd), wait the way `how` says, report. */
static void
s_driver(const char *dir, int how, int fd)
{
    lux_config_t cfg = {.address = dir, .module = graph_module()};
    s_report_t r = {0};
    lux_t *lx = lux_init(&cfg);
    if (!lx) {
        r.rc = 1;
        snprintf(r.msg, sizeof r.msg, "lux_init: %s", lux_errmsg());
        if (write(fd, "x", 1) != 1 || write(fd, &r, sizeof r) != sizeof r)
            _exit(3);
        _exit(2);
    }
    int64_t ms = 600000, one = 1;
    lux_ref_t ref[2];
    lux_val_t v[2];
    for (int i = 0; i < 2; i++)
        if (lux_call(lx, "t_sleep", 2, (lux_arg_t[]) {LUX_VAL(&ms, 8), LUX_VAL(&one, 8)}, 1,
                     &ref[i]))
            _exit(4);
    exec_client_flush(lx); /* the node has the tasks before the test kills it */
    if (write(fd, "r", 1) != 1)
        _exit(3);
    if (how == 0)
        r.rc = lux_get(lx, &ref[0], v, -1);
    else if (how == 1)
        r.rc = lux_wait(lx, 2, ref, 1, -1, NULL);
    else
        r.rc = lux_get_many(lx, 2, ref, v, -1);
    snprintf(r.msg, sizeof r.msg, "%s", lux_errmsg());
    lux_ref_t again;
    r.call_rc = lux_call(lx, "t_sleep", 2, (lux_arg_t[]) {LUX_VAL(&ms, 8), LUX_VAL(&one, 8)},
                         1, &again);
    snprintf(r.call_msg, sizeof r.call_msg, "%s", lux_errmsg());
    if (write(fd, &r, sizeof r) != sizeof r)
        _exit(3);
    _exit(0);
}

/* Read n bytes from fd within ms; false on timeout or end. */
static bool
s_read(int fd, void *p, size_t n, int ms)
{
    int64_t deadline = util_mono_ms() + ms;
    size_t got = 0;
    while (got < n) {
        int64_t left = deadline - util_mono_ms();
        struct pollfd pf = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pf, 1, (int) left) <= 0)
            return false;
        ssize_t k = read(fd, (char *) p + got, n - got);
        if (k <= 0)
            return false;
        got += (size_t) k;
    }
    return true;
}

static pid_t s_kids[NDRIVERS + 16];
static int s_nkids;

static void
s_kill_kids(void)
{
    for (int i = 0; i < s_nkids; i++)
        if (s_kids[i] > 0 && util_proc_alive(s_kids[i]))
            kill(s_kids[i], SIGKILL);
}

int
main(void)
{
    db_cluster_t c;
    fx_start(&c, 1, 1, NULL);
    tap_atexit(s_kill_kids);
    pid_t pids[16];
    int np = fx_pids(&c, pids, 16);
    if (np < 2 || pids[0] <= 0)
        bail("no pids for the head (%d)", np);
    /* the replicas too: they may outlive the supervisor */
    for (int i = 1; i < np; i++)
        s_kids[s_nkids++] = pids[i];

    int fds[NDRIVERS];
    pid_t drv[NDRIVERS];
    for (int i = 0; i < NDRIVERS; i++) {
        int p[2];
        if (pipe(p))
            bail("pipe");
        if ((drv[i] = fork()) == 0) {
            close(p[0]);
            s_driver(c.dir, i, p[1]);
        }
        close(p[1]);
        fds[i] = p[0];
        s_kids[s_nkids++] = drv[i];
    }
    for (int i = 0; i < NDRIVERS; i++) {
        char b = 0;
        if (!s_read(fds[i], &b, 1, 60000) || b != 'r') {
            s_report_t r;
            if (b == 'x' && s_read(fds[i], &r, sizeof r, 1000))
                diag("%s", r.msg);
            bail("driver %d did not start its task", i);
        }
    }
    /* the supervisor hosts the node manager: SIGKILL, no goodbye */
    ok(kill(pids[0], SIGKILL) == 0, "the supervisor (pid %d) is killed with SIGKILL",
       (int) pids[0]);
    int64_t deadline = util_mono_ms() + 60000; /* for all of them */
    for (int i = 0; i < NDRIVERS; i++) {
        s_report_t r;
        int64_t left = deadline - util_mono_ms();
        bool got = s_read(fds[i], &r, sizeof r, left > 0 ? (int) left : 1);
        ok(got, "%s with no timeout ends when the node manager dies", s_how[i]);
        if (!got) {
            kill(drv[i], SIGKILL);
            continue;
        }
        is_int(r.rc, LUX_EDEAD, "%s: LUX_EDEAD (%s)", s_how[i], r.msg);
        ok(strstr(r.msg, "the node manager at ") && strstr(r.msg, c.dir) &&
               strstr(r.msg, "is gone"),
           "%s: the message names the node manager at the cluster's directory", s_how[i]);
        is_int(r.call_rc, LUX_EDEAD, "a lux_call after it fails the same way (%s)", r.call_msg);
        int status;
        waitpid(drv[i], &status, 0);
        close(fds[i]);
    }
    return done_testing();
}

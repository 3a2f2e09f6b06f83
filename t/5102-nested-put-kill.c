/* 5102-nested-put-kill: a put made inside a task survives the task's
   death. A task (t_putsub) puts an object and passes it to a subtask
   that waits on a gate (a file); the test kills the task's worker with SIGKILL
   (by its pid, which the task wrote down) while the subtask is pending.
   The retried task puts the same object again while the first subtask
   still holds it; the gate opens, the first subtask runs and finishes,
   and only then does the retry call the subtask again (the test holds it
   until it has seen the first one's result). The retry must find its
   put: before the fix, its second put was dropped as a resend of an
   object that had no owner any more, the object went with the first
   subtask, and the retry failed with "its argument ... was never
   created". On the way, lux_wait on a ref another client made (the
   subtask's) must return when it is done: it waited for ever, for the
   node tells only a ref's maker. Files in the round's directory are the gates and the signs
   (t/lib/testmod.c t_putsub). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUNDS 3
#define PUT_BYTES (256 * 1024) /* above the inline limit: the put goes at once */

/* Wait up to 60 s for dir/name; true when it came. */
static bool
s_wait_file(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < 12000; i++) {
        if (access(path, F_OK) == 0)
            return true;
        usleep(5000);
    }
    diag("%s did not appear within 60 s", path);
    return false;
}

static bool
s_read_file(const char *dir, const char *name, char *buf, size_t n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t k = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[k] = '\0';
    return k > 0;
}

static void
s_touch(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* Whether pid is a live child of this process (one of the embedded
   default's workers). */
static bool
s_is_child(pid_t pid)
{
    pid_t kids[256];
    int n = fx_children(kids, 256);
    for (int i = 0; i < n; i++)
        if (kids[i] == pid)
            return true;
    return false;
}

int
main(void)
{
    lux_t *lx = graph_embedded(2, 64 << 20, "start the embedded default: 2 workers, a 64 MB object store");
    for (int round = 0; round < ROUNDS; round++) {
        char dir[512], buf[128];
        int64_t x = 1000 + round, n = PUT_BYTES;
        lux_ref_t task, sub;
        lux_val_t v;
        snprintf(dir, sizeof dir, "%s/round-%d", tap_tmpdir(), round);
        if (mkdir(dir, 0700) && errno != EEXIST)
            bail("mkdir %s: %s", dir, strerror(errno));
        if (lux_call(lx, "t_putsub", 3,
                     (lux_arg_t[]) {LUX_VAL(&x, 8), LUX_VAL(&n, 8), LUX_VAL(dir, strlen(dir))}, 1,
                     &task))
            bail("lux_call: %s", lux_errmsg());
        lux_wait(lx, 1, &task, 1, 0, NULL); /* send them */
        /* the task put its object and its subtask is at the node, waiting
           for the gate: kill the task's worker */
        bool up = s_wait_file(dir, "sref") && s_read_file(dir, "pid.1", buf, sizeof buf);
        pid_t pid = up ? (pid_t) atoi(buf) : 0;
        ok(up && pid > 0 && s_is_child(pid), "round %d: the task runs in worker %d, its put "
           "passed to a pending subtask", round, (int) pid);
        if (!(up && pid > 0 && s_is_child(pid)))
            continue;
        ok(kill(pid, SIGKILL) == 0, "round %d: kill -9 the task's worker %d", round, (int) pid);
        /* the retry has put the same object again and waits for go */
        bool retried = s_wait_file(dir, "put.2");
        ok(retried, "round %d: the task is retried and puts its object again", round);
        /* the first subtask runs and finishes; seen from here */
        s_touch(dir, "gate");
        bool parsed = s_read_file(dir, "sref", buf, sizeof buf) && lux_ref_parse(&sub, buf) == 0;
        int ready = 0, waited = parsed ? lux_wait(lx, 1, &sub, 1, 60000, &ready) : -1;
        ok(waited == 1 && ready, "round %d: lux_wait on the subtask's ref, which another "
           "client made, returns when it is done (%d)", round, waited);
        lux_val_t sv;
        int got = parsed ? lux_get(lx, &sub, &sv, 60000) : -1;
        is_int(got, 0, "round %d: the first subtask finished%s%s", round, got ? ": " : "",
               got ? lux_errmsg() : "");
        /* now the retry calls the subtask again, with its put */
        s_touch(dir, "go");
        int rc = lux_get(lx, &task, &v, 120000);
        is_int(rc, 0, "round %d: the retried task finds its own put%s%s", round,
               rc ? ": " : "", rc ? lux_errmsg() : "");
        int64_t want = (x + n) % GRAPH_M, have = -1;
        if (rc == 0 && v.size == 8)
            memcpy(&have, v.data, 8);
        if (rc == 0)
            is_int(have, want, "round %d: and returns the subtask's value", round);
        lux_free(lx, 1, &task);
        if (parsed)
            lux_free(lx, 1, &sub);
    }
    lux_shutdown(&lx);
    return done_testing();
}

/* 3137-spill-stop-hung: a node stops while a spill's write hangs (issue 24,
   the review of the spill writer thread).

   The node's end let the write in progress finish by joining the writer
   thread, with no end: a write stuck on a dead or hung disk held the
   node's end for ever (`lux stop` gave up after 30 s and left the node
   running; an embedded driver's lux_shutdown never returned). Now the end
   waits LUX_SPILL_STOP_MS (default 10 s) and then stops without that
   write, naming it; the thread frees its copy if the write ever ends.

   The hung disk is the test hook LUX_TEST_SPILL_GATE=PATH: the write
   waits (up to 120 s) until PATH exists. A 16 MiB store, a put A of 10 MiB
   spilled for a task's 8 MiB output, its write held; lux_shutdown must
   return while the write is still held (a watchdog thread opens the gate
   after 90 s if it has not, and the check fails), and say which write it
   left. The gate then opens, and the left write's thread ends (PATH.done
   names it). */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024 * 1024)

static char s_gate[PATH_MAX];
static atomic_bool s_returned, s_forced;

/* Opens the gate if lux_shutdown has not returned within 90 s. */
static void *
s_watchdog(void *arg)
{
    (void) arg;
    for (int i = 0; i < 9000 && !atomic_load(&s_returned); i++)
        usleep(10000);
    if (!atomic_load(&s_returned)) {
        atomic_store(&s_forced, true);
        FILE *f = fopen(s_gate, "w");
        if (f)
            fclose(f);
    }
    return NULL;
}

int
main(void)
{
    char waiting[PATH_MAX + 16], done[PATH_MAX + 16], errpath[PATH_MAX + 16];
    snprintf(s_gate, sizeof s_gate, "%s/gate", tap_tmpdir());
    snprintf(waiting, sizeof waiting, "%s.waiting", s_gate);
    snprintf(done, sizeof done, "%s.done", s_gate);
    snprintf(errpath, sizeof errpath, "%s/stderr", tap_tmpdir());
    setenv("LUX_TEST_SPILL_GATE", s_gate, 1);
    setenv("LUX_SPILL_STOP_MS", "1000", 1);
    setenv("LUX_LOG", "error", 0);
    lux_t *lx = graph_unrecorded(NULL, 1, 16 * MB);

    uint8_t *p = malloc(10 * MB);
    if (!p)
        bail("out of memory");
    memset(p, 0x3c, 10 * MB);
    lux_ref_t a, out;
    int64_t seed = 13, n = 8 * MB;
    int rc = lux_put(lx, p, 10 * MB, &a);
    rc = rc ? rc : lux_call(lx, "t_big", 2, (lux_arg_t[]) {LUX_VAL(&seed, 8), LUX_VAL(&n, 8)},
                            1, &out);
    lux_val_t v;
    rc = rc ? rc : lux_get(lx, &out, &v, 120000);
    ok(rc == 0 && fx_wait_file(waiting, 120000),
       "a put A of 10 MiB is spilled for a task's 8 MiB output, its write held (%s)",
       rc ? lux_errmsg() : "ok");

    /* the node's messages go to stderr: kept in a file for the stop */
    fflush(stderr);
    int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (saved < 0 || fd < 0 || dup2(fd, 2) < 0)
        bail("cannot send stderr to %s", errpath);
    close(fd);
    pthread_t wd;
    pthread_create(&wd, NULL, s_watchdog, NULL);
    lux_shutdown(&lx);
    atomic_store(&s_returned, true);
    bool held = access(s_gate, F_OK) != 0;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    pthread_join(wd, NULL);
    ok(!atomic_load(&s_forced) && held,
       "lux_shutdown returns while the spill's write is still held (a hung disk)%s",
       atomic_load(&s_forced) ? ": it had not after 90 s, the gate was opened" : "");

    char text[4096] = "";
    FILE *f = fopen(errpath, "r");
    if (f) {
        size_t k = fread(text, 1, sizeof text - 1, f);
        text[k] = '\0';
        fclose(f);
    }
    char *line = strstr(text, "without its last spill");
    ok(line && strstr(line, ".lz4") && strstr(line, "had not ended"),
       "the node says it stopped without that write, naming it: %.300s", line ? line : text);

    FILE *g = fopen(s_gate, "w");
    if (g)
        fclose(g);
    ok(fx_wait_file(done, 120000), "the gate opened, the write left to its thread ends");
    free(p);
    return done_testing();
}

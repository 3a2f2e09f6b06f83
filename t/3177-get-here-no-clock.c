/* 3177-get-here-no-clock: a lux_get of an object the driver has already
   reads no clock, and a get that waits still ends at its timeout.

   single_client_get_calls gets one 8-byte put 200,100 times: each get is
   a lookup in the driver's table, 45-100 ns natively, and each read the
   monotonic clock for a deadline it never needed (clock_gettime: about
   24 ns of CPU on this VM; doc/benchmarks.md, 2026-11-29, stop 46). The
   deadline is now taken when a get first has to wait. Checked with
   clock_gettime interposed in this program (liblux's calls resolve to
   it), counting only this thread's calls, not the node's or the log's:
     1. 1,000 gets of a put, after the first, read no clock and give the
        bytes put;
     2. lux_get_many of 64 such refs reads none either;
     3. a get of a task's output that takes 30 s, with a timeout of 100
        ms, still fails with LUX_ETIMEDOUT (the deadline is kept), and
        reads the clock to do so.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "tap.h"
#include "lib/graph.h"
#include "lux.h"

#include <dlfcn.h>
#include <string.h>
#include <time.h>

static __thread bool s_counting;
static __thread long s_reads;

/* every clock_gettime of this process comes here; this thread's are
   counted while s_counting */
int
clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *)) dlsym(RTLD_NEXT, "clock_gettime");
    if (s_counting)
        s_reads++;
    return real(id, ts);
}

int
main(void)
{
    lux_t *lx = graph_embedded(1, 64u << 20, "an embedded cluster");
    lux_ref_t ref, refs[64];
    lux_val_t v, vals[64];
    int64_t x = 3177;

    int rc = lux_put(lx, &x, sizeof x, &ref);
    rc = rc ? rc : lux_get(lx, &ref, &v, 10000);
    is_int(rc, 0, "put and get a value (%s)", rc ? lux_errmsg() : "ok");

    /* the counter sees the library's calls at all */
    s_counting = true;
    s_reads = 0;
    lux_wait(lx, 1, &ref, 1, 1000, NULL);
    s_counting = false;
    ok(s_reads > 0, "lux_wait reads the clock here (%ld reads): the counter sees liblux's calls",
       s_reads);

    int bad = 0;
    s_counting = true;
    s_reads = 0;
    for (int i = 0; i < 1000; i++) {
        rc = lux_get(lx, &ref, &v, 10000);
        bad += rc != 0 || v.size != 8 || memcmp(v.data, &x, 8) != 0;
    }
    s_counting = false;
    is_int(bad, 0, "1,000 gets of the put give its bytes");
    is_int(s_reads, 0, "and read no clock");

    for (int i = 0; i < 64; i++) {
        int64_t y = 1000 + i;
        rc = rc ? rc : lux_put(lx, &y, sizeof y, &refs[i]);
    }
    rc = rc ? rc : lux_get_many(lx, 64, refs, vals, 10000);
    is_int(rc, 0, "lux_get_many of 64 puts");
    s_counting = true;
    s_reads = 0;
    rc = lux_get_many(lx, 64, refs, vals, 10000);
    s_counting = false;
    bad = rc != 0;
    for (int i = 0; i < 64 && !rc; i++) {
        int64_t y = 1000 + i;
        bad += vals[i].size != 8 || memcmp(vals[i].data, &y, 8) != 0;
    }
    ok(bad == 0 && s_reads == 0, "again, every value right, and no clock read (%ld reads)",
       s_reads);

    int64_t ms = 30000, one = 1;
    lux_ref_t slow;
    rc = lux_call(lx, "t_sleep", 2, (lux_arg_t[]){LUX_VAL(&ms, 8), LUX_VAL(&one, 8)}, 1, &slow);
    is_int(rc, 0, "call a task that takes 30 s");
    s_counting = true;
    s_reads = 0;
    rc = lux_get(lx, &slow, &v, 100);
    s_counting = false;
    is_int(rc, LUX_ETIMEDOUT, "a get of its output with a timeout of 100 ms times out (%s)",
           rc ? lux_errmsg() : "ok");
    ok(s_reads > 0, "reading the clock for it (%ld reads)", s_reads);
    lux_cancel(lx, &slow, true);
    lux_shutdown(&lx);
    return done_testing();
}

/* 3136-actor-replay-room: an actor call whose argument was spilled, in a
   store full of pins, waits for room and then goes beyond the store's
   size like a task's argument, whether it is a live call or one replayed
   after the actor's process was killed (issue 24).

   The long form of t/3108 (seed 3, chaos) lost actor HAcc: "cannot replay
   its call 10: the object store (67108864 bytes) has no room for 7847818
   bytes", with 60 MB pinned and 12.9 MB of the spare region in use. A
   task's spilled argument that finds no room waits LUX_STORE_WAIT_MS and
   then goes beyond the store's size (DESIGN 7 rule 9, t/3134), but an
   actor call's arguments did not: the node took "no room yet" for a
   failure, so a live call failed and a replayed one killed the actor.

   Here: a 16 MiB store, an actor HAcc, two puts P and P2 of 3 MiB, HAcc
   step(P) answered; then five puts of 3 MiB read in place (15 MiB pinned
   by the driver) spill P and P2, and a task is held running on a worker,
   so a wait may free room (LUX_STORE_WAIT_MS is 1 s). A live step(P2)
   must be answered, and after the actor's process is killed (SIGKILL by
   the pid it gave), a step(Q) after the replay of step(P) too, with the
   running hash of all three, while the held task still runs. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)

/* One step of a on arg; its answer into *h. */
static int
s_call(lux_t *lx, lux_actor_t *a, lux_arg_t arg, int64_t *h)
{
    lux_ref_t r;
    int rc = lux_actor_call(lx, a, "step", 1, &arg, 1, &r);
    return rc ? rc : graph_get8(lx, &r, h);
}

int
main(void)
{
    setenv("LUX_STORE_WAIT_MS", "1000", 1);
    setenv("LUX_LOG", "error", 0);
    lux_t *lx = graph_unrecorded(NULL, 2, 16 * MB);
    uint8_t *p = malloc(3 * MB), *p2 = malloc(3 * MB), *buf = malloc(3 * MB);
    if (!p || !p2 || !buf)
        bail("out of memory");
    hx_fill(p, 3 * MB, 1);
    hx_fill(p2, 3 * MB, 2);

    lux_actor_t a;
    lux_ref_t rp, sp, sp2, r, hold;
    pid_t held;
    int ready = 0;
    int64_t h0 = 5, pid = 0, got = 0;
    int rc = lux_actor_create(lx, "HAcc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                              &(lux_actor_opts_t) {.max_restarts = 3}, &a);
    rc = rc ? rc : lux_actor_call(lx, &a, "pid", 0, NULL, 1, &rp);
    rc = rc ? rc : graph_get8(lx, &rp, &pid);
    rc = rc ? rc : lux_put(lx, p, 3 * MB, &sp);
    rc = rc ? rc : lux_put(lx, p2, 3 * MB, &sp2);
    rc = rc ? rc : s_call(lx, &a, LUX_REF(sp), &got);
    uint64_t h = hx_acc_step((uint64_t) h0, p, 3 * MB);
    ok(rc == 0 && pid > 0 && (uint64_t) got == h,
       "actor HAcc (pid %lld) took step(P), P a put of 3 MiB (%s)", (long long) pid,
       rc ? lux_errmsg() : "ok");

    lux_val_t kept[5];
    for (int i = 0; i < 5 && !rc; i++) {
        hx_fill(buf, 3 * MB, 10 + (uint64_t) i);
        rc = lux_put(lx, buf, 3 * MB, &r);
        rc = rc ? rc : lux_get(lx, &r, &kept[i], 60000);
    }
    ok(rc == 0, "five puts of 3 MiB read in place: 15 of the store's 16 MiB pinned by the "
       "driver, P and P2 spilled (%s)", rc ? lux_errmsg() : "ok");
    rc = fx_hold(lx, "hold", &hold, &held);
    ok(rc == 0, "a task is held running on a worker: a wait for room may end (%s)",
       rc == LUX_ETIMEDOUT ? "not running within 120 s" : rc ? lux_errmsg() : "ok");

    rc = s_call(lx, &a, LUX_REF(sp2), &got);
    h = hx_acc_step(h, p2, 3 * MB);
    lux_wait(lx, 1, &hold, 1, 0, &ready);
    ok(rc == 0 && (uint64_t) got == h && !ready,
       "a live step(P2), P2 spilled, is answered after the wait for room, beyond the store's "
       "size, while the held task still runs (%s)", rc ? lux_errmsg() : "ok");

    ok(fx_is_worker((pid_t) pid) && kill((pid_t) pid, SIGKILL) == 0,
       "the actor's process %lld is killed (SIGKILL)", (long long) pid);
    int64_t q = 77;
    rc = s_call(lx, &a, LUX_VAL(&q, 8), &got);
    h = hx_acc_step(h, &q, 8);
    lux_wait(lx, 1, &hold, 1, 0, &ready);
    ok(rc == 0 && (uint64_t) got == h && !ready,
       "restarted, it replays step(P) with P spilled (waits for room, then beyond the store's "
       "size) and answers step(Q) with the hash of P, P2 and Q, while the held task still "
       "runs (%s)", rc ? lux_errmsg() : "ok");

    fx_release("hold");
    lux_val_t v;
    rc = lux_get(lx, &hold, &v, 120000);
    ok(rc == 0, "the held task ends once let go (%s)", rc ? lux_errmsg() : "ok");
    bool right = true;
    for (int i = 0; i < 5; i++) {
        hx_fill(buf, 3 * MB, 10 + (uint64_t) i);
        right = right && kept[i].size == 3 * MB && memcmp(kept[i].data, buf, 3 * MB) == 0;
    }
    ok(right, "the driver's objects kept their bytes");
    free(p);
    free(p2);
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}

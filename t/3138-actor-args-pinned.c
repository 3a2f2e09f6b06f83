/* 3138-actor-args-pinned: an actor's calls queued behind a slow call keep
   their arguments through evictions (issue 24; pressure7's question: do
   calls sent but not yet run keep their arguments pinned?).

   A call sent to the actor's process (the node sends up to 512 ahead)
   carries its arguments' places in the store, and the process reads them
   there only when it runs the call: if an argument could be evicted
   meanwhile, that read would find other bytes. A call not yet sent (it
   waits behind a call whose argument is not ready) holds nothing in the
   store: its put argument may be spilled, and must be brought back when
   the call is sent.

   A 16 MiB store, actor HAcc busy in wait(GATE); step(P1), step(P2)
   behind it, P1 and P2 puts of 3 MiB the driver then frees (since
   rule 12 of DESIGN 7 only step(P1) is sent: the calls sent ahead pin
   at most a quarter of the store); step(T)
   with T the output of a task held running, and step(P3) behind it, P3 a
   put of 3 MiB; then five unread puts of 3 MiB: the store must evict,
   and P3 is spilled (its file appears) while P1, older, is not
   (pinned), and P2, older and not sent, is. The gate opens and the held task ends: every step answers
   with the running hash of the right bytes.

   The answer: yes. A call is pinned from when it is sent until its
   result (nm_task_run_args, exec_node_actor.c s_calls); one not sent
   yet holds its put arguments by use only, and they are brought back
   when it is sent. Nothing had to change. */
#include "tap.h"
#include "lib/fx.h"
#include "lib/graph.h"
#include "lib/hx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024 * 1024)

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    lux_t *lx = graph_unrecorded(NULL, 1, 16 * MB);
    uint8_t *p[3], *buf = malloc(3 * MB);
    for (int i = 0; i < 3; i++) {
        if (!(p[i] = malloc(3 * MB)) || !buf)
            bail("out of memory");
        hx_fill(p[i], 3 * MB, 1 + (uint64_t) i);
    }
    char gate[PATH_MAX], p3file[PATH_MAX + 64], hex[LUX_REF_LEN * 2 + 1];
    lux_actor_t a;
    lux_ref_t w, sp[3], r[4], hold, q;
    pid_t held;
    int64_t h0 = 5, got = 0;
    int rc = graph_hacc_busy(lx, h0, NULL, gate, sizeof gate, &a, &w);
    ok(rc == 0, "actor HAcc is busy in a call wait(GATE) (%s)", rc ? lux_errmsg() : "ok");

    for (int i = 0; i < 2 && !rc; i++) {
        rc = lux_put(lx, p[i], 3 * MB, &sp[i]);
        rc = rc ? rc : lux_actor_call(lx, &a, "step", 1, (lux_arg_t[]) {LUX_REF(sp[i])}, 1, &r[i]);
        if (!rc)
            lux_free(lx, 1, &sp[i]); /* the call holds it now, not the driver */
    }
    ok(rc == 0, "step(P1), step(P2) queued behind it, P1 and P2 puts of 3 MiB, freed by the "
       "driver (%s)", rc ? lux_errmsg() : "ok");

    rc = fx_hold(lx, "hold", &hold, &held);
    rc = rc ? rc : lux_actor_call(lx, &a, "step", 1, (lux_arg_t[]) {LUX_REF(hold)}, 1, &r[2]);
    rc = rc ? rc : lux_put(lx, p[2], 3 * MB, &sp[2]);
    rc = rc ? rc : lux_actor_call(lx, &a, "step", 1, (lux_arg_t[]) {LUX_REF(sp[2])}, 1, &r[3]);
    ok(rc == 0, "step(T), T a task held running, and step(P3) behind it, not sent (%s)",
       rc == LUX_ETIMEDOUT ? "the task did not run within 120 s" : rc ? lux_errmsg() : "ok");

    for (int i = 0; i < 5 && !rc; i++) {
        hx_fill(buf, 3 * MB, 10 + (uint64_t) i);
        rc = lux_put(lx, buf, 3 * MB, &q);
    }
    snprintf(p3file, sizeof p3file, "%s/spill/%s.lz4", lux_dir(lx), lux_ref_hex(&sp[2], hex));
    ok(rc == 0 && fx_wait_file(p3file, 120000),
       "five more puts of 3 MiB: the store evicts, P3 is spilled (%s)", rc ? lux_errmsg() : "ok");

    /* older than P3 in the store: had they been evictable, they would have
       gone first, and spills are written in the order they are made */
    char pfile[PATH_MAX + 64];
    int spilled[2];
    for (int i = 0; i < 2; i++) {
        snprintf(pfile, sizeof pfile, "%s/spill/%s.lz4", lux_dir(lx), lux_ref_hex(&sp[i], hex));
        spilled[i] = access(pfile, F_OK) == 0;
    }
    is_int(spilled[0], 0, "P1, the argument of a call sent and not yet run, was not spilled "
           "(pinned)");
    /* the calls sent ahead pin at most a quarter of the store (DESIGN 7
       rule 12, t/3152): step(P2) waits unsent behind step(P1), and P2,
       older than P3, went first */
    is_int(spilled[1], 1, "P2, whose call is not sent while P1's 3 MiB take the actor's share "
           "of the store, was spilled before P3");

    FILE *g = fopen(gate, "w");
    if (g)
        fclose(g);
    fx_release("hold");
    int64_t one = 1;
    uint64_t h = (uint64_t) h0;
    bool right = graph_get8(lx, &w, &got) == 0 && (uint64_t) got == h;
    if (!right)
        diag("wait: %s", lux_errmsg());
    for (int i = 0; i < 4; i++) {
        if (i < 2)
            h = hx_acc_step(h, p[i], 3 * MB);
        else if (i == 2)
            h = hx_acc_step(h, &one, 8);
        else
            h = hx_acc_step(h, p[2], 3 * MB);
        rc = graph_get8(lx, &r[i], &got);
        if (rc || (uint64_t) got != h) {
            diag("step %d: %s", i, rc ? lux_errmsg() : "a wrong hash");
            right = false;
        }
    }
    ok(right, "the gate opens, the held task ends: every step answers with the hash of the "
       "right bytes (P1, P2 read where they were sent; P3 brought back)");
    for (int i = 0; i < 3; i++)
        free(p[i]);
    free(buf);
    lux_shutdown(&lx);
    return done_testing();
}

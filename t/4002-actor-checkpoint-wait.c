/* 4002-actor-checkpoint-wait: lux_actor_checkpoint returns when a call
   queued before it on the actor waits for a ref argument whose task then
   fails. The call fails (its error naming the task that failed), the
   checkpoint behind it is made, and the actor goes on taking calls. It
   used to wait for ever: the failed call left the actor's queue and
   nothing sent the checkpoint queued behind it. The checkpoint is asked
   for from a thread (it blocks), while this thread opens the gate that
   lets the argument's task fail, and waits for the checkpoint with a
   bound. The actor has applied a call first: while it starts, its whole
   queue goes once it is up, which hid the bug. */
#include "tap.h"
#include "lib/graph.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static lux_t *s_lx;
static lux_actor_t s_actor;
static atomic_int s_asking;
static int s_rc = 1;
static char s_msg[600];

static void *
s_checkpoint(void *arg)
{
    (void) arg;
    atomic_store(&s_asking, 1);
    s_rc = lux_actor_checkpoint(s_lx, &s_actor);
    snprintf(s_msg, sizeof s_msg, "%s", s_rc ? lux_errmsg() : "");
    return NULL;
}

int
main(void)
{
    lux_config_t cfg = {.module = graph_module(), .dir = tap_tmpdir(), .store_bytes = 64 << 20,
                        .workers = 2};
    char gate[600];
    lux_t *lx = s_lx = lux_init(&cfg);
    ok(lx != NULL, "start the embedded default");
    if (!lx)
        bail("lux_init: %s", lux_errmsg());
    int64_t h0 = 5, caller = 0;
    lux_actor_opts_t ao = {.max_restarts = 3, .checkpoint_every = 2};
    int rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)}, &ao, &s_actor);
    is_int(rc, 0, "create an actor with save and load");
    /* a task that fails once the gate opens, and a call that takes its
       result: the call waits in the actor's queue */
    snprintf(gate, sizeof gate, "%s/gate", tap_tmpdir());
    lux_ref_t g, f, call, before, after;
    lux_val_t v;
    int64_t one = 1;
    /* the actor is up and has applied a call */
    rc = lux_actor_call(lx, &s_actor, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&one, 8)},
                        1, &before);
    rc = rc ? rc : lux_get(lx, &before, &v, 60000);
    is_int(rc, 0, "the actor takes a call%s%s", rc ? ": " : "", rc ? lux_errmsg() : "");
    if (lux_call(lx, "t_gate", 1, (lux_arg_t[]) {LUX_VAL(gate, strlen(gate))}, 1, &g) ||
        lux_call(lx, "t_fail", 1, (lux_arg_t[]) {LUX_REF(g)}, 1, &f) ||
        lux_actor_call(lx, &s_actor, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_REF(f)},
                       1, &call) ||
        lux_actor_call(lx, &s_actor, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&one, 8)},
                       1, &after))
        bail("call: %s", lux_errmsg());
    pthread_t th;
    if (pthread_create(&th, NULL, s_checkpoint, NULL))
        bail("pthread_create failed");
    /* let the request reach the node before the gate opens (if it does
       not, the test proves less, but it cannot pass wrongly) */
    while (!atomic_load(&s_asking))
        usleep(1000);
    usleep(300000);
    FILE *fp = fopen(gate, "w");
    if (fp)
        fclose(fp);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    int jr = pthread_timedjoin_np(th, NULL, &until);
    ok(jr == 0, "lux_actor_checkpoint returns (within 60 s) after the call before it failed "
       "for its argument");
    if (jr)
        bail("lux_actor_checkpoint is stuck: stopping here (%s)", strerror(jr));
    is_int(s_rc, 0, "the checkpoint is made%s%s", s_rc ? ": " : "", s_msg);
    rc = lux_get(lx, &call, &v, 30000);
    is_int(rc, LUX_ETASK, "the call fails");
    ok(rc == LUX_ETASK && strstr(lux_errmsg(), "t_fail"), "naming the task that failed: %s",
       rc == LUX_ETASK ? lux_errmsg() : "");
    rc = lux_get(lx, &after, &v, 30000);
    is_int(rc, 0, "the call after it is applied%s%s", rc ? ": " : "", rc ? lux_errmsg() : "");
    int64_t h = h0;
    for (int i = 0; i < 2; i++) /* before and after */
        h = (h * 31 + one + caller) % GRAPH_M;
    if (rc == 0 && v.size == 16)
        is_int(((const int64_t *) v.data)[0], h, "to the state without the failed call");
    int64_t x = 11, want = (h * 31 + x + caller) % GRAPH_M;
    lux_ref_t next;
    rc = lux_actor_call(lx, &s_actor, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&x, 8)},
                        1, &next);
    rc = rc ? rc : lux_get(lx, &next, &v, 30000);
    is_int(rc, 0, "the actor takes the next call");
    if (rc == 0 && v.size == 16)
        is_int(((const int64_t *) v.data)[0], want, "and the next one too");
    rc = lux_actor_checkpoint(lx, &s_actor);
    is_int(rc, 0, "and checkpoints again%s%s", rc ? ": " : "", rc ? lux_errmsg() : "");
    lux_shutdown(&lx);
    return done_testing();
}

/*  9014-actor-name-taken: a second actor created under a name a live actor
    already has is refused by lux_actor_create with LUX_EEXIST and a
    message naming the name and the actor holding it; the first actor's
    calls go on working, and lux_actor_lookup finds it. Once the first is
    killed, its name may be taken again. The same holds for an actor
    created by a task (a worker's lux_actor_create). */
#include "tap.h"
#include "lib/graph.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Output k (int64) of ref r, or -1. */
static int64_t
s_i64(lux_t *lx, const lux_ref_t *r, int k)
{
    lux_val_t v;
    if (lux_get(lx, r, &v, 20000) || v.size < 8 * (size_t) (k + 1)) {
        diag("get: %s", lux_errmsg());
        return -1;
    }
    return ((const int64_t *) v.data)[k];
}

/* Acc.add(0, x) on a: its h (output 0), or -1. */
static int64_t
s_add(lux_t *lx, const lux_actor_t *a, int64_t x)
{
    int64_t caller = 0;
    lux_ref_t r;
    if (lux_actor_call(lx, a, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(&x, 8)}, 1,
                       &r)) {
        diag("add: %s", lux_errmsg());
        return -1;
    }
    return s_i64(lx, &r, 0);
}

int
main(void)
{
    lux_t *lx = graph_embedded(2, 64 << 20, "start the embedded default");
    lux_actor_t a, b, c, found;
    int64_t h0 = 7, h1 = 11;
    char ha[33], hb[33];

    int rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)},
                              &(lux_actor_opts_t) {.name = "dup"}, &a);
    is_int(rc, 0, "create an actor named dup");
    is_int(s_add(lx, &a, 1), (7 * 31 + 1) % 1000003, "it answers a call");

    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h1, 8)},
                          &(lux_actor_opts_t) {.name = "dup"}, &b);
    is_int(rc, LUX_EEXIST, "a second actor named dup is refused with LUX_EEXIST");
    const char *m = lux_errmsg();
    lux_actor_hex(&a, ha);
    ok(strstr(m, "'dup'") && strstr(m, ha), "the message names the name and its actor (%s)", m);

    is_int(s_add(lx, &a, 2), ((7 * 31 + 1) * 31 + 2) % 1000003,
           "the first actor's calls still work");
    rc = lux_actor_lookup(lx, "dup", &found, 10000);
    is_int(rc, 0, "lux_actor_lookup finds dup");
    lux_actor_hex(&found, hb);
    is_str(hb, ha, "and it is the first actor");

    /* a name given up by a kill can be taken again */
    is_int(lux_actor_kill(lx, &a), 0, "kill the first actor");
    /* the name is free once the node has buried it (its process gone):
       wait for that, bounded, rather than for a while */
    int free_rc = LUX_OK;
    for (int i = 0; i < 400; i++) {
        if ((free_rc = lux_actor_lookup(lx, "dup", &found, 0)) == LUX_ENOTFOUND)
            break;
        usleep(50000);
    }
    is_int(free_rc, LUX_ENOTFOUND, "the killed actor's name is given up");
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h1, 8)},
                          &(lux_actor_opts_t) {.name = "dup"}, &c);
    is_int(rc, 0, "then an actor named dup may be created again (%s)", rc ? lux_errmsg() : "");
    is_int(s_add(lx, &c, 1), (11 * 31 + 1) % 1000003, "and it answers");

    /* unnamed actors are not affected */
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)}, NULL, &b);
    is_int(rc, 0, "an unnamed actor is created as before");
    is_int(s_add(lx, &b, 1), (7 * 31 + 1) % 1000003, "and answers");

    lux_shutdown(&lx);
    return done_testing();
}

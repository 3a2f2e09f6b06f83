/* 3107-exec-lost-chain: when an object cannot be rebuilt, the error names
   the root cause and the chain to it. A put Y feeds a task X, which feeds
   X2; all three are freed once read (Y, a put, is gone for good; X and
   X2 have lineage). A task Z on X2, and lux_get of X2 asked for again,
   must fail naming X2, X and Y, saying that Y was a put that was freed;
   they used to say that X2 "was never created", although it was and is in
   the log. A ref nobody made gives LUX_ENOTFOUND from lux_get (as lux.h
   and lux(3) say) and a task that takes it says it was never created.
   And a put freed before a call that takes it is gone for that call,
   every time: frees went out after the calls queued with them, so such a
   call ran or failed depending on whether a batch was sent between. */
#include "tap.h"
#include "lib/graph.h"

#include <stdio.h>
#include <string.h>

int
main(void)
{
    lux_t *lx = graph_embedded(2, 64 << 20, "start the embedded default");
    int64_t five = 5;
    lux_ref_t y, x, x2, z, z2;
    lux_val_t v;
    int rc = lux_put(lx, &five, 8, &y);
    rc = rc ? rc : lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(y)}, 1, &x);
    rc = rc ? rc : lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(x)}, 1, &x2);
    rc = rc ? rc : lux_get(lx, &x2, &v, 60000);
    is_int(rc, 0, "a put, a task on it and a task on that%s%s", rc ? ": " : "",
           rc ? lux_errmsg() : "");
    lux_get(lx, &x, &v, 60000);
    lux_free(lx, 1, &y);
    lux_free(lx, 1, &x);
    lux_free(lx, 1, &x2);

    rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(x2)}, 1, &z);
    rc = rc ? rc : lux_get(lx, &z, &v, 60000);
    is_int(rc, LUX_ETASK, "a task on the freed result fails");
    const char *m = lux_errmsg();
    ok(rc == LUX_ETASK && !strstr(m, "never created"), "not saying that it was never created");
    ok(rc == LUX_ETASK && graph_says(m, "the argument", &x2, "was lost and its rebuild failed") &&
       graph_says(m, "its argument", &x, "was lost and its rebuild failed") &&
       graph_says(m, "the root", &y, "was made by lux_put and then freed"),
       "but naming the chain to the root cause: %s", m);

    rc = lux_get(lx, &x2, &v, 60000);
    is_int(rc, LUX_ETASK, "lux_get of the freed result asked for again fails with LUX_ETASK");
    m = lux_errmsg();
    ok(rc == LUX_ETASK && graph_says(m, "the object", &x2, "was lost and its rebuild failed") &&
       graph_says(m, "the root", &y, "was made by lux_put and then freed"),
       "naming the chain to the root cause: %s", m);

    /* a put freed before a call that takes it is gone for that call,
       whether or not a batch went out between the free and the call; and
       a call made before the free has it */
    int before_ok = 0, after_fail = 0;
    for (int i = 0; i < 50; i++) {
        lux_ref_t p, c1, c2;
        int64_t k = i;
        if (lux_put(lx, &k, 8, &p) ||
            lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(p)}, 1, &c1))
            bail("%s", lux_errmsg());
        lux_free(lx, 1, &p);
        if (i % 2)
            lux_wait(lx, 0, NULL, 0, 0, NULL); /* a batch goes out between */
        if (lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(p)}, 1, &c2))
            bail("%s", lux_errmsg());
        before_ok += lux_get(lx, &c1, &v, 60000) == 0;
        rc = lux_get(lx, &c2, &v, 60000);
        after_fail += rc == LUX_ETASK && graph_says(lux_errmsg(), "the freed put", &p,
                                               "was made by lux_put and then freed");
        lux_free(lx, 1, &c1);
        lux_free(lx, 1, &c2);
    }
    is_int(before_ok, 50, "a call made before lux_free of its argument runs, every time");
    is_int(after_fail, 50, "a call made after lux_free of its argument (a put) fails, every "
           "time, saying so");

    lux_ref_t nobody;
    memset(&nobody, 0x5a, sizeof nobody);
    rc = lux_get(lx, &nobody, &v, 10000);
    is_int(rc, LUX_ENOTFOUND, "lux_get of a ref nobody made gives LUX_ENOTFOUND");
    ok(rc == LUX_ENOTFOUND && graph_says(lux_errmsg(), "the ref", &nobody, "was never created"),
       "saying it was never created: %s", lux_errmsg());
    rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_REF(nobody)}, 1, &z2);
    rc = rc ? rc : lux_get(lx, &z2, &v, 60000);
    is_int(rc, LUX_ETASK, "a task on it fails");
    ok(rc == LUX_ETASK && graph_says(lux_errmsg(), "the ref", &nobody, "was never created"),
       "saying its argument was never created: %s", lux_errmsg());
    lux_shutdown(&lx);
    return done_testing();
}

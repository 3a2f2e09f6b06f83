/* 3106-exec-value-limit: a value argument (LUX_VAL) is at most 64 KiB
   (LUX_VAL_MAX). One of that size reaches the function intact, through
   lux_call and lux_actor_call; one byte more is refused by lux_call,
   lux_actor_call and lux_actor_create at once, with LUX_EINVAL and a
   message naming the argument, its size, the limit and lux_put. They used
   to return 0, and the task failed later with "argument 0 came
   malformed". */
#include "tap.h"
#include "lib/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
s_says(const char *what, int arg)
{
    const char *m = lux_errmsg();
    char an[32];
    snprintf(an, sizeof an, "argument %d ", arg);
    bool all = strstr(m, an) && strstr(m, "65537 bytes") && strstr(m, "65536") &&
               strstr(m, "lux_put");
    if (!all)
        diag("%s said: %s", what, m);
    return all;
}

int
main(void)
{
    lux_t *lx = graph_embedded(2, 64 << 20, "start the embedded default");
    is_int(LUX_VAL_MAX, 65536, "LUX_VAL_MAX is 64 KiB");
    size_t n = LUX_VAL_MAX + 1;
    uint8_t *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (uint8_t) (i * 7 + 3);
    int64_t zero = 0;
    lux_ref_t r;
    lux_val_t v;

    /* at the limit: carried */
    int rc = lux_call(lx, "t_sleep", 2, (lux_arg_t[]) {LUX_VAL(&zero, 8), LUX_VAL(big, n - 1)}, 1,
                      &r);
    is_int(rc, 0, "lux_call takes a value of 65536 bytes");
    rc = rc ? rc : lux_get(lx, &r, &v, 60000);
    ok(rc == 0 && v.size == n - 1 && memcmp(v.data, big, n - 1) == 0,
       "and the function gets it intact (%d%s%s)", rc, rc ? ": " : "", rc ? lux_errmsg() : "");
    /* one byte more: refused at the call */
    rc = lux_call(lx, "t_sleep", 2, (lux_arg_t[]) {LUX_VAL(&zero, 8), LUX_VAL(big, n)}, 1, &r);
    is_int(rc, LUX_EINVAL, "lux_call refuses a value of 65537 bytes");
    ok(rc == LUX_EINVAL && s_says("lux_call", 1), "naming the argument, its size, the limit and "
       "lux_put: %s", lux_errmsg());

    lux_actor_t a;
    int64_t h0 = 1, caller = 0;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(&h0, 8)}, NULL, &a);
    is_int(rc, 0, "create an actor");
    rc = lux_actor_call(lx, &a, "add", 2, (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(big, n)},
                        1, &r);
    is_int(rc, LUX_EINVAL, "lux_actor_call refuses a value of 65537 bytes");
    ok(rc == LUX_EINVAL && s_says("lux_actor_call", 1), "with the same message: %s", lux_errmsg());
    rc = lux_actor_call(lx, &a, "add", 2,
                        (lux_arg_t[]) {LUX_VAL(&caller, 8), LUX_VAL(big, n - 1)}, 1, &r);
    rc = rc ? rc : lux_get(lx, &r, &v, 60000);
    is_int(rc, 0, "lux_actor_call takes one of 65536 bytes, and the method runs%s%s",
           rc ? ": " : "", rc ? lux_errmsg() : "");
    lux_actor_t b;
    rc = lux_actor_create(lx, "Acc", 1, (lux_arg_t[]) {LUX_VAL(big, n)}, NULL, &b);
    is_int(rc, LUX_EINVAL, "lux_actor_create refuses a value of 65537 bytes");
    ok(rc == LUX_EINVAL && s_says("lux_actor_create", 0), "with the same message: %s",
       lux_errmsg());
    free(big);
    lux_shutdown(&lx);
    return done_testing();
}

/*  hello - a first remote function.

        cc -shared -fPIC -o hello.so hello.c $(pkg-config --cflags lux)
        lux run hello.so 10

    `square` is a remote function: lux_call returns a ref (a future) at
    once, and the call runs as a task in one of the cluster's worker
    processes. `add` takes two refs as arguments, so it runs only once
    both squares exist, and reads their bytes where they lie in the
    shared-memory object store. `main` is the driver: `lux run` starts a
    private cluster on this machine for it (the embedded default), and
    every call, argument and result is an event in that cluster's log,
    which `lux sql` queries afterwards. */
#include <lux.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
square(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t x;
    if (argv[0].size != sizeof x)
        return lux_raise(lx, "square takes one int64, got %zu bytes", argv[0].size);
    memcpy(&x, argv[0].data, sizeof x);
    int64_t y = x * x;
    return lux_set(lx, 0, &y, sizeof y);
}
LUX_FUNCTION(square, 1, 1)

static int
add(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t sum = 0;
    for (int i = 0; i < argc; i++) {
        int64_t v;
        if (argv[i].size != sizeof v)
            return lux_raise(lx, "add takes int64s, argument %d has %zu bytes", i,
                             argv[i].size);
        memcpy(&v, argv[i].data, sizeof v);
        sum += v;
    }
    return lux_set(lx, 0, &sum, sizeof sum);
}
LUX_FUNCTION(add, -1, 1)

/* Arguments are checked before `lux run` starts a cluster. */
static int
hello_configure(lux_config_t *cfg, int argc, char **argv)
{
    (void) cfg;
    int n = argc > 1 ? atoi(argv[1]) : 10;
    if (argc > 2 || n < 1 || n > 100000) {
        fprintf(stderr, "usage: lux run hello.so [N]   (1 <= N <= 100000)\n");
        return 2;
    }
    return 0;
}
LUX_CONFIGURE(hello_configure)

/* The driver: sums the squares of 1..n two at a time, in a tree of tasks. */
static int
hello_main(lux_t *lx, int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    lux_ref_t *refs = calloc((size_t) n, sizeof *refs);
    if (!refs)
        return 1;
    for (int64_t i = 1; i <= n; i++) {
        if (lux_call(lx, "square", 1, (lux_arg_t[]) {LUX_VAL(&i, sizeof i)}, 1,
                     &refs[i - 1]) != 0) {
            fprintf(stderr, "hello: %s\n", lux_errmsg());
            free(refs);
            return 1;
        }
    }
    /* Pair the refs up until one is left: add(a, b) waits for a and b. */
    for (int live = n; live > 1; live = (live + 1) / 2) {
        for (int i = 0; i + 1 < live; i += 2) {
            lux_ref_t sum;
            lux_arg_t args[2] = {LUX_REF(refs[i]), LUX_REF(refs[i + 1])};
            if (lux_call(lx, "add", 2, args, 1, &sum) != 0) {
                fprintf(stderr, "hello: %s\n", lux_errmsg());
                free(refs);
                return 1;
            }
            refs[i / 2] = sum;
        }
        if (live % 2)
            refs[live / 2] = refs[live - 1];
    }
    lux_val_t v;
    if (lux_get(lx, &refs[0], &v, -1) != 0) {
        fprintf(stderr, "hello: %s\n", lux_errmsg());
        free(refs);
        return 1;
    }
    int64_t sum;
    memcpy(&sum, v.data, sizeof sum);
    char hex[LUX_REF_LEN * 2 + 1];
    printf("sum of squares 1..%d = %lld\n", n, (long long) sum);
    printf("result object %s\n", lux_ref_hex(&refs[0], hex));
    printf("log: lux sql --dir %s \"SELECT function, count(*) FROM tasks GROUP BY "
           "function\"\n",
           lux_dir(lx));
    free(refs);
    return sum == (int64_t) n * (n + 1) * (2 * n + 1) / 6 ? 0 : 1;
}
LUX_MAIN(hello_main)

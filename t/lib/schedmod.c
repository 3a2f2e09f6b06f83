/*  schedmod - the module of the scheduling tests across nodes (t/6052):
    tasks that say which node ran them (its directory, lux_dir), a sum of
    an argument's bytes, a large value, and an entry point that submits
    them (`lux run --address DIR schedmod.so MODE ...`):

        where N RES      N calls of s_where with resources RES ("-": none);
                         prints each one's directory, one a line
        sum BYTES RES    put BYTES bytes (i * 7 + 3, mod 251), call
                         s_sum(ref) with RES; prints "sum S want W"
        big BYTES RES    call s_big(BYTES) with RES; prints "big ok" when
                         every byte is right
    A failed get prints "error: MESSAGE" and exits 1.
*/
#include "lux.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
s_where(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc, (void) argv;
    const char *d = lux_dir(lx);
    return lux_set(lx, 0, d, strlen(d) + 1);
}
LUX_FUNCTION(s_where, 0, 1)

static int
s_sum(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    uint64_t s = 0;
    for (size_t i = 0; i < argv[0].size; i++)
        s += ((const uint8_t *) argv[0].data)[i];
    return lux_set(lx, 0, &s, 8);
}
LUX_FUNCTION(s_sum, 1, 1)

static int
s_big(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t n;
    memcpy(&n, argv[0].data, 8);
    uint8_t *p = lux_set_alloc(lx, 0, (size_t) n);
    if (!p)
        return lux_raise(lx, "no room for %lld bytes", (long long) n);
    for (int64_t i = 0; i < n; i++)
        p[i] = (uint8_t) ((i * 7 + 3) % 251);
    return 0;
}
LUX_FUNCTION(s_big, 1, 1)

static int
s_get(lux_t *lx, const lux_ref_t *r, lux_val_t *v)
{
    if (lux_get(lx, r, v, 120000)) {
        printf("error: %s\n", lux_errmsg());
        return 1;
    }
    return 0;
}

static int
s_main(lux_t *lx, int argc, char **argv)
{
    if (argc < 4)
        return 2;
    long long n = atoll(argv[2]);
    lux_opts_t o = {.resources = strcmp(argv[3], "-") ? argv[3] : NULL};
    lux_val_t v;
    if (strcmp(argv[1], "where") == 0) {
        lux_ref_t *r = calloc((size_t) n, sizeof *r);
        for (long long i = 0; r && i < n; i++)
            if (lux_call_opts(lx, &o, "s_where", 0, NULL, 1, &r[i]))
                return printf("error: %s\n", lux_errmsg()), 1;
        for (long long i = 0; r && i < n; i++) {
            if (s_get(lx, &r[i], &v))
                return 1;
            printf("%.*s\n", (int) v.size, (const char *) v.data);
        }
        free(r);
        return 0;
    }
    if (strcmp(argv[1], "sum") == 0) {
        uint8_t *p = malloc((size_t) n);
        uint64_t want = 0;
        for (long long i = 0; p && i < n; i++)
            want += p[i] = (uint8_t) ((i * 7 + 3) % 251);
        lux_ref_t in, out;
        if (!p || lux_put(lx, p, (size_t) n, &in) ||
            lux_call_opts(lx, &o, "s_sum", 1, (lux_arg_t[]) {LUX_REF(in)}, 1, &out))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (s_get(lx, &out, &v))
            return 1;
        printf("sum %llu want %llu\n", (unsigned long long) *(const uint64_t *) v.data,
               (unsigned long long) want);
        free(p);
        return 0;
    }
    if (strcmp(argv[1], "big") == 0) {
        int64_t b = n;
        lux_ref_t out;
        if (lux_call_opts(lx, &o, "s_big", 1, (lux_arg_t[]) {LUX_VAL(&b, 8)}, 1, &out))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (s_get(lx, &out, &v))
            return 1;
        int bad = v.size != (size_t) b;
        for (int64_t i = 0; !bad && i < b; i++)
            bad = ((const uint8_t *) v.data)[i] != (uint8_t) ((i * 7 + 3) % 251);
        printf("big %s (%zu bytes)\n", bad ? "wrong" : "ok", v.size);
        return bad;
    }
    return 2;
}
LUX_MAIN(s_main)

/*  3167-put-run - a helper of t/3167-put-in-event.sh, not a test: a job of
    puts of the sizes given, each read by a task, on the embedded default
    with the recording policy given, so that the test has a log of puts
    to look into and replay.

    usage: 3167-put-run RUNS_DIR RECORD_PUTS SIZE...
    RECORD_PUTS is lux_config_t's record_puts (0: the default; negative:
    none). Put k (from 1) holds SIZE bytes (at least 8) of t_big's pattern
    seeded by k; t_check of it must give (k + SIZE) mod 1000003, and is
    got before the next put. It prints the run's directory, then each
    put's object ID (40 hex digits), one a line. Exit status 0 when every
    check gave what it should.
*/
#include "lux.h"
#include "lib/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 60000
#define M 1000003 /* t/lib/testmod.c's */

static int
s_die(lux_t **lx, const char *what)
{
    fprintf(stderr, "3167-put-run: %s: %s\n", what, lux_errmsg());
    if (lx && *lx)
        lux_shutdown(lx);
    return 1;
}

int
main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: 3167-put-run RUNS_DIR RECORD_PUTS SIZE...\n");
        return 2;
    }
    int n = argc - 3;
    lux_config_t cfg = {.module = graph_module(), .dir = argv[1], .workers = 1,
                        .record_puts = strtoll(argv[2], NULL, 10)};
    lux_ref_t *puts = calloc((size_t) n, sizeof *puts);
    lux_t *lx = puts ? lux_init(&cfg) : NULL;
    if (!lx)
        return s_die(NULL, "lux_init");
    for (int k = 1; k <= n; k++) {
        int64_t size = strtoll(argv[2 + k], NULL, 10), seed = k;
        if (size < 8) {
            fprintf(stderr, "3167-put-run: a size of at least 8, not %s\n", argv[2 + k]);
            lux_shutdown(&lx);
            return 2;
        }
        uint8_t *p = malloc((size_t) size);
        if (!p)
            return s_die(&lx, "malloc");
        memcpy(p, &seed, 8);
        for (int64_t i = 8; i < size; i++)
            p[i] = (uint8_t) (seed * 31 + i);
        int rc = lux_put(lx, p, (size_t) size, &puts[k - 1]);
        free(p);
        if (rc)
            return s_die(&lx, "lux_put");
        lux_ref_t r;
        lux_val_t v;
        int64_t got = -1;
        if (lux_call(lx, "t_check", 1, (lux_arg_t[]) {LUX_REF(puts[k - 1])}, 1, &r) ||
            lux_get(lx, &r, &v, WAIT_MS))
            return s_die(&lx, "t_check");
        if (v.size == 8)
            memcpy(&got, v.data, 8);
        if (got != (seed + size) % M) {
            fprintf(stderr, "3167-put-run: t_check of put %d gave %lld, not %lld\n", k,
                    (long long) got, (long long) ((seed + size) % M));
            lux_shutdown(&lx);
            return 1;
        }
    }
    printf("%s\n", lux_dir(lx));
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < LUX_REF_LEN; i++)
            printf("%02x", puts[k].b[i]);
        printf("\n");
    }
    fflush(stdout);
    free(puts);
    return lux_shutdown(&lx) ? s_die(NULL, "lux_shutdown") : 0;
}

/*  9160-put-run - a helper of t/9160-timeline-one-clock.sh, not a test:
    runs a job whose events wait on their node behind puts being recorded
    for replay, with a worker killed meanwhile, so that a timeline drawn at
    the times events reached the log would draw things out of order.

    usage: 9160-put-run RUNS_DIR
    Prints the run's directory. Exit status 0 when the job went as planned.

    In the testmod module (t/lib/testmod.c), on the embedded default with 2
    workers:
      - a put of 32 MiB (its bytes recorded for replay by the node's blob
        writer while its object_put, and every event after it, waits);
      - t_mix of it, at once: a task reading a put;
      - t_crash with 2 attempts (kills its own worker both times: a retry,
        then a failure);
      - t_hnest, which puts 16 MiB from inside the task and has a subtask
        (t_h1) read that put: a put made inside a task.
*/
#include "lux.h"
#include "lib/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 120000
#define S_PUT (32u << 20)

static int
s_die(lux_t **lx, const char *what)
{
    fprintf(stderr, "9160-put-run: %s: %s\n", what, lux_errmsg());
    if (lx && *lx)
        lux_shutdown(lx);
    return 1;
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: 9160-put-run RUNS_DIR\n");
        return 2;
    }
    lux_config_t cfg = {.module = graph_module(), .dir = argv[1], .workers = 2};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        return s_die(NULL, "lux_init");
    uint8_t *big = malloc(S_PUT);
    if (!big)
        return s_die(&lx, "out of memory");
    for (size_t i = 0; i < S_PUT; i++)
        big[i] = (uint8_t) (i * 2654435761u >> 13);
    lux_ref_t put, mixed, crash, nest;
    int rc = lux_put(lx, big, S_PUT, &put);
    free(big);
    if (rc)
        return s_die(&lx, "put");
    int64_t one = 1;
    lux_arg_t a1[] = {LUX_REF(put), LUX_VAL(&one, 8)};
    if (lux_call(lx, "t_mix", 2, a1, 1, &mixed))
        return s_die(&lx, "t_mix");
    lux_opts_t twice = {.max_attempts = 2};
    if (lux_call_opts(lx, &twice, "t_crash", 0, NULL, 1, &crash))
        return s_die(&lx, "t_crash");
    /* t_hnest(ctl {salt, size0, putsize, subsize}, the ref's bytes) */
    int64_t ctl[4] = {5, 8, 16 << 20, 8};
    lux_arg_t a2[] = {LUX_VAL(ctl, sizeof ctl), LUX_VAL(mixed.b, LUX_REF_LEN)};
    if (lux_call(lx, "t_hnest", 2, a2, 1, &nest))
        return s_die(&lx, "t_hnest");
    lux_val_t v;
    if (lux_get(lx, &nest, &v, WAIT_MS))
        return s_die(&lx, "t_hnest's output");
    if (lux_get(lx, &crash, &v, WAIT_MS) != LUX_ETASK) {
        fprintf(stderr, "9160-put-run: t_crash did not fail\n");
        lux_shutdown(&lx);
        return 1;
    }
    printf("%s\n", lux_dir(lx));
    fflush(stdout);
    return lux_shutdown(&lx) ? s_die(NULL, "lux_shutdown") : 0;
}

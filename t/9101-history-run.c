/*  9101-history-run - a helper of t/9101-history.sh, not a test: runs a
    small job with failures and retries on the embedded default, so that
    the history tools (lux timeline, lineage, pull) have a real log to read.

    usage: 9101-history-run RUNS_DIR [--pure]
    It prints three lines: the run's directory; the object ID (40 hex
    digits) of the last task of a dependency chain, whose lineage holds a
    put, tasks of two returns and an actor call; and the object of the task
    downstream of the one whose worker was killed on each attempt. Exit
    status 0 when the job went as planned.

    What it does, in the testmod module (t/lib/testmod.c):
      - put a value; t_mix(put, 1); t_split of that (two returns); t_mix of
        both returns and the first: a chain with a put and every kind of
        edge;
      - t_crash, which kills its own worker with SIGKILL, with 2 attempts:
        two killed workers, a retry, then the task fails; t_mix of its
        output fails with it;
      - t_fail of the chain's end: a task that raises;
      - an actor Acc that checkpoints every 2 calls, its process killed with
        SIGKILL halfway, restarted from its checkpoint (actor_restarted);
      - the chain's end mixed with the actor's last result, the object
        printed.

    With --pure it runs a job whose every input is in the log (no put, no
    actor), for lux replay: t_mix(1, 2); t_split of that; t_mix of both
    returns and the first; t_fail of that; t_crash (its worker killed on
    both attempts). It prints the run's directory and the last t_mix's
    task ID (32 hex digits).
*/
#include "lux.h"
#include "lib/graph.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAIT_MS 60000

static int
s_die(lux_t **lx, const char *what)
{
    fprintf(stderr, "9101-history-run: %s: %s\n", what, lux_errmsg());
    if (lx && *lx)
        lux_shutdown(lx);
    return 1;
}

static int64_t
s_i64(const lux_val_t *v)
{
    int64_t x = 0;
    if (v->size >= 8)
        memcpy(&x, v->data, 8);
    return x;
}

/* The --pure job. */
static int
s_pure(lux_t *lx)
{
    int64_t one = 1, two = 2, three = 3;
    lux_ref_t a, sp[2], b, f, c;
    lux_val_t v;
    lux_arg_t a1[] = {LUX_VAL(&one, 8), LUX_VAL(&two, 8)};
    lux_arg_t a2[] = {LUX_REF(a), LUX_VAL(&three, 8)};
    lux_arg_t a3[] = {LUX_REF(sp[0]), LUX_REF(sp[1]), LUX_REF(a)};
    lux_arg_t a4[] = {LUX_REF(b)};
    lux_opts_t twice = {.max_attempts = 2};
    if (lux_call(lx, "t_mix", 2, a1, 1, &a) || lux_call(lx, "t_split", 2, a2, 2, sp) ||
        lux_call(lx, "t_mix", 3, a3, 1, &b) || lux_call(lx, "t_fail", 1, a4, 1, &f) ||
        lux_call_opts(lx, &twice, "t_crash", 0, NULL, 1, &c))
        return s_die(&lx, "a call");
    if (lux_get(lx, &b, &v, WAIT_MS))
        return s_die(&lx, "the last t_mix");
    if (lux_get(lx, &f, &v, WAIT_MS) != LUX_ETASK || lux_get(lx, &c, &v, WAIT_MS) != LUX_ETASK) {
        fprintf(stderr, "9101-history-run: t_fail or t_crash did not fail\n");
        lux_shutdown(&lx);
        return 1;
    }
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", b.b[i]);
    printf("%s\n%s\n", lux_dir(lx), hex);
    fflush(stdout);
    return lux_shutdown(&lx) ? s_die(NULL, "lux_shutdown") : 0;
}

int
main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--pure") != 0)) {
        fprintf(stderr, "usage: 9101-history-run RUNS_DIR [--pure]\n");
        return 2;
    }
    lux_config_t cfg = {.module = graph_module(), .dir = argv[1], .workers = 2};
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        return s_die(NULL, "lux_init");
    if (argc == 3)
        return s_pure(lx);

    /* the chain */
    int64_t one = 1, two = 2, seven = 7;
    lux_ref_t put, mixed, split[2], end;
    if (lux_put(lx, &seven, 8, &put))
        return s_die(&lx, "put");
    lux_arg_t a1[] = {LUX_REF(put), LUX_VAL(&one, 8)};
    if (lux_call(lx, "t_mix", 2, a1, 1, &mixed))
        return s_die(&lx, "t_mix");
    lux_arg_t a2[] = {LUX_REF(mixed), LUX_VAL(&two, 8)};
    if (lux_call(lx, "t_split", 2, a2, 2, split))
        return s_die(&lx, "t_split");
    lux_arg_t a3[] = {LUX_REF(split[0]), LUX_REF(split[1]), LUX_REF(mixed)};
    if (lux_call(lx, "t_mix", 3, a3, 1, &end))
        return s_die(&lx, "t_mix");
    lux_val_t v;
    if (lux_get(lx, &end, &v, WAIT_MS))
        return s_die(&lx, "the chain's end");

    /* a task that kills its worker each time, and one downstream of it */
    lux_opts_t twice = {.max_attempts = 2};
    lux_ref_t crash, after_crash, failed;
    if (lux_call_opts(lx, &twice, "t_crash", 0, NULL, 1, &crash))
        return s_die(&lx, "t_crash");
    lux_arg_t a4[] = {LUX_REF(crash)};
    if (lux_call(lx, "t_mix", 1, a4, 1, &after_crash))
        return s_die(&lx, "t_mix after t_crash");
    if (lux_get(lx, &after_crash, &v, WAIT_MS) != LUX_ETASK) {
        fprintf(stderr, "9101-history-run: t_mix after t_crash did not fail\n");
        lux_shutdown(&lx);
        return 1;
    }
    lux_arg_t a5[] = {LUX_REF(end)};
    if (lux_call(lx, "t_fail", 1, a5, 1, &failed))
        return s_die(&lx, "t_fail");
    if (lux_get(lx, &failed, &v, WAIT_MS) != LUX_ETASK) {
        fprintf(stderr, "9101-history-run: t_fail did not fail\n");
        lux_shutdown(&lx);
        return 1;
    }

    /* an actor that checkpoints, killed and restarted */
    int64_t zero = 0;
    lux_actor_t acc;
    lux_actor_opts_t ao = {.max_restarts = 1, .checkpoint_every = 2};
    lux_arg_t c0[] = {LUX_VAL(&zero, 8)};
    if (lux_actor_create(lx, "Acc", 1, c0, &ao, &acc))
        return s_die(&lx, "Acc");
    lux_ref_t r, pidref;
    for (int64_t i = 0; i < 3; i++) {
        lux_arg_t ca[] = {LUX_VAL(&zero, 8), LUX_VAL(&i, 8)};
        if (lux_actor_call(lx, &acc, "add", 2, ca, 1, &r))
            return s_die(&lx, "Acc.add");
    }
    if (lux_actor_call(lx, &acc, "pid", 0, NULL, 1, &pidref) ||
        lux_get(lx, &pidref, &v, WAIT_MS))
        return s_die(&lx, "Acc.pid");
    pid_t apid = (pid_t) s_i64(&v);
    if (apid <= 1 || kill(apid, SIGKILL)) {
        fprintf(stderr, "9101-history-run: cannot kill the actor's process %d\n", (int) apid);
        lux_shutdown(&lx);
        return 1;
    }
    lux_arg_t ca[] = {LUX_VAL(&zero, 8), LUX_VAL(&seven, 8)};
    if (lux_actor_call(lx, &acc, "add", 2, ca, 1, &r) || lux_get(lx, &r, &v, WAIT_MS))
        return s_die(&lx, "Acc.add after the kill");

    /* the chain's end and the actor's result together */
    lux_ref_t last;
    lux_arg_t a6[] = {LUX_REF(end), LUX_REF(r)};
    if (lux_call(lx, "t_mix", 2, a6, 1, &last) || lux_get(lx, &last, &v, WAIT_MS))
        return s_die(&lx, "the last t_mix");

    char hex[2 * LUX_REF_LEN + 1], hex2[2 * LUX_REF_LEN + 1];
    for (int i = 0; i < LUX_REF_LEN; i++) {
        snprintf(hex + 2 * i, 3, "%02x", last.b[i]);
        snprintf(hex2 + 2 * i, 3, "%02x", after_crash.b[i]);
    }
    printf("%s\n%s\n%s\n", lux_dir(lx), hex, hex2);
    fflush(stdout);
    return lux_shutdown(&lx) ? s_die(NULL, "lux_shutdown") : 0;
}

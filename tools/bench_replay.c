/*  bench_replay - `lux bench replay_tasks`: how fast `lux replay --verify`
    re-runs and checks a recorded job.

    replay_tasks   tasks/s that `lux replay RUN --verify` replays and
                   verifies, end to end: reading the log, checking the
                   module's hash, a fresh embedded cluster of 2 workers
                   started and stopped, the recorded put read from the blob
                   store and its hash checked, every task submitted again
                   and its outputs' fingerprint compared with the recorded
                   one. The job (recorded first, on the embedded default,
                   with examples/hello/hello.so): a put, N/2 tasks
                   square(i), and N/2 tasks add(square(i), square(i+1),
                   put), N = 2000 (100 with --quick). Also reported: the
                   seconds the recorded run took, for scale.
*/
#include "lux_bench.h"
#include "lux.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Record the job of n tasks; its run's directory into dir. */
static int
s_record(bench_ctx_t *ctx, const char *mod, int n, char *dir, size_t dn, double *seconds)
{
    lux_config_t cfg = {.module = mod, .dir = ctx->tmp, .workers = 2};
    int64_t t0 = util_mono_ns();
    lux_t *lx = lux_init(&cfg);
    if (!lx)
        return util_err_ctx(LUX_EIO, "lux_init");
    int half = n / 2, rc = 0;
    lux_ref_t *sq = calloc((size_t) half + 1, sizeof *sq);
    lux_ref_t *sum = calloc((size_t) half + 1, sizeof *sum);
    lux_ref_t put;
    int64_t seven = 7;
    if (!sq || !sum)
        rc = util_err(LUX_ENOMEM, "out of memory");
    if (!rc)
        rc = lux_put(lx, &seven, sizeof seven, &put);
    for (int64_t i = 0; i < half && !rc; i++)
        rc = lux_call(lx, "square", 1, (lux_arg_t[]) {LUX_VAL(&i, 8)}, 1, &sq[i]);
    for (int i = 0; i < half && !rc; i++)
        rc = lux_call(lx, "add", 3,
                      (lux_arg_t[]) {LUX_REF(sq[i]), LUX_REF(sq[(i + 1) % half]), LUX_REF(put)}, 1,
                      &sum[i]);
    for (int i = 0; i < half && !rc; i++) {
        lux_val_t v;
        rc = lux_get(lx, &sum[i], &v, 120000);
    }
    snprintf(dir, dn, "%s", lux_dir(lx));
    lux_shutdown(&lx);
    *seconds = (double) (util_mono_ns() - t0) / 1e9;
    free(sq);
    free(sum);
    return rc;
}

static int
s_bench_replay(bench_ctx_t *ctx, const char *name)
{
    (void) name;
    char mod[PATH_MAX], dir[PATH_MAX];
    int rc;
    int n = 2 * ((int) (1000 * ctx->scale) + 25);
    double recorded = 0;
    if ((rc = bench_own_cluster(ctx, "it records a job on an embedded cluster of its own")) ||
        (rc = bench_build_file(mod, sizeof mod, "examples/hello/hello.so")) || (rc = s_record(ctx, mod, n, dir, sizeof dir, &recorded)))
        return rc;
    /* the replay's clusters go under ctx->tmp, removed at the end; its
       report to /dev/null */
    char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", ctx->tmp, 1);
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved < 0 || null < 0) {
        rc = util_err(LUX_EIO, "cannot redirect the replay's report");
        goto out;
    }
    dup2(null, 1);
    char *argv[] = {"replay", dir, "--verify", NULL};
    int64_t t0 = util_mono_ns();
    int status = cmd_replay(3, argv);
    double seconds = (double) (util_mono_ns() - t0) / 1e9;
    fflush(stdout);
    dup2(saved, 1);
    if (status != 0) {
        rc = util_err(LUX_ECORRUPT, "lux replay %s --verify exited with %d, not 0", dir, status);
        goto out;
    }
    bench_report(ctx, "replay_tasks", n / seconds, "tasks/s",
                 ", \"tasks\": %d, \"seconds\": %.3f, \"recorded_run_seconds\": %.3f,"
                 " \"workers\": 2",
                 n, seconds, recorded);
out:
    if (saved >= 0)
        close(saved);
    if (null >= 0)
        close(null);
    if (old_tmp) {
        setenv("TMPDIR", old_tmp, 1);
        free(old_tmp);
    } else
        unsetenv("TMPDIR");
    return rc;
}

const bench_t bench_replay[] = {
    {"replay_tasks", s_bench_replay, "tasks/s lux replay --verify re-runs and checks"},
};
const int bench_replay_n = sizeof bench_replay / sizeof bench_replay[0];

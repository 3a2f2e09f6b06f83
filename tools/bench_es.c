/*  bench_es - the main job's benchmarks (lux bench):

    es_cartpole_rollouts         the main job's rollouts/s: `lux run examples/es/es.so`
                                 for 100 iterations of CartPole-v1, 2 workers and 1
    es_cartpole_overhead         Lux's overhead on the main job: the training time of
                                 es.so on 2 workers over that of examples/es/es_local
                                 (the same ES, a plain loop on 2 threads), 200
                                 iterations of CartPole-v1 without evaluations, 20
                                 alternating pairs; the geometric mean of the ratios

    Each runs `lux run examples/es/es.so` of the build tree this lux
    belongs to (or $LUX_BUILDDIR's) as a user would.
*/
#include "lux_bench.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_time.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* examples/es/es.so, the main job's module. */
static int
s_es_module(char *out, size_t n)
{
    return bench_build_file(out, n, "examples/es/es.so");
}

/* Run argv (NULL-terminated); its output, NUL-ended (free() it), or NULL
   with the error set when it could not run or failed (exit status 1, "not
   solved", is not a failure). */
static char *
s_capture(char *const argv[])
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC)) {
        util_err(LUX_EIO, "pipe: %s", strerror(errno));
        return NULL;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    util_buf_t b;
    util_buf_init(&b);
    char chunk[4096];
    ssize_t k;
    while ((k = read(fd[0], chunk, sizeof chunk)) > 0)
        util_buf_put(&b, chunk, (size_t) k);
    util_buf_put_u8(&b, 0);
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
        (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)) {
        util_buf_free(&b);
        util_err(LUX_EIO, "%s failed (%s %d)", argv[0],
                 pid >= 0 && WIFSIGNALED(status) ? "signal" : "exit status",
                 pid >= 0 && WIFSIGNALED(status) ? WTERMSIG(status)
                 : WIFEXITED(status)              ? WEXITSTATUS(status)
                                                  : -1);
        return NULL;
    }
    size_t len;
    return (char *) util_buf_take(&b, &len);
}

/* The number after "field": in json, or -1. */
static double
s_json_num(const char *json, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", field);
    const char *p = strstr(json, key);
    return p ? strtod(p + strlen(key), NULL) : -1.0;
}

/* The string after "field": in json, into out (n bytes); "" if none. */
static void
s_json_str(const char *json, const char *field, char *out, size_t n)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":\"", field);
    const char *p = strstr(json, key);
    out[0] = '\0';
    if (p) {
        p += strlen(key);
        size_t k = strcspn(p, "\"");
        snprintf(out, n, "%.*s", (int) (k < n ? k : n - 1), p);
    }
}

/* One run of es.so for 100 iterations: its rollouts/s (from --json). */
static int
s_es_run(bench_ctx_t *ctx, const char *mod, int workers, double *rate)
{
    char exe[PATH_MAX], w[16], iters[16];
    if (util_self_exe(exe, sizeof exe))
        return util_err(LUX_EIO, "es_cartpole_rollouts: cannot find this lux");
    snprintf(w, sizeof w, "%d", workers);
    snprintf(iters, sizeof iters, "%d", ctx->scale < 1 ? 10 : 100);
    char *argv[] = {exe, "run", "--dir", ctx->tmp, (char *) mod, "--env", "CartPole-v1", "--seed",
                    "1", "--workers", w, "--max-iters", iters, "--target", "1e9", "--no-report",
                    "--json", NULL};
    char *out = s_capture(argv);
    if (!out)
        return LUX_EIO; /* s_capture said why */
    *rate = s_json_num(out, "rollouts_per_second");
    free(out);
    if (*rate < 0)
        return util_err(LUX_EIO, "es_cartpole_rollouts: es.so gave no rollouts_per_second");
    return 0;
}

static int
s_es(bench_ctx_t *ctx, const char *name)
{
    char mod[PATH_MAX];
    double two[3], one[3];
    int rc = bench_own_cluster(ctx, "it times `lux run`, which starts a cluster of its own");
    if (!rc)
        rc = s_es_module(mod, sizeof mod);
    for (int r = 0; r < 3 && !rc; r++) {
        if (!(rc = s_es_run(ctx, mod, 2, &two[r])))
            rc = s_es_run(ctx, mod, 1, &one[r]);
    }
    if (rc)
        return rc;
    double m2 = bench_median(two, 3), m1 = bench_median(one, 3);
    bench_report(ctx, "es_cartpole_rollouts", m2, "rollouts/s",
                 ", \"workers\": 2, \"one_worker\": %.0f, \"scaling\": %.2f, \"iterations\": %d,"
                 " \"min\": %.0f, \"max\": %.0f", m1, m1 > 0 ? m2 / (2 * m1) : 0,
                 ctx->scale < 1 ? 10 : 100, two[0], two[2]);
    return 0;
}

/* Lux's overhead on the main job: es.so against es_local, alternating
   (which goes first alternates too), each run's own training time (es.so:
   train_seconds; es_local: seconds less its noise table), no evaluations.
   The weights must be the same in every run. */
static int
s_es_overhead(bench_ctx_t *ctx, const char *name)
{
    char mod[PATH_MAX], local[PATH_MAX], exe[PATH_MAX];
    int rc = bench_own_cluster(ctx, "it times `lux run`, which starts a cluster of its own");
    if (rc || (rc = s_es_module(mod, sizeof mod)) ||
        (rc = bench_build_file(local, sizeof local, "examples/es/es_local")))
        return rc;
    if (util_self_exe(exe, sizeof exe))
        return util_err(LUX_EIO, "%s: cannot find this lux", name);
    int pairs = ctx->scale < 1 ? 2 : 20;
    const char *iters = ctx->scale < 1 ? "20" : "200";
    char *lux_argv[] = {exe, "run", "--dir", ctx->tmp, mod, "--env", "CartPole-v1", "--seed", "1",
                        "--workers", "2", "--max-iters", (char *) iters, "--target", "1e9",
                        "--eval-every", "1000000", "--no-report", "--json", NULL};
    char *local_argv[] = {local, "--env", "CartPole-v1", "--seed", "1", "--threads", "2",
                          "--max-iters", (char *) iters, "--target", "1e9", "--eval-every",
                          "1000000", "--json", "--quiet", NULL};
    double ratio[20], sum = 0, sumsq = 0, lux_s = 0, local_s = 0;
    char want[40] = "", other[40] = ""; /* the first run's weights; any that differ */
    for (int i = 0; i < pairs; i++) {
        double t[2];
        for (int k = 0; k < 2; k++) {
            int which = (k + i) % 2; /* 0: es.so, 1: es_local */
            char *out = s_capture(which ? local_argv : lux_argv), h[40];
            if (!out)
                return LUX_EIO; /* s_capture said why */
            t[which] = which ? s_json_num(out, "seconds") - s_json_num(out, "noise_seconds")
                             : s_json_num(out, "train_seconds");
            s_json_str(out, "weights_hash", h, sizeof h);
            free(out);
            if (!want[0])
                snprintf(want, sizeof want, "%s", h);
            if (!h[0] || strcmp(h, want))
                snprintf(other, sizeof other, "%s", h[0] ? h : "none");
        }
        if (t[0] <= 0 || t[1] <= 0)
            return util_err(LUX_EIO, "%s: a run gave no training time", name);
        ratio[i] = t[0] / t[1];
        sum += log(ratio[i]);
        sumsq += log(ratio[i]) * log(ratio[i]);
        lux_s += t[0];
        local_s += t[1];
    }
    double m = sum / pairs, sd = pairs > 1 ? sqrt((sumsq / pairs - m * m) * pairs / (pairs - 1)) : 0;
    double median = bench_median(ratio, pairs); /* sorts ratio */
    bench_report(ctx, name, exp(m), "x",
                 ", \"se\": %.4f, \"median\": %.4f, \"min\": %.4f, \"max\": %.4f, "
                 "\"pairs\": %d, \"iterations\": %s, \"workers\": 2, \"es_so_seconds\": %.3f, "
                 "\"es_local_seconds\": %.3f, \"same_weights\": %s",
                 exp(m) * sd / sqrt(pairs), median, ratio[0], ratio[pairs - 1], pairs, iters,
                 lux_s / pairs, local_s / pairs, other[0] ? "false" : "true");
    if (other[0])
        return util_err(LUX_EIO, "%s: the runs ended with different weights (%s, %s)", name,
                        want, other);
    return 0;
}

const bench_t bench_es[] = {
    {"es_cartpole_rollouts", s_es, "the main job (ES, CartPole-v1), rollouts/s"},
    {"es_cartpole_overhead", s_es_overhead, "es.so over es_local, 2 workers, training time"},
};
const int bench_es_n = sizeof bench_es / sizeof bench_es[0];

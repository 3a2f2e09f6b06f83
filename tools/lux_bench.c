/*  lux_bench - `lux bench [--json] [--quick] [--dir DIR] [NAME...]`.

    Runs the named benchmarks (all when none is named) and reports each
    result as it comes. Timings are measured here, in one run, so ratios
    between results are what to compare on a noisy machine; where a
    benchmark repeats, it reports the median.
*/
#include "lux_bench.h"
#include "lux_cmd.h"
#include "lux_opt.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_id.h"

#include <czmq.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool
bench_wants(const bench_ctx_t *ctx, const char *name)
{
    for (int k = 0; k < ctx->nnames; k++)
        if (strcmp(ctx->names[k], name) == 0)
            return true;
    return ctx->nnames == 0;
}

void
bench_report(bench_ctx_t *ctx, const char *name, double value, const char *unit,
             const char *extra, ...)
{
    char more[1024] = "";
    if (!bench_wants(ctx, name))
        return;
    if (extra) {
        va_list ap;
        va_start(ap, extra);
        vsnprintf(more, sizeof more, extra, ap);
        va_end(ap);
    }
    if (ctx->json) {
        printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"%s}\n", name, value, unit, more);
    } else {
        printf("%-28s %14.6g %-12s %s\n", name, value, unit, more[0] ? more + 2 : "");
    }
    fflush(stdout);
}

double
bench_median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* t/9155 checks that a benchmark failing in its own work reports its
   cause, not the complaint of the stop that follows. */
int
bench_test_head_gone(const db_cluster_t *c)
{
    const char *g = getenv("LUX_TEST_BENCH_HEAD_GONE");
    if (g && strcmp(g, "1") == 0 && lux_head_stop(c->dir, 30000))
        fprintf(stderr, "lux bench: LUX_TEST_BENCH_HEAD_GONE: %s\n", lux_errmsg());
    return 0;
}

int
bench_cluster_start(bench_ctx_t *ctx, db_cluster_t *c, uint32_t shards, uint32_t replicas,
                    const lux_node_args_t *node)
{
    if (ctx->dir) {
        int rc = db_cluster_load(c, ctx->dir);
        if (rc)
            return rc;
        if (!lux_head_pid(c->dir))
            return util_err(LUX_EDEAD, "no head is running in %s", ctx->dir);
        return 0;
    }
    util_id_t id;
    char hex[UTIL_ID_HEX];
    db_cluster_defaults(c);
    util_id_random(&id);
    snprintf(c->dir, sizeof c->dir, "%s/c-%.8s", ctx->tmp, util_id_hex(&id, hex));
    c->shards = shards;
    c->replicas = replicas;
    /* LUX_BENCH_CHECKPOINTS=off: no periodic signed checkpoints, to
       measure what they cost (alternate runs with and without); =N: one
       every N events, so that a --quick run's log holds checkpoint events
       among the benchmark's as a full-size one does (t/9155) */
    const char *ck = getenv("LUX_BENCH_CHECKPOINTS");
    bool off = ck && strcmp(ck, "off") == 0;
    long every = ck && !off ? strtol(ck, NULL, 10) : 0;
    lux_node_args_t args = node ? *node : (lux_node_args_t) {.log_only = true};
    if (off)
        args.checkpoint_s = args.checkpoint_events = -1;
    else if (every > 0)
        args.checkpoint_events = every;
    int rc = lux_head_start(c, true, 60000, &args);
    return rc ? rc : bench_test_head_gone(c);
}

int
bench_build_file(char *out, size_t n, const char *rel)
{
    char exe[PATH_MAX], dir[PATH_MAX];
    const char *b = getenv("LUX_BUILDDIR");
    if (b && *b) {
        snprintf(out, n, "%s/%s", b, rel);
        if (access(out, R_OK) == 0)
            return 0;
    }
    /* the build tree: lux is its top directory's (or .libs/lux, one below) */
    if (util_self_exe(exe, sizeof exe) == 0) {
        snprintf(dir, sizeof dir, "%s", exe);
        for (int up = 0; up < 2; up++) {
            char *slash = strrchr(dir, '/');
            if (!slash)
                break;
            *slash = '\0';
            snprintf(out, n, "%s/%s", dir, rel);
            if (access(out, R_OK) == 0)
                return 0;
        }
    }
    return util_err(LUX_ENOTFOUND, "%s is not built next to this lux (run it from the build "
                    "tree, or set LUX_BUILDDIR)", rel);
}

int
bench_own_cluster(const bench_ctx_t *ctx, const char *why)
{
    return ctx->dir ? util_err(LUX_ENOSYS, "%s; run it without --dir", why) : 0;
}

void
bench_cluster_stop(bench_ctx_t *ctx, db_cluster_t *c)
{
    char cmd[PATH_MAX + 32], why[UTIL_ERRMSG_MAX];
    if (ctx->dir)
        return;
    /* the stop must not replace the message of what failed before it (a
       head that died says "no head is running", not why the bench failed) */
    snprintf(why, sizeof why, "%s", util_errmsg());
    if (lux_head_stop(c->dir, 30000))
        fprintf(stderr, "lux bench: stopping the head in %s: %s\n", c->dir, lux_errmsg());
    if (why[0])
        util_err(LUX_EIO, "%s", why);
    else
        util_err_clear();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "lux bench: could not remove %s\n", c->dir);
}

static const char s_usage[] = "lux bench [--json] [--quick] [--dir DIR] [--list] [NAME...]";

#define S_MAX_BENCH 64
static const bench_t *s_all[S_MAX_BENCH];
static int s_nall;

static void
s_collect(void)
{
    s_nall = 0;
    for (int i = 0; i < bench_exec_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_exec[i];
    for (int i = 0; i < bench_log_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_log[i];
    for (int i = 0; i < bench_cluster_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_cluster[i];
    for (int i = 0; i < bench_replay_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_replay[i];
    for (int i = 0; i < bench_xfer_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_xfer[i];
    for (int i = 0; i < bench_sched_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_sched[i];
    for (int i = 0; i < bench_locality_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_locality[i];
    for (int i = 0; i < bench_es_n && s_nall < S_MAX_BENCH; i++)
        s_all[s_nall++] = &bench_es[i];
}

int
cmd_bench(int argc, char **argv)
{
    bench_ctx_t ctx = {.scale = 1.0};
    const char *names[64];
    int nnames = 0, failed = 0;
    bool list = false;

    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"quick", no_argument, 0, 'q'},
        {"list", no_argument, 0, 'l'}, {"dir", required_argument, 0, 'd'}, {0}};
    lux_opt_t p = {.cmd = "bench", .usage = s_usage, .opts = opts,
                   .help = "--quick runs each benchmark on 5% of its work (a smoke test, not a "
                           "measurement).\n--dir DIR runs the task, object and actor benchmarks "
                           "against the running cluster in\nDIR; the others start clusters of "
                           "their own, and are skipped when none is named.\n\n"};
    int o;
    while ((o = lux_opt_next(&p, argc, argv)) != -1) {
        if (o == 'j')
            ctx.json = true;
        else if (o == 'q')
            ctx.scale = 0.05;
        else if (o == 'l')
            list = true;
        else if (o == 'd')
            ctx.dir = optarg;
        else if (p.status == 0) { /* --help: the usage, then the list */
            list = true;
            break;
        } else
            return p.status;
    }
    if (!list && !lux_opt_args(&p, argc, argv, 0, 64, ""))
        return 2;
    for (int i = optind; !list && i < argc; i++)
        names[nnames++] = argv[i];
    s_collect();
    if (list) {
        printf("benchmarks:\n");
        for (int i = 0; i < s_nall; i++)
            printf("  %-28s %s\n", s_all[i]->name, s_all[i]->what);
        return 0;
    }
    for (int k = 0; k < nnames; k++) {
        bool known = false;
        for (int i = 0; i < s_nall; i++)
            known = known || strcmp(names[k], s_all[i]->name) == 0;
        if (!known)
            return lux_opt_usage(&p, "no benchmark named '%s' (see --list)", names[k]);
    }
    const char *t = getenv("TMPDIR");
    snprintf(ctx.tmp, sizeof ctx.tmp, "%s/lux-bench-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(ctx.tmp))
        return lux_fail("bench", "cannot make a directory under %s", t ? t : "/tmp");
    zsys_init();
    ctx.names = names;
    ctx.nnames = nnames;
    /* run each requested benchmark once; a function may report several
       names at once (they are measured together), so remember which ran */
    bool done[S_MAX_BENCH] = {false};
    for (int i = 0; i < s_nall; i++) {
        bool want = nnames == 0;
        for (int k = 0; k < nnames; k++)
            want = want || strcmp(names[k], s_all[i]->name) == 0;
        if (!want || done[i])
            continue;
        for (int j = i; j < s_nall; j++)
            if (s_all[j]->fn == s_all[i]->fn)
                done[j] = true;
        int rc = s_all[i]->fn(&ctx, s_all[i]->name);
        if (rc == LUX_ENOSYS && ctx.dir && nnames == 0) {
            /* all of them against a running cluster: those that cannot be are skipped */
            fprintf(stderr, "lux bench: %s: skipped: %s\n", s_all[i]->name, lux_errmsg());
        } else if (rc) {
            fprintf(stderr, "lux bench: %s: %s\n", s_all[i]->name, lux_errmsg());
            failed++;
        }
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ctx.tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "lux bench: could not remove %s\n", ctx.tmp);
    return failed ? 1 : 0;
}

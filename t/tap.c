/*  tap - TAP output, counting, and a scratch directory per test. */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int s_planned = -1;
static int s_run;
static int s_failed;
static char s_tmp[256];
static void (*s_hooks[16])(void);
static int s_nhooks;

bool
tap_verbose(void)
{
    const char *v = getenv("LUX_TEST_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

static void
s_cleanup(void)
{
    for (int i = s_nhooks - 1; i >= 0; i--)
        s_hooks[i]();
    s_nhooks = 0;
    if (s_tmp[0] && !s_failed && !getenv("LUX_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_tmp);
        if (system(cmd) != 0)
            fprintf(stderr, "# could not remove %s\n", s_tmp);
    } else if (s_tmp[0]) {
        fprintf(stderr, "# kept %s\n", s_tmp);
    }
}

void
tap_atexit(void (*fn)(void))
{
    if (s_nhooks < 16)
        s_hooks[s_nhooks++] = fn;
}

static void
s_register(void)
{
    static int done;
    if (!done) {
        done = 1;
        atexit(s_cleanup);
        setvbuf(stdout, NULL, _IOLBF, 0);
    }
}

void
plan(int n)
{
    s_register();
    s_planned = n;
    printf("1..%d\n", n);
}

void
skip_all(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    exit(0);
}

int
done_testing(void)
{
    if (s_planned < 0)
        printf("1..%d\n", s_run);
    else if (s_planned != s_run) {
        printf("# planned %d tests but ran %d\n", s_planned, s_run);
        s_failed++;
    }
    return s_failed ? 1 : 0;
}

static bool
s_report(bool cond, const char *fmt, va_list ap)
{
    s_register();
    s_run++;
    if (!cond && !strstr(fmt, "# TODO")) /* a TODO check's failure is expected */
        s_failed++;
    printf("%sok %d - ", cond ? "" : "not ", s_run);
    vprintf(fmt, ap);
    printf("\n");
    return cond;
}

bool
ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_report(cond, fmt, ap);
    va_end(ap);
    return cond;
}

bool
is_int(int64_t got, int64_t want, const char *fmt, ...)
{
    va_list ap;
    bool c = got == want;
    va_start(ap, fmt);
    s_report(c, fmt, ap);
    va_end(ap);
    if (!c)
        printf("#   got: %lld\n#   expected: %lld\n", (long long) got, (long long) want);
    return c;
}

bool
is_str(const char *got, const char *want, const char *fmt, ...)
{
    va_list ap;
    bool c = got && want ? strcmp(got, want) == 0 : got == want;
    va_start(ap, fmt);
    s_report(c, fmt, ap);
    va_end(ap);
    if (!c)
        printf("#   got: '%s'\n#   expected: '%s'\n", got ? got : "(null)", want ? want : "(null)");
    return c;
}

void
skip(const char *why)
{
    s_register();
    s_run++;
    printf("ok %d # skip %s\n", s_run, why);
}

void
diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "# ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void
bail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("Bail out! ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    s_failed++;
    exit(255);
}

const char *
tap_tmpdir(void)
{
    if (!s_tmp[0]) {
        const char *base = getenv("TMPDIR");
        s_register();
        snprintf(s_tmp, sizeof s_tmp, "%s/lux-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(s_tmp))
            bail("mkdtemp %s failed", s_tmp);
    }
    return s_tmp;
}

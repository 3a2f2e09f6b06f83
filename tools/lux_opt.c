/*  lux_opt - the command line of every lux command, parsed one way (see
    lux_opt.h): getopt_long with --help added, its own messages off, and
    every error printed as "lux CMD: what is wrong" and the usage. */
#include "lux_opt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_HELP 0x10000 /* --help's val: above any short option's */
#define S_MAX_OPTS 64

static struct option s_all[S_MAX_OPTS + 2];
static char s_shorts[128];

int
lux_opt_usage(lux_opt_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lux %s: ", p->cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nusage: %s\n", p->usage);
    va_end(ap);
    return p->status = 2;
}

static void
s_start(lux_opt_t *p)
{
    size_t n = 0;
    for (; p->opts && p->opts[n].name && n < S_MAX_OPTS; n++)
        s_all[n] = p->opts[n];
    s_all[n++] = (struct option){"help", no_argument, NULL, S_HELP};
    s_all[n] = (struct option){0};
    /* '+': stop at the first argument (lux run); ':': a missing value is
       reported as ':' rather than '?' */
    snprintf(s_shorts, sizeof s_shorts, "%s:h%s", p->in_order ? "+" : "",
             p->shorts ? p->shorts : "");
    opterr = 0;
    optind = 0; /* glibc: start again from argv[1], forgetting any earlier scan */
    p->started_ = true;
}

int
lux_opt_next(lux_opt_t *p, int argc, char **argv)
{
    if (!p->started_)
        s_start(p);
    int o = getopt_long(argc, argv, s_shorts, s_all, NULL);
    for (bool kept = true; kept && o != -1;) { /* a kept one: on to the next */
        kept = false;
        for (const lux_opt_str_t *k = p->strs; k && k->to && !kept; k++)
            if (k->val == o) {
                *k->to = optarg;
                kept = true;
            }
        if (kept)
            o = getopt_long(argc, argv, s_shorts, s_all, NULL);
    }
    if (o == 'h' || o == S_HELP) {
        printf("usage: %s\n", p->usage);
        if (p->help)
            printf("\n%s", p->help);
        p->status = 0;
        return LUX_OPT_EXIT;
    }
    if (o == '?' || o == ':') {
        /* the option as typed: a long one is the last word scanned (up to
           any '='); a short one is optopt */
        const char *word = optind > 0 && optind <= argc ? argv[optind - 1] : "";
        char name[64];
        if (strncmp(word, "--", 2) == 0)
            snprintf(name, sizeof name, "%.*s", (int) strcspn(word, "="), word);
        else
            snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
        if (o == ':')
            lux_opt_usage(p, "%s needs a value", name);
        else
            lux_opt_usage(p, "unknown option '%s'", name);
        return LUX_OPT_EXIT;
    }
    return o;
}

bool
lux_opt_uint(lux_opt_t *p, const char *name, unsigned long max, bool allow_zero,
             unsigned long *out)
{
    const char *s = optarg ? optarg : "";
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || *s == '-' || *s == '+' || (v == 0 && !allow_zero) || v > max) {
        lux_opt_usage(p, "%s must be a number from %d to %lu, not '%s'", name, allow_zero ? 0 : 1,
                      max, s);
        return false;
    }
    *out = v;
    return true;
}

bool
lux_opt_args(lux_opt_t *p, int argc, char **argv, int min, int max, const char *what)
{
    int n = argc - optind;
    if (n < min) {
        lux_opt_usage(p, "%s is required", what);
        return false;
    }
    if (max >= 0 && n > max) {
        lux_opt_usage(p, "unexpected argument '%s'", argv[optind + max]);
        return false;
    }
    return true;
}

bool
lux_opt_resources(lux_opt_t *p, const char *name)
{
    const char *s = optarg ? optarg : "";
    char names[16][32];
    bool given[16] = {false};
    int kinds = 1; /* CPU is always one; CPU=N overrides its default, once */
    snprintf(names[0], sizeof names[0], "CPU");
    while (*s) {
        size_t len = strcspn(s, ","), nlen = strcspn(s, "=,");
        char item[256], *end;
        snprintf(item, sizeof item, "%.*s", (int) len, s);
        double v = nlen < len ? strtod(item + nlen + 1, &end) : -1;
        if (nlen == 0 || nlen >= len || nlen > 30 || end == item + nlen + 1 || *end || !(v >= 0)) {
            lux_opt_usage(p, "%s: '%s' is not NAME=AMOUNT (a name of 1 to 30 characters, an "
                          "amount of 0 or more)", name, item);
            return false;
        }
        int k = 0;
        while (k < kinds && (strlen(names[k]) != nlen || strncmp(names[k], s, nlen)))
            k++;
        if (k == kinds) {
            if (kinds == 16) {
                lux_opt_usage(p, "%s: at most 16 kinds of resources", name);
                return false;
            }
            snprintf(names[kinds++], sizeof names[0], "%.*s", (int) nlen, s);
        }
        if (given[k]) {
            lux_opt_usage(p, "%s: '%s' is given twice", name, names[k]);
            return false;
        }
        given[k] = true;
        s += len + (s[len] == ',');
    }
    return true;
}

/*  phase_marks - an LD_PRELOAD shim that marks the phases of a `lux bench`
    run (tools/bench/phase-cost; doc/benchmarks.md, 2026-11-29), so that the
    work of one benchmark's operations can be counted apart from starting
    the cluster and from the other phases.

    A mark is taken when the benchmark calls a different lux API function
    than its previous call (lux_put, lux_get, lux_get_many, lux_call,
    lux_actor_call, lux_free; calls made inside the API are not marks), and
    after each lux_free of more than one ref. At each mark, one line to
    $MARK_OUT: wall ns, this process's CPU ns (all threads: embedded, the
    node manager and the log run in the benchmark's process), its user and
    system ticks, and the CPU ticks of its child processes (the workers);
    under valgrind --tool=callgrind, a dump, so that each dump holds the
    instructions of all the process's threads since the previous mark.
    MARK_RECORD_PUTS=N sets the embedded cluster's record_puts (-1: none).

    Not part of lux: built by tools/bench/phase-cost, with -I src. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#include <valgrind/callgrind.h>
#include "lux.h"

static const char *last;
static int seq;

static long long
s_children_ticks(char *pids, size_t n)
{
    long long sum = 0;
    pid_t me = getpid();
    DIR *d = opendir("/proc");
    pids[0] = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = 0;
        char *p = strrchr(buf, ')');
        if (!p)
            continue;
        int ppid;
        unsigned long ut, st;
        /* after ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        if (sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ppid, &ut, &st) != 3)
            continue;
        if (ppid != me)
            continue;
        sum += (long long) (ut + st);
        size_t l = strlen(pids);
        if (l + 16 < n)
            snprintf(pids + l, n - l, "%s%s", l ? "," : "", e->d_name);
    }
    closedir(d);
    return sum;
}

/* this process's user and system ticks (all threads) */
static void
s_self_ticks(unsigned long *ut, unsigned long *st)
{
    char buf[1024];
    *ut = *st = 0;
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f)
        return;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *p = strrchr(buf, ')');
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", ut, st);
}

static void
s_mark(const char *what)
{
    unsigned long sut, sst;
    s_self_ticks(&sut, &sst);
    struct timespec w, c;
    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    char pids[512];
    long long kids = s_children_ticks(pids, sizeof pids);
    char name[64];
    snprintf(name, sizeof name, "m%02d-%s", seq, what);
    CALLGRIND_DUMP_STATS_AT(name);
    const char *out = getenv("MARK_OUT");
    FILE *f = out ? fopen(out, "ae") : stderr;
    if (f) {
        fprintf(f, "pid=%d %d %s wall_ns=%lld cpu_ns=%lld utime=%lu stime=%lu kids_ticks=%lld kids=%s\n", (int) getpid(), seq, what,
                (long long) w.tv_sec * 1000000000LL + w.tv_nsec,
                (long long) c.tv_sec * 1000000000LL + c.tv_nsec, sut, sst, kids, pids);
        if (f != stderr)
            fclose(f);
    }
    seq++;
}

static __thread int depth; /* calls of the API from inside the API are not marks */

static void
s_enter(const char *fn)
{
    if (depth == 1 && last != fn) {
        last = fn;
        s_mark(fn);
    }
}

#define NEXT(T, name) static __typeof__(T) *real; if (!real) real = dlsym(RTLD_NEXT, name)






int lux_put(lux_t *lx, const void *data, size_t size, lux_ref_t *out)
{
    NEXT(int (lux_t *, const void *, size_t, lux_ref_t *), "lux_put");
    depth++;
    s_enter("put");
    int rc = real(lx, data, size, out);
    depth--;
    return rc;
}
int lux_get(lux_t *lx, const lux_ref_t *ref, lux_val_t *out, int timeout_ms)
{
    NEXT(int (lux_t *, const lux_ref_t *, lux_val_t *, int), "lux_get");
    depth++;
    s_enter("get");
    int rc = real(lx, ref, out, timeout_ms);
    depth--;
    return rc;
}
int lux_get_many(lux_t *lx, int n, const lux_ref_t *refs, lux_val_t *out, int timeout_ms)
{
    NEXT(int (lux_t *, int, const lux_ref_t *, lux_val_t *, int), "lux_get_many");
    depth++;
    s_enter("get_many");
    int rc = real(lx, n, refs, out, timeout_ms);
    depth--;
    return rc;
}
void lux_free(lux_t *lx, int n, const lux_ref_t *refs)
{
    NEXT(void (lux_t *, int, const lux_ref_t *), "lux_free");
    depth++;
    s_enter("free");
    real(lx, n, refs);
    depth--;
    if (depth == 0 && n > 1) {
        /* the node's handling of the FREE is part of the operations: a
           round trip behind it (the node answers a connection's messages
           in order) keeps it inside the phase. Without it a build's
           count held anything from 5% to all of that work, depending on
           where the node thread was when the mark was taken (stop 45) */
        if (!getenv("MARK_NO_FREE_SYNC")) {
            lux_actor_t a;
            depth++;
            (void) lux_actor_lookup(lx, "phase-cost: free sync", &a, 0);
            depth--;
        }
        s_mark("free_end");
        last = NULL;
    }
}
int lux_call(lux_t *lx, const char *fn, int argc, const lux_arg_t *argv, int nout, lux_ref_t *outs)
{
    NEXT(int (lux_t *, const char *, int, const lux_arg_t *, int, lux_ref_t *), "lux_call");
    depth++;
    s_enter("call");
    int rc = real(lx, fn, argc, argv, nout, outs);
    depth--;
    return rc;
}
int lux_actor_call(lux_t *lx, const lux_actor_t *a, const char *m, int argc, const lux_arg_t *argv,
                   int nout, lux_ref_t *outs)
{
    NEXT(int (lux_t *, const lux_actor_t *, const char *, int, const lux_arg_t *, int,
                 lux_ref_t *), "lux_actor_call");
    depth++;
    s_enter("actor_call");
    int rc = real(lx, a, m, argc, argv, nout, outs);
    depth--;
    return rc;
}
__attribute__((destructor)) static void
s_end(void)
{
    if (seq)
        s_mark("exit");
}

/* MARK_RECORD_PUTS=N: the embedded cluster's record_puts (-1: none); main's lux.h */
lux_t *lux_init(const lux_config_t *cfg)
{
    NEXT(lux_t *(const lux_config_t *), "lux_init");
    const char *r = getenv("MARK_RECORD_PUTS");
    if (r && *r && cfg) {
        lux_config_t c = *cfg;
        c.record_puts = strtoll(r, NULL, 10);
        return real(&c);
    }
    return real(cfg);
}

/*  schedmod - the module of the scheduling tests across nodes (t/6052):
    tasks that say which node ran them (its directory, lux_dir), a sum of
    an argument's bytes, a large value, and an entry point that submits
    them (`lux run --address DIR schedmod.so MODE ...`):

        where N RES      N calls of s_where with resources RES ("-": none);
                         prints each one's directory, one a line
        sum BYTES RES    put BYTES bytes (i * 7 + 3, mod 251), call
                         s_sum(ref) with RES; prints "sum S want W"
        chain N BYTES K FILE  a chain of N calls of s_link, each taking the
                         one before's output of BYTES bytes; gets the last,
                         writes link K's ref to FILE, waits for FILE.done (at most 10
                         minutes), then gets link K (rebuilt from its
                         lineage when evicted) and prints "chain ok|wrong
                         MS" (MS: that get's wall time)
        big BYTES RES    call s_big(BYTES) with RES; prints "big ok" when
                         every byte is right
        nap MS RES       call s_nap(MS) with RES: it makes DIR/napping (DIR
                         its node's directory), sleeps MS ms and returns DIR;
                         prints DIR
        naps N MS        N calls of s_nap(MS) at once; prints each one's DIR
        hold BYTES FILE  put BYTES bytes (the pattern above), write the
                         ref's hex to FILE, and keep it (this driver holds
                         it) until FILE.done exists (at most 10 minutes)
        make BYTES FILE  the same with the output of s_big(BYTES), a task
                         run where this driver is (lineage in the log)
        makeon BYTES RES FILE  the same with s_big(BYTES) called with RES
                         (run wherever RES sends it, its output sent back)
        waited BYTES RES FILE  as makeon, but the driver waits for the
                         output (lux_wait) and never reads it: nothing of
                         it is pinned, so its node may evict it (t/6162)
        marks N RES FILE  N calls of s_mark with RES (no return values: it
                         makes DIR/marked), then one of s_where with RES;
                         prints its DIR, makes FILE and waits (at most 10
                         minutes) for FILE.done
        pin BYTES FILE   put BYTES bytes and get them (pinned in this node's
                         store while this driver lives), make FILE, wait
                         for FILE.done (at most 10 minutes)
        prio W G FILE    (W, G: refs in hex, held on another node) lux_get
                         of G without waiting, then lux_wait for W without
                         waiting (both pulls asked), make FILE, then wait
                         for FILE.done (at most 10 minutes)
        steps N MS RES   N calls of s_step(i, MS) with RES at once (i = 0 ..
                         N-1): each makes DIR/step.I (failing when it is
                         there: the call ran twice on that node), sleeps MS
                         ms and returns "I DIR"; prints each result in
                         order (a failed one "I error: MESSAGE", exit 1)
        get BYTES HEX [FILE]  lux_get of the ref HEX (held on another node:
                         pulled here); prints "get ok|wrong (N bytes)" after
                         checking it against the pattern of BYTES. With FILE:
                         makes FILE.ready once connected, and gets only once
                         FILE exists (at most 10 minutes)
        echo HEX BYTES RES  call s_echo(the ref HEX) with RES: a copy of
                         the argument and the directory of the node that
                         ran it; prints "echo ok|wrong (N bytes) DIR" after
                         checking the copy against the pattern of BYTES
        lat OVER_MS RES RUN_MS  one call of s_where with RES, then calls one
                         at a time (submit to result) for RUN_MS ms; prints
                         "lat N tasks, K over OVER_MS ms, slowest S ms" of
                         those after the first
    s_big waits while DIR/big.slow exists and DIR/big.go does not (at most
    10 minutes): a rebuild that does not end (t/3140).
    A failed get prints "error: MESSAGE" and exits 1.
*/
#include "lux.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    /* DIR/big.slow (DIR its node's directory): a rebuild that does not
       end until DIR/big.go exists (at most 10 minutes; t/3140) */
    char slow[1200], go[1200];
    snprintf(slow, sizeof slow, "%s/big.slow", lux_dir(lx));
    snprintf(go, sizeof go, "%s/big.go", lux_dir(lx));
    for (int i = 0; i < 6000 && access(slow, F_OK) == 0 && access(go, F_OK) != 0; i++)
        nanosleep(&(struct timespec) {.tv_sec = 0, .tv_nsec = 100000000L}, NULL);
    uint8_t *p = lux_set_alloc(lx, 0, (size_t) n);
    if (!p)
        return lux_raise(lx, "no room for %lld bytes", (long long) n);
    for (int64_t i = 0; i < n; i++)
        p[i] = (uint8_t) ((i * 7 + 3) % 251);
    return 0;
}
LUX_FUNCTION(s_big, 1, 1)

static int
s_nap(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t ms;
    memcpy(&ms, argv[0].data, 8);
    const char *d = lux_dir(lx);
    char path[1200];
    snprintf(path, sizeof path, "%s/napping", d);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return lux_set(lx, 0, d, strlen(d) + 1);
}
LUX_FUNCTION(s_nap, 1, 1)

/* Step i (argument 0) of a batch: DIR/step.I made, never twice on one
   node; sleeps MS (argument 1) ms; "I DIR". */
static int
s_step(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t i, ms;
    memcpy(&i, argv[0].data, 8);
    memcpy(&ms, argv[1].data, 8);
    const char *d = lux_dir(lx);
    char path[1200], out[1200];
    snprintf(path, sizeof path, "%s/step.%lld", d, (long long) i);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return lux_raise(lx, "step %lld ran twice on %s (%s)", (long long) i, d, strerror(errno));
    close(fd);
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int n = snprintf(out, sizeof out, "%lld %s", (long long) i, d);
    return lux_set(lx, 0, out, (size_t) n + 1);
}
LUX_FUNCTION(s_step, 2, 1)

/* No return values: it makes DIR/marked (DIR its node's directory). */
static int
s_mark(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc, (void) argv;
    char path[1200];
    snprintf(path, sizeof path, "%s/marked", lux_dir(lx));
    FILE *f = fopen(path, "w");
    if (!f || fclose(f))
        return lux_raise(lx, "cannot make %s", path);
    return 0;
}
LUX_FUNCTION(s_mark, 0, 0)

static int
s_echo(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    const char *d = lux_dir(lx);
    int rc = lux_set(lx, 0, argv[0].data, argv[0].size);
    return rc ? rc : lux_set(lx, 1, d, strlen(d) + 1);
}
LUX_FUNCTION(s_echo, 1, 2)

/* Link i of a chain: argument 0 the previous link's output (or 8 bytes
   of nothing for the first), argument 1 i; returns BYTES (argument 2)
   bytes, byte j = (j * 7 + 3 + i) % 251, after checking the previous
   link's first byte (i - 1 + 3) % 251. */
static int
s_link(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t i, n;
    memcpy(&i, argv[1].data, 8);
    memcpy(&n, argv[2].data, 8);
    if (i > 0 && (argv[0].size < 1 || ((const uint8_t *) argv[0].data)[0] != (i + 2) % 251))
        return lux_raise(lx, "link %lld: the previous link's bytes are wrong", (long long) i);
    uint8_t *p = lux_set_alloc(lx, 0, (size_t) n);
    if (!p)
        return lux_raise(lx, "no room for %lld bytes", (long long) n);
    for (int64_t j = 0; j < n; j++)
        p[j] = (uint8_t) ((j * 7 + 3 + i) % 251);
    return 0;
}
LUX_FUNCTION(s_link, 3, 1)

/* Whether v holds the pattern of n bytes. */
static bool
s_pattern_ok(const lux_val_t *v, int64_t n)
{
    if (v->size != (size_t) n)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (((const uint8_t *) v->data)[i] != (uint8_t) ((i * 7 + 3) % 251))
            return false;
    return true;
}

/* Write r's hex to path, then wait for path.done (at most 10 minutes). */
static int
s_hold(const lux_ref_t *r, const char *path)
{
    char hex[2 * LUX_REF_LEN + 1], done[1100], tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", lux_ref_hex(r, hex)) < 0 || fclose(f) || rename(tmp, path))
        return printf("error: cannot write %s\n", path), 1;
    snprintf(done, sizeof done, "%s.done", path);
    for (int i = 0; i < 6000 && access(done, F_OK) != 0; i++) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 100000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int
s_get(lux_t *lx, const lux_ref_t *r, lux_val_t *v)
{
    if (lux_get(lx, r, v, 120000)) {
        printf("error: %s\n", lux_errmsg());
        return 1;
    }
    return 0;
}

/* n calls of fn (with o), all submitted before the first get; each
   result printed on a line of its own, in order. */
static int
s_many(lux_t *lx, const lux_opts_t *o, const char *fn, int argc, const lux_arg_t *args,
       long long n)
{
    lux_ref_t *r = calloc((size_t) (n > 0 ? n : 1), sizeof *r);
    lux_val_t v;
    if (!r)
        return printf("error: out of memory\n"), 1;
    for (long long i = 0; i < n; i++)
        if (lux_call_opts(lx, o, fn, argc, args, 1, &r[i]))
            return printf("error: %s\n", lux_errmsg()), 1;
    for (long long i = 0; i < n; i++) {
        if (s_get(lx, &r[i], &v))
            return 1;
        printf("%.*s\n", (int) v.size, (const char *) v.data);
    }
    free(r);
    return 0;
}

static int64_t
s_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int
s_main(lux_t *lx, int argc, char **argv)
{
    if (argc < 4)
        return 2;
    long long n = atoll(argv[2]);
    lux_opts_t o = {.resources = strcmp(argv[3], "-") ? argv[3] : NULL};
    lux_val_t v;
    if (strcmp(argv[1], "where") == 0)
        return s_many(lx, &o, "s_where", 0, NULL, n);
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
    if (strcmp(argv[1], "hold") == 0 || strcmp(argv[1], "make") == 0) {
        lux_ref_t r;
        if (argv[1][0] == 'h') {
            uint8_t *p = malloc((size_t) n);
            for (long long i = 0; p && i < n; i++)
                p[i] = (uint8_t) ((i * 7 + 3) % 251);
            if (!p || lux_put(lx, p, (size_t) n, &r))
                return printf("error: %s\n", lux_errmsg()), 1;
            free(p);
        } else {
            int64_t b = n;
            if (lux_call(lx, "s_big", 1, (lux_arg_t[]) {LUX_VAL(&b, 8)}, 1, &r) ||
                s_get(lx, &r, &v))
                return printf("error: %s\n", lux_errmsg()), 1;
        }
        return s_hold(&r, argv[3]);
    }
    if (strcmp(argv[1], "makeon") == 0 && argc >= 5) { /* makeon N RES FILE */
        lux_ref_t r; /* a task needing RES makes N bytes; this driver holds them */
        int64_t b = n;
        if (lux_call_opts(lx, &o, "s_big", 1, (lux_arg_t[]) {LUX_VAL(&b, 8)}, 1, &r) ||
            s_get(lx, &r, &v))
            return printf("error: %s\n", lux_errmsg()), 1;
        return s_hold(&r, argv[4]);
    }
    if (strcmp(argv[1], "waited") == 0 && argc >= 5) { /* waited N RES FILE */
        lux_ref_t r;
        int64_t b = n;
        int ready = 0;
        if (lux_call_opts(lx, &o, "s_big", 1, (lux_arg_t[]) {LUX_VAL(&b, 8)}, 1, &r))
            return printf("error: %s\n", lux_errmsg()), 1;
        int got = lux_wait(lx, 1, &r, 1, 120000, &ready);
        if (got != 1 || ready != 1)
            return printf("error: %s\n", got < 0 ? lux_errmsg() : "not ready in 120 s"), 1;
        return s_hold(&r, argv[4]);
    }
    if (strcmp(argv[1], "freed") == 0) { /* freed N - FILE: made here, then freed */
        lux_ref_t r;
        int64_t b = n;
        if (lux_call(lx, "s_big", 1, (lux_arg_t[]) {LUX_VAL(&b, 8)}, 1, &r) ||
            s_get(lx, &r, &v))
            return printf("error: %s\n", lux_errmsg()), 1;
        lux_free(lx, 1, &r); /* this node lets its copy go (object_lost on a tcp cluster) */
        int none = 0;
        lux_wait(lx, 0, NULL, 0, 0, &none); /* sends the free (lux_free only queues it) */
        return s_hold(&r, argv[3]);
    }
    if (strcmp(argv[1], "pin") == 0) {
        uint8_t *p = calloc(1, (size_t) n);
        lux_ref_t r;
        if (!p || lux_put(lx, p, (size_t) n, &r) || s_get(lx, &r, &v))
            return printf("error: %s\n", lux_errmsg()), 1;
        free(p);
        return s_hold(&r, argv[3]);
    }
    if (strcmp(argv[1], "prio") == 0) {
        lux_ref_t w, g;
        int ready = 0;
        if (argc < 5 || lux_ref_parse(&w, argv[2]) || lux_ref_parse(&g, argv[3]))
            return 2;
        lux_get(lx, &g, &v, 0);
        lux_wait(lx, 1, &w, 1, 0, &ready);
        return s_hold(&g, argv[4]);
    }
    if (strcmp(argv[1], "marks") == 0) {
        lux_ref_t r;
        if (argc < 5)
            return 2;
        for (long long i = 0; i < n; i++)
            if (lux_call_opts(lx, &o, "s_mark", 0, NULL, 0, NULL))
                return printf("error: %s\n", lux_errmsg()), 1;
        if (lux_call_opts(lx, &o, "s_where", 0, NULL, 1, &r) || s_get(lx, &r, &v))
            return printf("error: %s\n", lux_errmsg()), 1;
        printf("%.*s\n", (int) v.size, (const char *) v.data);
        fflush(stdout);
        return s_hold(&r, argv[4]);
    }
    if (strcmp(argv[1], "get") == 0) { /* get BYTES HEX */
        lux_ref_t r;
        if (lux_ref_parse(&r, argv[3]))
            return 2;
        if (argc >= 5) {
            char ready[1100];
            snprintf(ready, sizeof ready, "%s.ready", argv[4]);
            FILE *f = fopen(ready, "w");
            if (!f || fclose(f))
                return printf("error: cannot write %s\n", ready), 1;
            for (int i = 0; i < 6000 && access(argv[4], F_OK) != 0; i++) {
                struct timespec ts = {.tv_sec = 0, .tv_nsec = 100000000L};
                nanosleep(&ts, NULL);
            }
        }
        if (s_get(lx, &r, &v))
            return 1;
        bool good = s_pattern_ok(&v, n);
        printf("get %s (%zu bytes)\n", good ? "ok" : "wrong", v.size);
        return good ? 0 : 1;
    }
    if (strcmp(argv[1], "echo") == 0) {
        lux_ref_t in, out[2];
        if (argc < 5 || strlen(argv[2]) != 2 * LUX_REF_LEN)
            return 2;
        for (int i = 0; i < LUX_REF_LEN; i++) {
            unsigned x;
            if (sscanf(argv[2] + 2 * i, "%2x", &x) != 1)
                return 2;
            in.b[i] = (uint8_t) x;
        }
        long long bytes = atoll(argv[3]);
        lux_opts_t eo = {.resources = strcmp(argv[4], "-") ? argv[4] : NULL};
        if (lux_call_opts(lx, &eo, "s_echo", 1, (lux_arg_t[]) {LUX_REF(in)}, 2, out))
            return printf("error: %s\n", lux_errmsg()), 1;
        lux_val_t d;
        if (s_get(lx, &out[0], &v) || s_get(lx, &out[1], &d))
            return 1;
        bool good = s_pattern_ok(&v, bytes);
        printf("echo %s (%zu bytes) %.*s\n", good ? "ok" : "wrong", v.size, (int) d.size,
               (const char *) d.data);
        return good ? 0 : 1;
    }
    if (strcmp(argv[1], "steps") == 0 && argc >= 5) { /* steps N MS RES */
        lux_opts_t so = {.resources = strcmp(argv[4], "-") ? argv[4] : NULL};
        int64_t ms = atoll(argv[3]);
        lux_ref_t *r = calloc((size_t) (n > 0 ? n : 1), sizeof *r);
        int bad = 0;
        if (!r)
            return printf("error: out of memory\n"), 1;
        for (int64_t i = 0; i < n; i++)
            if (lux_call_opts(lx, &so, "s_step", 2,
                              (lux_arg_t[]) {LUX_VAL(&i, 8), LUX_VAL(&ms, 8)}, 1, &r[i]))
                return printf("error: %s\n", lux_errmsg()), 1;
        for (int64_t i = 0; i < n; i++) {
            if (lux_get(lx, &r[i], &v, 120000)) {
                printf("%lld error: %s\n", (long long) i, lux_errmsg());
                bad = 1;
            } else {
                printf("%.*s\n", (int) v.size, (const char *) v.data);
            }
        }
        free(r);
        return bad;
    }
    if (strcmp(argv[1], "chain") == 0 && argc >= 6) { /* chain N BYTES K FILE */
        int64_t bytes = atoll(argv[3]), k = atoll(argv[4]), zero = 0;
        lux_ref_t *r = calloc((size_t) (n > 0 ? n : 1), sizeof *r);
        if (!r || k < 0 || k >= n)
            return printf("error: chain N BYTES K: K from 0 to N-1\n"), 1;
        for (int64_t i = 0; i < n; i++)
            if (lux_call(lx, "s_link", 3,
                         (lux_arg_t[]) {i ? LUX_REF(r[i - 1]) : LUX_VAL(&zero, 8), LUX_VAL(&i, 8),
                                        LUX_VAL(&bytes, 8)}, 1, &r[i]))
                return printf("error: %s\n", lux_errmsg()), 1;
        lux_val_t w;
        if (s_get(lx, &r[n - 1], &w))
            return 1;
        lux_free(lx, 1, &r[n - 1]);
        char hex[2 * LUX_REF_LEN + 1];
        FILE *f = fopen(argv[5], "w"); /* the chain is made: its early links may go */
        if (!f || fprintf(f, "%s\n", lux_ref_hex(&r[k], hex)) < 0 || fclose(f))
            return printf("error: cannot write %s\n", argv[5]), 1;
        char done[1100];
        snprintf(done, sizeof done, "%s.done", argv[5]);
        for (int i = 0; i < 6000 && access(done, F_OK) != 0; i++)
            nanosleep(&(struct timespec) {.tv_sec = 0, .tv_nsec = 100000000L}, NULL);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (s_get(lx, &r[k], &w))
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        bool good = w.size == (size_t) bytes;
        for (int64_t j = 0; good && j < bytes; j++)
            good = ((const uint8_t *) w.data)[j] == (uint8_t) ((j * 7 + 3 + k) % 251);
        printf("chain %s %lld ms\n", good ? "ok" : "wrong",
               (long long) ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
        free(r);
        return good ? 0 : 1;
    }
    if (strcmp(argv[1], "lat") == 0 && argc >= 5) { /* lat OVER_MS RES RUN_MS */
        /* after one task (the first decision may wait for the head's table),
           tasks one at a time, submit to result, for RUN_MS: how many, how
           many took over OVER_MS, the slowest (ms) */
        lux_ref_t r;
        int64_t run_ms = atoll(argv[4]), t0 = 0, tasks = 0, over = 0, slowest = 0;
        for (int64_t i = -1; i < 0 || s_ms() - t0 < run_ms; i++) {
            int64_t a = s_ms();
            if (lux_call_opts(lx, &o, "s_where", 0, NULL, 1, &r) || s_get(lx, &r, &v))
                return printf("error: %s\n", lux_errmsg()), 1;
            lux_free(lx, 1, &r);
            int64_t took = s_ms() - a;
            if (i < 0) {
                t0 = s_ms();
                continue;
            }
            tasks++;
            over += took > n;
            slowest = took > slowest ? took : slowest;
        }
        printf("lat %lld tasks, %lld over %lld ms, slowest %lld ms\n", (long long) tasks,
               (long long) over, n, (long long) slowest);
        return 0;
    }
    if (strcmp(argv[1], "naps") == 0) { /* naps N MS: no resources */
        int64_t ms = atoll(argv[3]);
        return s_many(lx, &(lux_opts_t) {0}, "s_nap", 1, (lux_arg_t[]) {LUX_VAL(&ms, 8)}, n);
    }
    if (strcmp(argv[1], "nap") == 0) {
        int64_t ms = n;
        lux_ref_t out;
        if (lux_call_opts(lx, &o, "s_nap", 1, (lux_arg_t[]) {LUX_VAL(&ms, 8)}, 1, &out))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (s_get(lx, &out, &v))
            return 1;
        printf("%.*s\n", (int) v.size, (const char *) v.data);
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

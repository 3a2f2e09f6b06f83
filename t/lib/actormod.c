/*  actormod - the module of the tests of actors across nodes (t/6070,
    t/6071, t/6119): a counter that says which node holds it, and an entry point
    (`lux run --address DIR actormod.so MODE ...`):

        own NAME RES RESTARTS K GO
                       create a counter named NAME holding resources RES
                       ("-": none) with max_restarts RESTARTS, call add K
                       times, print each answer, make the file GO.ready,
                       wait (up to 300 s) for the file GO, call add K
                       times more, print each answer, make GO.done, wait
                       for GO.end; the actor lives while this driver does
        use NAME K     find the counter named NAME (waiting up to 60 s),
                       call add K times, print each answer
        steps NAME GO N  find the counter named NAME (waiting up to 60
                       s); for i = 1..N wait (up to 300 s) for the file
                       GO.i, call add(1), print its answer (its get
                       waits at most 120 s): a call issued at a moment
                       the test picks (t/6152)
        bumps NAME RES K GO
                       create a counter named NAME holding RES, call bump
                       (add(1) with no return values) K times, then add(0),
                       print its answer, make GO.ready and wait (up to
                       300 s) for GO
        bump NAME K GO find the counter named NAME (waiting up to 60 s),
                       call bump K times, then add(0); print its answer,
                       make GO.ready and wait for GO
        ckpt NAME RES EVERY K GO
                       create a counter named NAME holding RES, with
                       max_restarts 1 and checkpoint_every EVERY; call
                       add(i) for i = 1..K, printing each count alone (no
                       directory), then "at DIR"; make GO.ready, wait for
                       GO, call add(i) for i = K+1..2K the same way, make
                       GO.done and end
        ckpt NAME RES EVERY K GO FILL
                       the same, with a counter whose checkpoints carry
                       256 KiB more (held in a store, not inline), and
                       FILL MiB of puts (4 MiB each, held to the end)
                       made after call K and before GO.ready: they fill
                       this node's store, so that the actor's checkpoint
                       held here is spilled (t/3169)
        asks NAME K GO create a counter named NAME with max_restarts 1;
                       call add(1) K times, printing each answer; make
                       GO.ready, wait for GO, call add(1) K times without
                       getting them, then lux_actor_checkpoint: print
                       "checkpoint ok" or "checkpoint error: MESSAGE";
                       then get the K calls, printing each answer (t/5024)
        behind NAME MS GO
                       create a counter named NAME; call add(1), print
                       its answer; make GO.ready, wait for GO; run nap(MS)
                       (a task that sleeps MS ms), call add with its
                       output (a call that waits for it), then
                       lux_actor_checkpoint: print "checkpoint ok" or
                       "checkpoint error: MESSAGE" and end (t/6160)
        loop NAME STOP find the counter named NAME (waiting up to 60 s),
                       call add(1) and print its answer until the file
                       STOP exists (then print "stopped" and end); a
                       get waits at most 60 s
        hold NAME RES BYTES FILE
                       create a counter named NAME holding RES ("-":
                       none), or with RES "=" find it (waiting up to
                       60 s); call fill(BYTES) (BYTES bytes, i * 7 + 3
                       mod 251), get it and check every byte, write the
                       ref's hex to FILE, wait for FILE.free, free it
                       (and send the free), make FILE.freed, wait for
                       FILE.done; waits are at most 300 s each
        rounds N K B EVERY GO
                       create N counters (max_restarts 100; counter j
                       with checkpoint_every the (j mod n)th of EVERY, a
                       list of n numbers "0,3,..."); for round r = 1..K
                       wait (up to 300 s) for the file GO.r, call adds(v)
                       (add, 3 ms slower) B times on each counter
                       (v = 1000 r + 10 i + j)
                       and then pid, all before any get; check each
                       add's count (the sum of its v so far, else print
                       "wrong: ..." and exit 1); write "j PID" lines (the
                       counter's process) to GO.pids, make GO.done.r.
                       Then print "counter j: COUNT DIR" for each
                       (t/6158: the counters' processes killed -9)
        slow NAME GO   find the counter named NAME (waiting up to 60 s),
                       call addslow(1) (add after 2 s), make GO.called
                       once the call is sent, print its answer (its get
                       waits at most 120 s) (t/6159)
    An answer is a line "DIR COUNT": the directory of the node that holds
    the counter (lux_dir) and its count after the call. A failed call
    prints "error: MESSAGE" and exits 1.
*/
#include "lux.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int64_t count;
    int64_t pad; /* its checkpoint's bytes after the count (t/3169): made by its
                    constructor's optional argument, a u64 */
} counter_t;

/* The pad's byte i: (i * 7 + 3) mod 251. */
static uint8_t
s_pad_byte(int64_t i)
{
    return (uint8_t) ((i * 7 + 3) % 251);
}

static void *
Counter_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) lx;
    counter_t *c = calloc(1, sizeof(counter_t));
    if (c && argc >= 1 && argv[0].size == 8)
        memcpy(&c->pad, argv[0].data, 8);
    return c;
}

static void
Counter_destroy(void *self)
{
    free(self);
}

/* The count (8 bytes), then with a pad its size (8) and its bytes. */
static int
Counter_save(lux_t *lx, void *self)
{
    counter_t *c = self;
    if (c->pad <= 0)
        return lux_set(lx, 0, &c->count, 8);
    uint8_t *p = malloc((size_t) c->pad + 16);
    if (!p)
        return lux_raise(lx, "save: no memory for %lld bytes", (long long) c->pad);
    memcpy(p, &c->count, 8);
    memcpy(p + 8, &c->pad, 8);
    for (int64_t i = 0; i < c->pad; i++)
        p[16 + i] = s_pad_byte(i);
    int rc = lux_set(lx, 0, p, (size_t) c->pad + 16);
    free(p);
    return rc;
}

static void *
Counter_load(lux_t *lx, const lux_val_t *state)
{
    counter_t *c = calloc(1, sizeof *c);
    const uint8_t *p = state->data;
    if (c && state->size >= 16)
        memcpy(&c->pad, p + 8, 8);
    bool good = c && (state->size == 8 || (c->pad > 0 && state->size == (size_t) c->pad + 16));
    for (int64_t i = 0; good && state->size > 8 && i < c->pad; i++)
        good = p[16 + i] == s_pad_byte(i);
    if (!good) {
        free(c);
        lux_raise(lx, "a counter's checkpoint is 8 bytes, or 16 and its pad: not these %zu",
                  state->size);
        return NULL;
    }
    memcpy(&c->count, p, 8);
    return c;
}
LUX_ACTOR(Counter, -1, Counter_create, Counter_destroy, Counter_save, Counter_load)

static int
Counter_add(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    (void) argc;
    counter_t *c = self;
    int64_t n;
    memcpy(&n, argv[0].data, 8);
    c->count += n;
    char out[1200];
    int k = snprintf(out, sizeof out, "%s %lld", lux_dir(lx), (long long) c->count);
    return lux_set(lx, 0, out, (size_t) k + 1);
}
LUX_METHOD(Counter, add, 1, 1)

/* adds(n): add(n), slowly (3 ms): a round of them is in flight for a
   while (t/6158) */
static int
Counter_adds(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    nanosleep(&(struct timespec) {.tv_nsec = 3000000L}, NULL);
    return Counter_add(lx, self, argc, argv);
}
LUX_METHOD(Counter, adds, 1, 1)

/* addslow(n): add(n) after 2 s: in flight while the test kills its node
   (t/6159) */
static int
Counter_addslow(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    nanosleep(&(struct timespec) {.tv_sec = 2}, NULL);
    return Counter_add(lx, self, argc, argv);
}
LUX_METHOD(Counter, addslow, 1, 1)

/* pid(): its process's ID (8 bytes) */
static int
Counter_pid(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    (void) self, (void) argc, (void) argv;
    int64_t pid = (int64_t) getpid();
    return lux_set(lx, 0, &pid, 8);
}
LUX_METHOD(Counter, pid, 0, 1)

/* add(1) with no return values */
static int
Counter_bump(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    (void) lx, (void) argc, (void) argv;
    ((counter_t *) self)->count++;
    return 0;
}
LUX_METHOD(Counter, bump, 0, 0)

/* fill(n): n bytes, byte i (i * 7 + 3) mod 251, as schedmod's puts */
static int
Counter_fill(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    (void) self, (void) argc;
    int64_t n;
    memcpy(&n, argv[0].data, 8);
    uint8_t *p = n >= 0 ? malloc((size_t) n + 1) : NULL;
    if (!p)
        return lux_raise(lx, "fill: cannot make %lld bytes", (long long) n);
    for (int64_t i = 0; i < n; i++)
        p[i] = (uint8_t) ((i * 7 + 3) % 251);
    int rc = lux_set(lx, 0, p, (size_t) n);
    free(p);
    return rc;
}
LUX_METHOD(Counter, fill, 1, 1)

/* K calls of bump, then add(0), its answer printed. 0, or 1 after
   printing the error. */
static int
s_bumps(lux_t *lx, const lux_actor_t *a, long k)
{
    int64_t zero = 0;
    lux_ref_t r;
    lux_val_t v;
    for (long i = 0; i < k; i++)
        if (lux_actor_call(lx, a, "bump", 0, NULL, 0, NULL))
            return printf("error: %s\n", lux_errmsg()), 1;
    if (lux_actor_call(lx, a, "add", 1, (lux_arg_t[]) {LUX_VAL(&zero, 8)}, 1, &r) ||
        lux_get(lx, &r, &v, 120000))
        return printf("error: %s\n", lux_errmsg()), 1;
    printf("%.*s\n", (int) v.size, (const char *) v.data);
    fflush(stdout);
    lux_free(lx, 1, &r);
    return 0;
}

/* K calls of add(1), each answer printed. 0, or 1 after printing the error. */
static int
s_calls(lux_t *lx, const lux_actor_t *a, long k)
{
    for (long i = 0; i < k; i++) {
        int64_t one = 1;
        lux_ref_t r;
        lux_val_t v;
        if (lux_actor_call(lx, a, "add", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &r) ||
            lux_get(lx, &r, &v, 120000)) {
            printf("error: %s\n", lux_errmsg());
            fflush(stdout);
            return 1;
        }
        printf("%.*s\n", (int) v.size, (const char *) v.data);
        fflush(stdout);
        lux_free(lx, 1, &r);
    }
    return 0;
}

/* nap(ms): sleeps ms (a u64) ms, returns 8 bytes, the number 1 */
static int
nap(lux_t *lx, int argc, const lux_val_t *argv)
{
    (void) argc;
    int64_t ms, one = 1;
    memcpy(&ms, argv[0].data, 8);
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return lux_set(lx, 0, &one, 8);
}
LUX_FUNCTION(nap, 1, 1)

/* Wait for the file path to exist (up to 300 s). */
static void
s_wait(const char *path)
{
    for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
        nanosleep(&(struct timespec) {.tv_nsec = 50000000L}, NULL);
}

/* Make go.ready, then wait for go. 0. */
static int
s_ready_wait(const char *go)
{
    char ready[1100];
    snprintf(ready, sizeof ready, "%s.ready", go);
    FILE *f = fopen(ready, "w");
    if (f)
        fclose(f);
    s_wait(go);
    return 0;
}

/* Make the file path (empty). */
static void
s_touch(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* hold: fill(n) on a, checked, its ref written to file; freed on
   file.free. 0, or 1 after printing the error. */
/* mib MiB of puts of 4 MiB, held (never freed: this driver's to its end). */
static int
s_fill(lux_t *lx, long mib)
{
    size_t n = 4u << 20;
    uint8_t *buf = malloc(n);
    if (!buf)
        return printf("error: out of memory\n"), 1;
    lux_ref_t r;
    lux_val_t v;
    for (long i = 0; i < mib / 4; i++) {
        memset(buf, (int) (i + 1), n);
        if (lux_put(lx, buf, n, &r)) {
            free(buf);
            return printf("error: put %ld: %s\n", i, lux_errmsg()), 1;
        }
    }
    free(buf);
    /* a get of the last sends the batch and answers once the node has them all */
    if (mib >= 4 && lux_get(lx, &r, &v, 120000))
        return printf("error: get of the last put: %s\n", lux_errmsg()), 1;
    return 0;
}

static int
s_hold(lux_t *lx, const lux_actor_t *a, int64_t n, const char *file)
{
    lux_ref_t r;
    lux_val_t v;
    char hex[2 * LUX_REF_LEN + 1], path[1100];
    if (lux_actor_call(lx, a, "fill", 1, (lux_arg_t[]) {LUX_VAL(&n, 8)}, 1, &r) ||
        lux_get(lx, &r, &v, 120000))
        return printf("error: %s\n", lux_errmsg()), 1;
    int64_t i = 0;
    while (v.size == (size_t) n && i < n &&
           ((const uint8_t *) v.data)[i] == (uint8_t) ((i * 7 + 3) % 251))
        i++;
    if (i < n || v.size != (size_t) n)
        return printf("error: fill's %zu bytes are not the pattern of %lld\n", v.size,
                          (long long) n), 1;
    snprintf(path, sizeof path, "%s.tmp", file);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%s\n", lux_ref_hex(&r, hex)) < 0 || fclose(f) || rename(path, file))
        return printf("error: cannot write %s\n", file), 1;
    snprintf(path, sizeof path, "%s.free", file);
    s_wait(path);
    lux_free(lx, 1, &r);
    int none = 0;
    lux_wait(lx, 0, NULL, 0, 0, &none); /* sends the free (lux_free only queues it) */
    snprintf(path, sizeof path, "%s.freed", file);
    s_touch(path);
    snprintf(path, sizeof path, "%s.done", file);
    s_wait(path);
    return 0;
}

/* rounds: n counters, k rounds of b calls each (see the top). 0, or 1
   after printing the error. */
#define S_ROUNDS_MAX 16
static int
s_rounds(lux_t *lx, int n, long k, long b, const char *every, const char *go)
{
    lux_actor_t a[S_ROUNDS_MAX];
    int64_t sum[S_ROUNDS_MAX] = {0};
    char dir[S_ROUNDS_MAX][1100];
    int evs[S_ROUNDS_MAX], nev = 0;
    for (const char *p = every; p && *p && nev < S_ROUNDS_MAX; p = strchr(p, ','), p = p ? p + 1 : p)
        evs[nev++] = atoi(p);
    if (n < 1 || n > S_ROUNDS_MAX || !nev || b < 1)
        return printf("error: rounds N (1..%d) K B EVERY GO\n", S_ROUNDS_MAX), 1;
    for (int j = 0; j < n; j++) {
        lux_actor_opts_t o = {.max_restarts = 100, .checkpoint_every = evs[j % nev]};
        if (lux_actor_create(lx, "Counter", 0, NULL, &o, &a[j]))
            return printf("error: creating counter %d: %s\n", j, lux_errmsg()), 1;
    }
    lux_ref_t *refs = malloc(sizeof *refs * (size_t) n * (size_t) (b + 1));
    if (!refs)
        return printf("error: out of memory\n"), 1;
    char path[1100], tmp[1100];
    for (long r = 1; r <= k; r++) {
        snprintf(path, sizeof path, "%s.%ld", go, r);
        s_wait(path);
        for (int j = 0; j < n; j++)
            for (long i = 0; i <= b; i++) {
                int64_t v = 1000 * r + 10 * i + j;
                lux_ref_t *out = &refs[j * (b + 1) + i];
                if (i < b ? lux_actor_call(lx, &a[j], "adds", 1, (lux_arg_t[]) {LUX_VAL(&v, 8)}, 1,
                                           out)
                          : lux_actor_call(lx, &a[j], "pid", 0, NULL, 1, out))
                    return printf("error: round %ld, counter %d, call %ld: %s\n", r, j, i,
                                  lux_errmsg()), 1;
            }
        snprintf(tmp, sizeof tmp, "%s.pids.tmp", go);
        FILE *f = fopen(tmp, "w");
        for (int j = 0; j < n; j++)
            for (long i = 0; i <= b; i++) {
                lux_val_t v;
                if (lux_get(lx, &refs[j * (b + 1) + i], &v, 120000))
                    return printf("error: round %ld, counter %d, call %ld: %s\n", r, j, i,
                                  lux_errmsg()), 1;
                if (i == b) {
                    int64_t pid = 0;
                    memcpy(&pid, v.data, v.size == 8 ? 8 : 0);
                    if (f)
                        fprintf(f, "%d %lld\n", j, (long long) pid);
                    continue;
                }
                sum[j] += 1000 * r + 10 * i + j;
                /* "DIR COUNT" and its NUL */
                const char *txt = v.size && ((const char *) v.data)[v.size - 1] == '\0' ? v.data : "";
                const char *last = strrchr(txt, ' ');
                long long got = last ? atoll(last + 1) : -1;
                if (got != sum[j])
                    return printf("wrong: round %ld, counter %d, call %ld: %.*s, not %lld\n", r,
                                  j, i, (int) v.size, (const char *) v.data, (long long) sum[j]),
                           1;
                snprintf(dir[j], sizeof dir[j], "%.*s", (int) (last - txt), txt);
            }
        lux_free(lx, n * (int) (b + 1), refs);
        snprintf(path, sizeof path, "%s.pids", go);
        if (!f || fclose(f) || rename(tmp, path))
            return printf("error: cannot write %s\n", path), 1;
        snprintf(path, sizeof path, "%s.done.%ld", go, r);
        s_touch(path);
    }
    free(refs);
    for (int j = 0; j < n; j++)
        printf("counter %d: %lld %s\n", j, (long long) sum[j], dir[j]);
    return 0;
}

static int
s_main(lux_t *lx, int argc, char **argv)
{
    lux_actor_t a;
    if (argc == 7 && strcmp(argv[1], "own") == 0) {
        lux_actor_opts_t o = {.name = argv[2],
                              .resources = strcmp(argv[3], "-") ? argv[3] : NULL,
                              .max_restarts = atoi(argv[4])};
        long k = atol(argv[5]);
        if (lux_actor_create(lx, "Counter", 0, NULL, &o, &a))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (s_calls(lx, &a, k))
            return 1;
        char ready[1100];
        snprintf(ready, sizeof ready, "%s.ready", argv[6]);
        FILE *f = fopen(ready, "w");
        if (f)
            fclose(f);
        s_wait(argv[6]);
        if (s_calls(lx, &a, k))
            return 1;
        snprintf(ready, sizeof ready, "%s.done", argv[6]);
        if ((f = fopen(ready, "w")))
            fclose(f);
        snprintf(ready, sizeof ready, "%s.end", argv[6]);
        s_wait(ready);
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "bumps") == 0) {
        lux_actor_opts_t o = {.name = argv[2],
                              .resources = strcmp(argv[3], "-") ? argv[3] : NULL};
        if (lux_actor_create(lx, "Counter", 0, NULL, &o, &a))
            return printf("error: %s\n", lux_errmsg()), 1;
        return s_bumps(lx, &a, atol(argv[4])) ? 1 : s_ready_wait(argv[5]);
    }
    if (argc == 5 && strcmp(argv[1], "bump") == 0) {
        if (lux_actor_lookup(lx, argv[2], &a, 60000))
            return printf("error: %s\n", lux_errmsg()), 1;
        return s_bumps(lx, &a, atol(argv[3])) ? 1 : s_ready_wait(argv[4]);
    }
    if ((argc == 7 || argc == 8) && strcmp(argv[1], "ckpt") == 0) {
        lux_actor_opts_t o = {.name = argv[2],
                              .resources = strcmp(argv[3], "-") ? argv[3] : NULL,
                              .max_restarts = 1, .checkpoint_every = atoi(argv[4])};
        long k = atol(argv[5]);
        char path[1100];
        int64_t pad = 256 * 1024; /* with FILL: a checkpoint held in the store, not inline */
        if (lux_actor_create(lx, "Counter", argc == 8, (lux_arg_t[]) {LUX_VAL(&pad, 8)}, &o, &a))
            return printf("error: %s\n", lux_errmsg()), 1;
        for (long i = 1; i <= 2 * k; i++) {
            int64_t n = i;
            lux_ref_t r;
            lux_val_t v;
            if (lux_actor_call(lx, &a, "add", 1, (lux_arg_t[]) {LUX_VAL(&n, 8)}, 1, &r) ||
                lux_get(lx, &r, &v, 120000))
                return printf("error: %s\n", lux_errmsg()), 1;
            const char *sp = strrchr((const char *) v.data, ' ');
            printf("%s\n", sp ? sp + 1 : "?");
            if (i == k || i == 2 * k) {
                printf("at %.*s\n", sp ? (int) (sp - (const char *) v.data) : 0,
                       (const char *) v.data);
                fflush(stdout);
                FILE *f = NULL;
                snprintf(path, sizeof path, "%s.done", argv[6]);
                if (i == 2 * k && (f = fopen(path, "w")))
                    fclose(f);
                if (i == k && argc == 8 && s_fill(lx, atol(argv[7])))
                    return 1;
                if (i == k) {
                    snprintf(path, sizeof path, "%s.ready", argv[6]);
                    if ((f = fopen(path, "w")))
                        fclose(f);
                    s_wait(argv[6]);
                }
            }
            lux_free(lx, 1, &r);
        }
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "asks") == 0) {
        lux_actor_opts_t o = {.name = argv[2], .max_restarts = 1};
        long k = atol(argv[3]);
        if (k < 1 || k > 64)
            return printf("error: K is 1 to 64\n"), 1;
        if (lux_actor_create(lx, "Counter", 0, NULL, &o, &a))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (s_calls(lx, &a, k))
            return 1;
        s_ready_wait(argv[4]);
        lux_ref_t r[64];
        lux_val_t v;
        int64_t one = 1;
        for (long i = 0; i < k; i++)
            if (lux_actor_call(lx, &a, "add", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &r[i]))
                return printf("error: %s\n", lux_errmsg()), 1;
        if (lux_actor_checkpoint(lx, &a))
            printf("checkpoint error: %s\n", lux_errmsg());
        else
            printf("checkpoint ok\n");
        fflush(stdout);
        for (long i = 0; i < k; i++) {
            if (lux_get(lx, &r[i], &v, 120000))
                return printf("error: %s\n", lux_errmsg()), 1;
            printf("%.*s\n", (int) v.size, (const char *) v.data);
        }
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "behind") == 0) {
        lux_actor_opts_t o = {.name = argv[2]};
        if (lux_actor_create(lx, "Counter", 0, NULL, &o, &a))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (s_calls(lx, &a, 1))
            return 1;
        s_ready_wait(argv[4]);
        int64_t ms = atoll(argv[3]);
        lux_ref_t n, r;
        if (lux_call(lx, "nap", 1, (lux_arg_t[]) {LUX_VAL(&ms, 8)}, 1, &n) ||
            lux_actor_call(lx, &a, "add", 1, (lux_arg_t[]) {LUX_REF(n)}, 1, &r))
            return printf("error: %s\n", lux_errmsg()), 1;
        if (lux_actor_checkpoint(lx, &a))
            printf("checkpoint error: %s\n", lux_errmsg());
        else
            printf("checkpoint ok\n");
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "loop") == 0) {
        if (lux_actor_lookup(lx, argv[2], &a, 60000))
            return printf("error: %s\n", lux_errmsg()), 1;
        while (access(argv[3], F_OK) != 0) {
            int64_t one = 1;
            lux_ref_t r;
            lux_val_t v;
            if (lux_actor_call(lx, &a, "add", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &r) ||
                lux_get(lx, &r, &v, 60000))
                return printf("error: %s\n", lux_errmsg()), 1;
            printf("%.*s\n", (int) v.size, (const char *) v.data);
            fflush(stdout);
            lux_free(lx, 1, &r);
        }
        printf("stopped\n");
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "hold") == 0) {
        lux_actor_opts_t o = {.name = argv[2],
                              .resources = strcmp(argv[3], "-") ? argv[3] : NULL};
        if (strcmp(argv[3], "=") == 0 ? lux_actor_lookup(lx, argv[2], &a, 60000)
                                      : lux_actor_create(lx, "Counter", 0, NULL, &o, &a))
            return printf("error: %s\n", lux_errmsg()), 1;
        return s_hold(lx, &a, atoll(argv[4]), argv[5]);
    }
    if (argc == 5 && strcmp(argv[1], "steps") == 0) {
        if (lux_actor_lookup(lx, argv[2], &a, 60000))
            return printf("error: %s\n", lux_errmsg()), 1;
        long n = atol(argv[4]);
        for (long i = 1; i <= n; i++) {
            char go[1100];
            snprintf(go, sizeof go, "%s.%ld", argv[3], i);
            s_wait(go);
            int64_t one = 1;
            lux_ref_t r;
            lux_val_t v;
            if (lux_actor_call(lx, &a, "add", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &r) ||
                lux_get(lx, &r, &v, 120000))
                return printf("error: %s\n", lux_errmsg()), 1;
            printf("%.*s\n", (int) v.size, (const char *) v.data);
            fflush(stdout);
            lux_free(lx, 1, &r);
        }
        return 0;
    }
    if (argc == 7 && strcmp(argv[1], "rounds") == 0)
        return s_rounds(lx, atoi(argv[2]), atol(argv[3]), atol(argv[4]), argv[5], argv[6]);
    if (argc == 4 && strcmp(argv[1], "slow") == 0) {
        int64_t one = 1;
        lux_ref_t r;
        lux_val_t v;
        char path[1100];
        if (lux_actor_lookup(lx, argv[2], &a, 60000) ||
            lux_actor_call(lx, &a, "addslow", 1, (lux_arg_t[]) {LUX_VAL(&one, 8)}, 1, &r))
            return printf("error: %s\n", lux_errmsg()), 1;
        int none = 0;
        lux_wait(lx, 0, NULL, 0, 0, &none); /* sends the call */
        snprintf(path, sizeof path, "%s.called", argv[3]);
        s_touch(path);
        if (lux_get(lx, &r, &v, 120000))
            return printf("error: %s\n", lux_errmsg()), 1;
        printf("%.*s\n", (int) v.size, (const char *) v.data);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "use") == 0) {
        if (lux_actor_lookup(lx, argv[2], &a, 60000))
            return printf("error: %s\n", lux_errmsg()), 1;
        return s_calls(lx, &a, atol(argv[3]));
    }
    return 2;
}
LUX_MAIN(s_main)

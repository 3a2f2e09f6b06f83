/*  testmod - the remote functions the runtime's tests call (built as a
    module, t/lib/.libs/testmod.so). Values are int64 unless said; every
    function is deterministic, as the contract asks, so a rebuilt or
    retried task gives the same bytes. */
#include "lux.h"
#include "hx.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int64_t
s_int(const lux_val_t *v)
{
    int64_t x = 0;
    if (v->size == 8)
        memcpy(&x, v->data, 8);
    return x;
}

#define M 1000003 /* values stay below this: no overflow however deep a graph */

/* A task of the graph (t/lib/graph.h) finished: one byte appended to the
   file LUX_T_TICKS names, when the test set it (graph_ticks_start), so
   that the test can pace what it does by the work done, not by a clock
   that a loaded machine makes meaningless. */
static void
s_tick(void)
{
    static int fd = -2;
    if (fd == -2) {
        const char *path = getenv("LUX_T_TICKS");
        fd = path && *path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
    }
    if (fd >= 0 && write(fd, "t", 1) != 1) {
        close(fd);
        fd = -1;
    }
}

/* (3 * the sum of its arguments + 1) mod M: any number of arguments. */
static int
t_mix(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t s = 0;
    for (int i = 0; i < argc; i++)
        s = (s + s_int(&argv[i])) % M;
    s = (s * 3 + 1) % M;
    s_tick();
    return lux_set(lx, 0, &s, 8);
}
LUX_FUNCTION(t_mix, -1, 1)

/* Two returns: (a + b) mod M and (a - b) mod M. */
static int
t_split(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t a = s_int(&argv[0]), b = s_int(&argv[1]), s = (a + b) % M, d = ((a - b) % M + M) % M;
    int rc = lux_set(lx, 0, &s, 8);
    s_tick();
    return rc ? rc : lux_set(lx, 1, &d, 8);
}
LUX_FUNCTION(t_split, 2, 2)

/* A large value: n bytes (argument 1) of a pattern seeded by argument 0,
   written in place in the store; its first 8 bytes hold the seed. */
static int
t_big(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t seed = s_int(&argv[0]), n = s_int(&argv[1]);
    if (n < 8)
        return lux_raise(lx, "t_big needs at least 8 bytes, got %lld", (long long) n);
    uint8_t *p = lux_set_alloc(lx, 0, (size_t) n);
    if (!p)
        return lux_raise(lx, "no room for %lld bytes: %s", (long long) n, lux_errmsg());
    memcpy(p, &seed, 8);
    for (int64_t i = 8; i < n; i++)
        p[i] = (uint8_t) (seed * 31 + i);
    s_tick();
    return 0;
}
LUX_FUNCTION(t_big, 2, 1)

/* Read a t_big value back: its seed plus its length, after checking every
   byte (an error if one is wrong). */
static int
t_check(lux_t *lx, int argc, const lux_val_t *argv)
{
    const uint8_t *p = argv[0].data;
    int64_t seed, n = (int64_t) argv[0].size;
    if (n < 8)
        return lux_raise(lx, "t_check: %lld bytes", (long long) n);
    memcpy(&seed, p, 8);
    for (int64_t i = 8; i < n; i++)
        if (p[i] != (uint8_t) (seed * 31 + i))
            return lux_raise(lx, "t_check: byte %lld is wrong", (long long) i);
    int64_t r = (seed + n) % M;
    s_tick();
    return lux_set(lx, 0, &r, 8);
}
LUX_FUNCTION(t_check, 1, 1)

/* Every argument read back as a t_big value, each byte checked: the sum
   of their seeds plus lengths (an error naming the first wrong one). A
   task that needs all its large arguments in the store at once. */
static int
t_checks(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t r = 0;
    for (int a = 0; a < argc; a++) {
        const uint8_t *p = argv[a].data;
        int64_t seed, n = (int64_t) argv[a].size;
        if (n < 8)
            return lux_raise(lx, "t_checks: argument %d has %lld bytes", a, (long long) n);
        memcpy(&seed, p, 8);
        for (int64_t i = 8; i < n; i++)
            if (p[i] != (uint8_t) (seed * 31 + i))
                return lux_raise(lx, "t_checks: argument %d: byte %lld is wrong", a,
                                 (long long) i);
        r = (r + seed + n) % M;
    }
    s_tick();
    return lux_set(lx, 0, &r, 8);
}
LUX_FUNCTION(t_checks, -1, 1)

/* Nested: submit t_mix over each argument and over pairs, get them, and
   return the sum of their results. */
static int
t_nested(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_ref_t refs[16];
    lux_val_t vals[16];
    int n = argc < 8 ? argc : 8, rc;
    for (int i = 0; i < n; i++) {
        int64_t x = s_int(&argv[i]);
        if ((rc = lux_call(lx, "t_mix", 1, (lux_arg_t[]) {LUX_VAL(&x, 8)}, 1, &refs[i])))
            return lux_raise(lx, "nested call: %s", lux_errmsg());
    }
    for (int i = 0; i + 1 < n; i++)
        if ((rc = lux_call(lx, "t_mix", 2, (lux_arg_t[]) {LUX_REF(refs[i]), LUX_REF(refs[i + 1])},
                           1, &refs[n + i])))
            return lux_raise(lx, "nested call: %s", lux_errmsg());
    int total = n + (n > 0 ? n - 1 : 0);
    if ((rc = lux_get_many(lx, total, refs, vals, -1)))
        return lux_raise(lx, "nested get: %s", lux_errmsg());
    int64_t s = 0;
    for (int i = 0; i < total; i++)
        s = (s + s_int(&vals[i])) % M;
    lux_free(lx, total, refs);
    s_tick();
    return lux_set(lx, 0, &s, 8);
}
LUX_FUNCTION(t_nested, -1, 1)

/* Get the object whose ref (LUX_REF_LEN bytes) is argument 0, a value:
   a ref the node does not see as an argument, as a task passed refs
   inside data would. Returns that object's value; with argument 1 (n), in
   n bytes of room asked for in the store before the get, the value at
   their start. */
static int
t_getref(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_ref_t ref;
    lux_val_t v;
    uint8_t *room = NULL;
    int64_t n = argc > 1 ? s_int(&argv[1]) : 0;
    if (argc < 1 || argc > 2 || argv[0].size != sizeof ref.b)
        return lux_raise(lx, "t_getref: takes a ref (%zu bytes) and a size", sizeof ref.b);
    memcpy(ref.b, argv[0].data, sizeof ref.b);
    if (n > 0 && !(room = lux_set_alloc(lx, 0, (size_t) n)))
        return lux_raise(lx, "t_getref: no room for %lld bytes: %s", (long long) n,
                         lux_errmsg());
    if (lux_get(lx, &ref, &v, -1))
        return lux_raise(lx, "t_getref: %s", lux_errmsg());
    if (!room)
        return lux_set(lx, 0, v.data, v.size);
    if ((int64_t) v.size > n)
        return lux_raise(lx, "t_getref: %zu bytes do not fit in %lld", v.size, (long long) n);
    memset(room, 0, (size_t) n);
    memcpy(room, v.data, v.size);
    return 0;
}
LUX_FUNCTION(t_getref, -1, 1)

/* t_check of the large value whose ref (LUX_REF_LEN bytes) is argument 0,
   a value: the task waits for it in lux_get, as a task that was passed a
   ref inside data would. */
static int
t_getcheck(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_ref_t ref;
    lux_val_t v;
    if (argc != 1 || argv[0].size != sizeof ref.b)
        return lux_raise(lx, "t_getcheck: takes a ref (%zu bytes)", sizeof ref.b);
    memcpy(ref.b, argv[0].data, sizeof ref.b);
    if (lux_get(lx, &ref, &v, -1))
        return lux_raise(lx, "t_getcheck: %s", lux_errmsg());
    int rc = t_check(lx, 1, &v);
    lux_free(lx, 1, &ref);
    return rc;
}
LUX_FUNCTION(t_getcheck, 1, 1)

/* Nested n deep (argument 0): calls itself with n - 1 and waits for it;
   returns n + (n - 1) + ... + 1. */
static int
t_deep(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t n = s_int(&argv[0]), s = 0, m = n - 1;
    lux_ref_t r;
    lux_val_t v;
    if (n > 0) {
        if (lux_call(lx, "t_deep", 1, (lux_arg_t[]) {LUX_VAL(&m, 8)}, 1, &r) ||
            lux_get(lx, &r, &v, -1))
            return lux_raise(lx, "t_deep %lld: %s", (long long) n, lux_errmsg());
        s = n + s_int(&v);
        lux_free(lx, 1, &r);
    }
    return lux_set(lx, 0, &s, 8);
}
LUX_FUNCTION(t_deep, 1, 1)

/* Fails with a message. */
static int
t_fail(lux_t *lx, int argc, const lux_val_t *argv)
{
    return lux_raise(lx, "t_fail was asked to fail (%d arguments)", argc);
}
LUX_FUNCTION(t_fail, -1, 1)

/* Kills its worker, every time. */
static int
t_crash(lux_t *lx, int argc, const lux_val_t *argv)
{
    kill(getpid(), SIGKILL);
    return 0;
}
LUX_FUNCTION(t_crash, 0, 1)

/* Sleeps ms (argument 0), then returns argument 1. */
static int
t_sleep(lux_t *lx, int argc, const lux_val_t *argv)
{
    usleep((useconds_t) (s_int(&argv[0]) * 1000));
    return lux_set(lx, 0, argv[1].data, argv[1].size);
}
LUX_FUNCTION(t_sleep, 2, 1)

/* Holds a custom resource while it runs: returns 1. */
static int
t_gpu(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t one = 1;
    usleep(20000);
    return lux_set(lx, 0, &one, 8);
}
LUX_FUNCTION(t_gpu, 0, 1)

/* --- an actor: Acc ------------------------------------------------------------------------

   State: a hash h of every call applied, in order (so its results show the
   order), per-caller sums (so what each caller sees does not depend on how
   callers interleave), and a flag that makes the next checkpoint corrupt.
   Created with h0 (int64). */

#define ACC_CALLERS 8
#define ACC_MAGIC 0x41434331u

typedef struct {
    uint32_t magic;
    uint32_t corrupt;
    int64_t h, n;
    int64_t sums[ACC_CALLERS];
} acc_t;

static void *
Acc_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    if (argv[0].size != 8) {
        lux_raise(lx, "Acc takes an int64, not %zu bytes", argv[0].size);
        return NULL;
    }
    if (s_int(&argv[0]) < 0) {
        lux_raise(lx, "Acc: a negative start (%lld) is refused", (long long) s_int(&argv[0]));
        return NULL;
    }
    acc_t *a = calloc(1, sizeof *a);
    a->magic = ACC_MAGIC;
    a->h = s_int(&argv[0]);
    return a;
}

static void
Acc_destroy(void *self)
{
    free(self);
}

static int
Acc_save(lux_t *lx, void *self)
{
    acc_t *a = self, copy = *a;
    if (a->corrupt)
        copy.magic = 0xdeadbeef;
    return lux_set(lx, 0, &copy, sizeof copy);
}

static void *
Acc_load(lux_t *lx, const lux_val_t *state)
{
    acc_t *a;
    if (state->size != sizeof *a || ((const acc_t *) state->data)->magic != ACC_MAGIC) {
        lux_raise(lx, "Acc: the checkpoint is corrupt (%zu bytes, bad magic)", state->size);
        return NULL;
    }
    a = malloc(sizeof *a);
    memcpy(a, state->data, sizeof *a);
    return a;
}
LUX_ACTOR(Acc, 1, Acc_create, Acc_destroy, Acc_save, Acc_load)

/* add(caller, x): h = (h * 31 + x + caller) mod M, sums[caller] += x;
   returns h and sums[caller] (16 bytes). */
static int
Acc_add(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    acc_t *a = self;
    int64_t caller = s_int(&argv[0]), x = s_int(&argv[1]), out[2];
    if (caller < 0 || caller >= ACC_CALLERS)
        return lux_raise(lx, "Acc.add: caller %lld is out of range", (long long) caller);
    a->h = (a->h * 31 + x + caller) % M;
    a->n++;
    a->sums[caller] = (a->sums[caller] + x) % M;
    out[0] = a->h;
    out[1] = a->sums[caller];
    return lux_set(lx, 0, out, sizeof out);
}
LUX_METHOD(Acc, add, 2, 1)

/* get(): the whole state as int64s: h, n, sums[0..7]. */
static int
Acc_get(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    acc_t *a = self;
    int64_t out[2 + ACC_CALLERS];
    out[0] = a->h;
    out[1] = a->n;
    memcpy(out + 2, a->sums, sizeof a->sums);
    return lux_set(lx, 0, out, sizeof out);
}
LUX_METHOD(Acc, get, 0, 1)

/* Output 0: this process's pid, 8 bytes (for a test that kills it). */
static int
s_set_pid(lux_t *lx)
{
    int64_t pid = getpid();
    return lux_set(lx, 0, &pid, 8);
}

/* pid(): its process. */
static int
Acc_pid(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    return s_set_pid(lx);
}
LUX_METHOD(Acc, pid, 0, 1)

/* fail(): an error, the state unchanged. */
static int
Acc_fail(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    return lux_raise(lx, "Acc.fail was asked to fail");
}
LUX_METHOD(Acc, fail, 0, 1)

/* corrupt(): the next checkpoint is written with a bad magic. */
static int
Acc_corrupt(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    ((acc_t *) self)->corrupt = 1;
    return 0;
}
LUX_METHOD(Acc, corrupt, 0, 0)

/* getref(ref bytes[, n]): waits (lux_get) for the ref passed inside the
   value, which the node cannot see as a dependency, and returns its
   value; with n, in room of n bytes asked for first. */
static int
Acc_getref(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    return t_getref(lx, argc, argv);
}
LUX_METHOD(Acc, getref, -1, 1)

/* selfcall(handle, wait): add(7, 1) on its own actor through the handle;
   wait 0 leaves it (it runs after this call), 1 waits with lux_get, 2
   with lux_wait, which cannot end: the error they give is raised. */
static int
Acc_selfcall(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    lux_actor_t me;
    lux_ref_t r;
    lux_val_t v;
    int64_t c = 7, x = 1, wait = s_int(&argv[1]), code = 0;
    if (lux_actor_from(&argv[0], &me) ||
        lux_actor_call(lx, &me, "add", 2, (lux_arg_t[]) {LUX_VAL(&c, 8), LUX_VAL(&x, 8)}, 1, &r))
        return lux_raise(lx, "Acc.selfcall: %s", lux_errmsg());
    if (wait == 1)
        code = lux_get(lx, &r, &v, 30000);
    else if (wait == 2)
        code = lux_wait(lx, 1, &r, 1, 30000, NULL) < 0 ? LUX_EDEADLK : 0;
    if (code)
        return lux_raise(lx, "Acc.selfcall: %s (%s)", lux_errmsg(), lux_strerror((int) code));
    lux_free(lx, 1, &r);
    return lux_set(lx, 0, &code, 8);
}
LUX_METHOD(Acc, selfcall, 2, 1)

/* A task that calls an actor (its handle is argument 0) n times as caller
   c with x = c * 1000 + i, and returns the sum of the sums it saw, mod M:
   the same whatever else the actor is doing. */
static int
t_acc_caller(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_actor_t h;
    int64_t c = s_int(&argv[1]), n = s_int(&argv[2]), s = 0;
    if (lux_actor_from(&argv[0], &h))
        return lux_raise(lx, "t_acc_caller: %s", lux_errmsg());
    lux_ref_t *refs = calloc((size_t) n, sizeof *refs);
    for (int64_t i = 0; i < n; i++) {
        int64_t x = c * 1000 + i;
        if (lux_actor_call(lx, &h, "add", 2, (lux_arg_t[]) {LUX_VAL(&c, 8), LUX_VAL(&x, 8)}, 1,
                           &refs[i]))
            return lux_raise(lx, "t_acc_caller: %s", lux_errmsg());
    }
    for (int64_t i = 0; i < n; i++) {
        lux_val_t v;
        if (lux_get(lx, &refs[i], &v, -1) || v.size != 16)
            return lux_raise(lx, "t_acc_caller: call %lld: %s", (long long) i, lux_errmsg());
        s = (s + ((const int64_t *) v.data)[1]) % M;
    }
    lux_free(lx, (int) n, refs);
    free(refs);
    return lux_set(lx, 0, &s, 8);
}
LUX_FUNCTION(t_acc_caller, 3, 1)

/* forward(handle, caller, x): add(caller, x) on another actor, through
   the handle it was given; returns what that returned. */
static int
Acc_forward(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    lux_actor_t other;
    lux_ref_t r;
    lux_val_t v;
    if (lux_actor_from(&argv[0], &other))
        return lux_raise(lx, "Acc.forward: %s", lux_errmsg());
    if (lux_actor_call(lx, &other, "add", 2,
                       (lux_arg_t[]) {LUX_VAL(argv[1].data, argv[1].size),
                                      LUX_VAL(argv[2].data, argv[2].size)},
                       1, &r) ||
        lux_get(lx, &r, &v, -1))
        return lux_raise(lx, "Acc.forward: %s", lux_errmsg());
    int rc = lux_set(lx, 0, v.data, v.size);
    lux_free(lx, 1, &r);
    return rc;
}
LUX_METHOD(Acc, forward, 3, 1)

/* --- files as gates and signs, for tests that kill a task at a chosen point ---------------- */

/* Wait (up to 120 s) until the file path exists: 0, or -1 at the bound. */
static int
s_wait_file(const char *path)
{
    for (int i = 0; i < 24000; i++) {
        if (access(path, F_OK) == 0)
            return 0;
        usleep(5000);
    }
    return -1;
}

/* Write text into dir/name, whole or not at all (a rename). */
static void
s_sign(const char *dir, const char *name, const char *text)
{
    char tmp[600], path[600];
    snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int) getpid());
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    rename(tmp, path);
}

/* A path argument (a value of bytes, not NUL-terminated) into buf. */
static const char *
s_path(const lux_val_t *v, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", (int) v->size, (const char *) v->data);
    return buf;
}

/* Waits until the file named by argument 0 exists (120 s at most);
   returns 1. */
static int
t_gate(lux_t *lx, int argc, const lux_val_t *argv)
{
    char path[512];
    int64_t one = 1;
    if (s_wait_file(s_path(&argv[0], path, sizeof path)))
        return lux_raise(lx, "t_gate: %s did not appear within 120 s", path);
    return lux_set(lx, 0, &one, 8);
}
LUX_FUNCTION(t_gate, 1, 1)

/* Signs dir/held-PID (dir is argument 0, PID this worker's), then waits
   for dir/release (600 s at most): a task that keeps its worker busy in
   user code until the test lets it go. Returns 1. */
static int
t_hold(lux_t *lx, int argc, const lux_val_t *argv)
{
    char dir[512], name[64], path[600];
    int64_t one = 1;
    s_path(&argv[0], dir, sizeof dir);
    snprintf(name, sizeof name, "held-%d", (int) getpid());
    s_sign(dir, name, "held");
    snprintf(path, sizeof path, "%s/release", dir);
    for (int i = 0; i < 120000 && access(path, F_OK) != 0; i++)
        usleep(5000);
    return lux_set(lx, 0, &one, 8);
}
LUX_FUNCTION(t_hold, 1, 1)

/* t_check of argument 0 (a t_big pattern), once the file named by
   argument 1 exists (120 s at most): a subtask that stays unfinished
   until a test lets it go. */
static int
t_checkw(lux_t *lx, int argc, const lux_val_t *argv)
{
    char path[512];
    if (s_wait_file(s_path(&argv[1], path, sizeof path)))
        return lux_raise(lx, "t_checkw: %s did not appear within 120 s", path);
    return t_check(lx, 1, argv);
}
LUX_FUNCTION(t_checkw, 2, 1)

/* putsub(x, n, dir): a nested task with a put of its own. Signs
   dir/pid.A with its pid (A its attempt), puts n bytes of t_big's
   pattern for seed x, signs dir/put.A, then (from its second attempt on)
   waits for dir/go (in lux_get of a t_gate, so that its worker takes
   other tasks meanwhile); calls t_checkw(the put, dir/gate), signs
   dir/sref with that call's ref (its first attempt, once the call is at
   the node), and returns what the call returns: (x + n) mod M. */
static int
t_putsub(lux_t *lx, int argc, const lux_val_t *argv)
{
    int64_t x = s_int(&argv[0]), n = s_int(&argv[1]);
    int attempt = lux_attempt(lx);
    char dir[512], name[32], text[64], path[600];
    lux_ref_t put, sub;
    lux_val_t v;
    if (n < 8)
        return lux_raise(lx, "t_putsub: takes x, n >= 8 and a directory");
    s_path(&argv[2], dir, sizeof dir);
    snprintf(name, sizeof name, "pid.%d", attempt);
    snprintf(text, sizeof text, "%d", (int) getpid());
    s_sign(dir, name, text);
    uint8_t *p = malloc((size_t) n);
    if (!p)
        return lux_raise(lx, "t_putsub: out of memory");
    memcpy(p, &x, 8);
    for (int64_t i = 8; i < n; i++)
        p[i] = (uint8_t) (x * 31 + i);
    int rc = lux_put(lx, p, (size_t) n, &put);
    free(p);
    if (rc)
        return lux_raise(lx, "t_putsub: lux_put: %s", lux_errmsg());
    snprintf(name, sizeof name, "put.%d", attempt);
    s_sign(dir, name, "");
    if (attempt > 1) {
        lux_ref_t go;
        snprintf(path, sizeof path, "%s/go", dir);
        if (lux_call(lx, "t_gate", 1, (lux_arg_t[]) {LUX_VAL(path, strlen(path))}, 1, &go) ||
            lux_get(lx, &go, &v, -1))
            return lux_raise(lx, "t_putsub: waiting for %s: %s", path, lux_errmsg());
        lux_free(lx, 1, &go);
    }
    snprintf(path, sizeof path, "%s/gate", dir);
    if (lux_call(lx, "t_checkw", 2, (lux_arg_t[]) {LUX_REF(put), LUX_VAL(path, strlen(path))}, 1,
                 &sub))
        return lux_raise(lx, "t_putsub: lux_call: %s", lux_errmsg());
    if (attempt == 1) {
        char hex[LUX_REF_LEN * 2 + 1];
        lux_wait(lx, 1, &sub, 1, 0, NULL); /* sends the call */
        s_sign(dir, "sref", lux_ref_hex(&sub, hex));
    }
    if (lux_get(lx, &sub, &v, -1))
        return lux_raise(lx, "t_putsub: %s", lux_errmsg());
    rc = lux_set(lx, 0, v.data, v.size);
    lux_free(lx, 1, &sub);
    lux_free(lx, 1, &put);
    return rc;
}
LUX_FUNCTION(t_putsub, 3, 1)

/* --- the harsh random graphs (t/3108-exec-harsh.c) ----------------------------------------

   Values are bytes of any size, made by hx_fill from a 64-bit seed and
   checked whole through hx_digest; t/3108 computes the same sequentially.
   t_hN(ctl, args...): ctl is int64s {salt, size0, size1, size2}; h starts
   as hx_mix(salt) and takes in the digest of every other argument; output
   k is hx_fill(hx_mix(h + k + 1), size k). t_hnest(ctl, ref, args...)
   also gets the ref passed as a value (a ref the node does not see), puts
   an object, calls t_h1 on the put and that ref, and takes in what it
   returns. HAcc is an actor holding a running hash. */

/* ctl's int64 i (0 when it is too short). */
static int64_t
hx_ctl(const lux_val_t *ctl, int i)
{
    int64_t x = 0;
    if (ctl->size >= 8 * (size_t) (i + 1))
        memcpy(&x, (const uint8_t *) ctl->data + 8 * i, 8);
    return x;
}

static int
hx_outputs(lux_t *lx, const lux_val_t *ctl, int nret, uint64_t h)
{
    for (int k = 0; k < nret; k++) {
        size_t n = (size_t) hx_ctl(ctl, 1 + k);
        uint8_t *p = lux_set_alloc(lx, k, n);
        if (!p && n)
            return lux_raise(lx, "t_h: no room for %zu bytes: %s", n, lux_errmsg());
        hx_fill(p, n, hx_mix(h + (uint64_t) k + 1));
    }
    s_tick();
    return 0;
}

static uint64_t
hx_take(uint64_t h, int from, int argc, const lux_val_t *argv)
{
    for (int j = from; j < argc; j++)
        h = hx_mix(h ^ (hx_digest(argv[j].data, argv[j].size) + (uint64_t) j));
    return h;
}

static int
t_h1(lux_t *lx, int argc, const lux_val_t *argv)
{
    return hx_outputs(lx, &argv[0], 1, hx_take(hx_mix((uint64_t) hx_ctl(&argv[0], 0)), 1, argc, argv));
}
LUX_FUNCTION(t_h1, -1, 1)

/* t_h1 of argument 1 once dir/go exists (dir is argument 0; 120 s at
   most), after signing dir/held-PID: tasks a test starts together and
   lets go at once, so that they ask room for their outputs together. */
static int
t_gateh1(lux_t *lx, int argc, const lux_val_t *argv)
{
    char dir[512], name[64], path[600];
    s_path(&argv[0], dir, sizeof dir);
    snprintf(name, sizeof name, "held-%d", (int) getpid());
    s_sign(dir, name, "held");
    snprintf(path, sizeof path, "%s/go", dir);
    if (s_wait_file(path))
        return lux_raise(lx, "t_gateh1: %s did not appear within 120 s", path);
    return hx_outputs(lx, &argv[1], 1, hx_take(hx_mix((uint64_t) hx_ctl(&argv[1], 0)), 2, argc, argv));
}
LUX_FUNCTION(t_gateh1, 2, 1)

static int
t_h2(lux_t *lx, int argc, const lux_val_t *argv)
{
    return hx_outputs(lx, &argv[0], 2, hx_take(hx_mix((uint64_t) hx_ctl(&argv[0], 0)), 1, argc, argv));
}
LUX_FUNCTION(t_h2, -1, 2)

/* t_h2 of ctl (argument 1; no other argument taken in) the first time;
   after that (the file argument 0 exists) it fails: a rebuild that fails. */
static int
t_h2once(lux_t *lx, int argc, const lux_val_t *argv)
{
    char path[512];
    s_path(&argv[0], path, sizeof path);
    if (access(path, F_OK) == 0)
        return lux_raise(lx, "t_h2once: %s exists: this run fails", path);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    return hx_outputs(lx, &argv[1], 2, hx_mix((uint64_t) hx_ctl(&argv[1], 0)));
}
LUX_FUNCTION(t_h2once, 2, 2)

static int
t_h3(lux_t *lx, int argc, const lux_val_t *argv)
{
    return hx_outputs(lx, &argv[0], 3, hx_take(hx_mix((uint64_t) hx_ctl(&argv[0], 0)), 1, argc, argv));
}
LUX_FUNCTION(t_h3, -1, 3)

/* t_hnest(ctl {salt, size0, putsize, subsize}, ref bytes, args...): one
   output of size0. */
static int
t_hnest(lux_t *lx, int argc, const lux_val_t *argv)
{
    lux_ref_t r, put, sub;
    lux_val_t v;
    if (argc < 2 || argv[1].size != sizeof r.b)
        return lux_raise(lx, "t_hnest: takes a control value and a ref");
    memcpy(r.b, argv[1].data, sizeof r.b);
    uint64_t h = hx_take(hx_mix((uint64_t) hx_ctl(&argv[0], 0)), 2, argc, argv);
    if (lux_get(lx, &r, &v, -1))
        return lux_raise(lx, "t_hnest: get of the ref passed: %s", lux_errmsg());
    h = hx_mix(h ^ (hx_digest(v.data, v.size) + 101));
    size_t pn = (size_t) hx_ctl(&argv[0], 2);
    uint8_t *p = malloc(pn ? pn : 1);
    if (!p)
        return lux_raise(lx, "t_hnest: out of memory");
    hx_fill(p, pn, hx_mix(h + 7));
    int rc = lux_put(lx, p, pn, &put);
    free(p);
    if (rc)
        return lux_raise(lx, "t_hnest: lux_put: %s", lux_errmsg());
    int64_t ctl[4] = {(int64_t) hx_mix(h + 9), hx_ctl(&argv[0], 3), 0, 0};
    if (lux_call(lx, "t_h1", 3, (lux_arg_t[]) {LUX_VAL(ctl, sizeof ctl), LUX_REF(put), LUX_REF(r)},
                 1, &sub) ||
        lux_get(lx, &sub, &v, -1))
        return lux_raise(lx, "t_hnest: subtask: %s", lux_errmsg());
    h = hx_mix(h ^ (hx_digest(v.data, v.size) + 103));
    lux_free(lx, 1, &sub);
    lux_free(lx, 1, &put);
    lux_free(lx, 1, &r);
    int64_t one[2] = {0, hx_ctl(&argv[0], 1)};
    lux_val_t c1 = {one, sizeof one};
    return hx_outputs(lx, &c1, 1, h);
}
LUX_FUNCTION(t_hnest, -1, 1)

/* HAcc(h0): h = hx_mix(h ^ digest(arg) + j) over its arguments at each
   step; returns h (8 bytes). */
typedef struct {
    uint64_t h;
} hacc_t;

static void *
HAcc_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    hacc_t *a = calloc(1, sizeof *a);
    if (a && argv[0].size == 8)
        memcpy(&a->h, argv[0].data, 8);
    return a;
}

static void
HAcc_destroy(void *self)
{
    free(self);
}

static int
HAcc_save(lux_t *lx, void *self)
{
    return lux_set(lx, 0, self, sizeof(hacc_t));
}

static void *
HAcc_load(lux_t *lx, const lux_val_t *state)
{
    if (state->size != sizeof(hacc_t)) {
        lux_raise(lx, "HAcc: a checkpoint of %zu bytes", state->size);
        return NULL;
    }
    hacc_t *a = malloc(sizeof *a);
    if (a)
        memcpy(a, state->data, sizeof *a);
    return a;
}
LUX_ACTOR(HAcc, 1, HAcc_create, HAcc_destroy, HAcc_save, HAcc_load)

static int
HAcc_step(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    hacc_t *a = self;
    a->h = hx_take(a->h, 0, argc, argv);
    return lux_set(lx, 0, &a->h, 8);
}
LUX_METHOD(HAcc, step, -1, 1)

/* wait(PATH): makes PATH.waiting, then waits until PATH exists (120 s at
   most) and returns h unchanged: a call that keeps the actor busy while
   later calls queue behind it (t/3138). */
static int
HAcc_wait(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    hacc_t *a = self;
    char path[512], waiting[530];
    s_path(&argv[0], path, sizeof path);
    snprintf(waiting, sizeof waiting, "%s.waiting", path);
    FILE *f = fopen(waiting, "w");
    if (f)
        fclose(f);
    if (s_wait_file(path))
        return lux_raise(lx, "HAcc.wait: %s did not appear within 120 s", path);
    return lux_set(lx, 0, &a->h, 8);
}
LUX_METHOD(HAcc, wait, 1, 1)

/* pid(): its process (for a test that kills it). */
static int
HAcc_pid(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    return s_set_pid(lx);
}
LUX_METHOD(HAcc, pid, 0, 1)

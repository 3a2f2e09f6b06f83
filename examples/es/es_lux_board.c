/*  es_lux_board - the tasks of an iteration share their rollouts (es_lux.h).

    With one task per worker, an iteration lasts as long as its slower
    task, and the vCPUs' speed changes from one iteration to the next by
    more than a split made before the iteration can follow (examples/es/
    README). es_local's threads take rollouts one at a time from a counter;
    a task cannot, since its result must be a function of its arguments
    alone. The board lets tasks that run on one machine do the same without
    giving that up.

    The driver makes a board, a small shared-memory file (memfd), and names
    it in every policy object: /proc/<driver>/fd/<fd> and a random ID. A
    task that can open it, and finds the ID there, joins the iteration's
    slot. Each rollout of the slot has a state word:

      EMPTY -> WRITING -> POSTED -> CLAIMED(pid) -> DONE(owner or helper)

    A task posts its rollouts (their es_task_t), then works through them in
    order, claiming each; one already claimed by another task it waits for,
    and one already done it copies. Once its own are done it helps: it
    claims other tasks' posted rollouts from the top down, computes them
    into the board, and returns when none is left. So the tasks of an
    iteration end within about one rollout of each other, as threads
    taking from a counter would.

    What a task returns is unchanged: the results of its own rollouts, in
    order, the same bytes whoever computed them (es_rollout is a pure
    function of the task and the policy). Alone, on another machine, in a
    replay from the log, or with the board gone, a task computes all its
    rollouts itself and returns the same bytes; the board only saves time.
    A result taken from the board is checked first (its FNV-1a checksum, its
    iteration, rollout and noise index, and the slot still holding this
    iteration) and computed again when any check fails. A claim by a
    process that has died (a killed worker) is taken over; one that has
    not finished after a generous time is computed by its owner too.
*/
#include "es_lux.h"
#include "es_noise.h"
#include "es_opts.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_MAGIC 0x3142534cu /* "LSB1" */
#define S_SLOTS 2           /* iteration i uses slot i % 2: one runs at a time */

/* a rollout's state word: the kind in the low byte, a pid above */
enum { S_EMPTY, S_WRITING, S_POSTED, S_CLAIMED, S_DONE_OWNER, S_DONE_HELPER };
#define S_KIND(s) ((unsigned)((s) & 0xff))
#define S_PID(s) ((pid_t)((s) >> 8))
#define S_WORD(kind, pid) ((uint64_t)(kind) | ((uint64_t)(uint32_t)(pid) << 8))

typedef struct {
    uint32_t magic;
    uint32_t reserved;
    uint8_t id[16];
    uint64_t pop; /* rollouts a slot holds */
    uint64_t rs;  /* bytes of a result */
} s_hdr_t;       /* slot k at S_HDR + k * s_slot_bytes(pop, rs) */
#define S_HDR 64

/* A slot: key ((iteration + 1) << 1 | ready), then pop state words, pop
   checksums, pop tasks and pop results. */
typedef struct {
    _Atomic uint64_t *key;
    _Atomic uint64_t *state;
    uint64_t *chk;
    es_task_t *spec;
    uint8_t *res;
} s_slot_t;

static size_t
s_round(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t
s_slot_bytes(size_t pop, size_t rs)
{
    return 64 + s_round(pop * 8) + s_round(pop * 8) + s_round(pop * sizeof(es_task_t)) +
           s_round(pop * rs);
}

static s_slot_t
s_slot(uint8_t *map, const s_hdr_t *h, uint64_t iter)
{
    uint8_t *p = map + S_HDR + (iter % S_SLOTS) * s_slot_bytes(h->pop, h->rs);
    size_t pop = h->pop;
    s_slot_t s;
    s.key = (_Atomic uint64_t *)(void *)p;
    p += 64;
    s.state = (_Atomic uint64_t *)(void *)p;
    p += s_round(pop * 8);
    s.chk = (uint64_t *)(void *)p;
    p += s_round(pop * 8);
    s.spec = (es_task_t *)(void *)p;
    p += s_round(pop * sizeof(es_task_t));
    s.res = p;
    return s;
}

/* --- the driver's side ---------------------------------------------------------------- */

struct es_board {
    int fd;
    uint8_t *map;
    size_t len;
    s_hdr_t h;
    char path[sizeof(((es_lux_policy_t *)0)->board)];
};

es_board_t *
es_board_new(size_t pop, size_t rs, char *why, size_t len)
{
    es_board_t *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    b->fd = -1;
    b->h.magic = S_MAGIC;
    b->h.pop = pop;
    b->h.rs = rs;
    b->len = S_HDR + S_SLOTS * s_slot_bytes(pop, rs);
    int n = snprintf(b->path, sizeof b->path, "/proc/%ld/fd/", (long)getpid());
    if (rs % 8 || pop == 0 || n < 0) {
        snprintf(why, len, "bad board shape");
        goto fail;
    }
    int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = rfd >= 0 ? read(rfd, b->h.id, sizeof b->h.id) : -1;
    if (rfd >= 0)
        close(rfd);
    if (got != (ssize_t)sizeof b->h.id) {
        snprintf(why, len, "cannot read /dev/urandom: %s", strerror(errno));
        goto fail;
    }
    if ((b->fd = memfd_create("lux-es-board", MFD_CLOEXEC)) < 0 || fchmod(b->fd, 0600) != 0 ||
        ftruncate(b->fd, (off_t)b->len) != 0) {
        snprintf(why, len, "cannot make the board (memfd of %zu bytes): %s", b->len,
                 strerror(errno));
        goto fail;
    }
    size_t room = sizeof b->path - (size_t)n;
    if ((size_t)snprintf(b->path + n, room, "%d", b->fd) >= room) {
        snprintf(why, len, "board path too long");
        goto fail;
    }
    b->map = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
    if (b->map == MAP_FAILED) {
        b->map = NULL;
        snprintf(why, len, "cannot map the board: %s", strerror(errno));
        goto fail;
    }
    memcpy(b->map, &b->h, sizeof b->h);
    return b;
fail:
    es_board_destroy(&b);
    return NULL;
}

void
es_board_stamp(const es_board_t *b, void *policy)
{
    es_lux_policy_t h;
    memcpy(&h, policy, sizeof h);
    snprintf(h.board, sizeof h.board, "%s", b->path);
    memcpy(h.board_id, b->h.id, sizeof h.board_id);
    memcpy(policy, &h, sizeof h);
}

uint64_t
es_board_helped(const es_board_t *b, uint64_t iter)
{
    s_slot_t s = s_slot(b->map, &b->h, iter);
    if (atomic_load(s.key) != (((iter + 1) << 1) | 1))
        return 0;
    uint64_t n = 0;
    for (size_t j = 0; j < b->h.pop; j++)
        n += S_KIND(atomic_load(&s.state[j])) == S_DONE_HELPER;
    return n;
}

void
es_board_destroy(es_board_t **b_p)
{
    es_board_t *b = *b_p;
    if (!b)
        return;
    if (b->map)
        munmap(b->map, b->len);
    if (b->fd >= 0)
        close(b->fd);
    free(b);
    *b_p = NULL;
}

/* --- a task's side --------------------------------------------------------------------- */

/* The board this worker process has mapped, until a task names another
   (a worker runs one task at a time, so nothing uses the old one then). */
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char path[sizeof(((es_lux_policy_t *)0)->board)];
    uint8_t id[16];
    uint8_t *map; /* NULL: the board could not be used */
    size_t len;
    s_hdr_t h;
} s_mine;

/* The mapping of the board the policy names, or NULL. */
static uint8_t *
s_open(const es_lux_policy_t *p, s_hdr_t *h)
{
    char path[sizeof s_mine.path];
    memcpy(path, p->board, sizeof path);
    path[sizeof path - 1] = '\0';
    pthread_mutex_lock(&s_lock);
    if (strcmp(s_mine.path, path) || memcmp(s_mine.id, p->board_id, sizeof s_mine.id)) {
        if (s_mine.map)
            munmap(s_mine.map, s_mine.len);
        memcpy(s_mine.path, path, sizeof path);
        memcpy(s_mine.id, p->board_id, sizeof s_mine.id);
        s_mine.map = NULL;
        int fd = open(path, O_RDWR | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= S_HDR) {
            size_t len = (size_t)st.st_size;
            uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) {
                s_hdr_t x;
                memcpy(&x, m, sizeof x);
                if (x.magic == S_MAGIC && !memcmp(x.id, p->board_id, sizeof x.id) &&
                    x.rs % 8 == 0 && x.pop > 0 && x.pop < ((uint64_t)1 << 32) &&
                    x.rs < ((uint64_t)1 << 32) &&
                    S_HDR + S_SLOTS * s_slot_bytes(x.pop, x.rs) <= len) {
                    s_mine.map = m;
                    s_mine.len = len;
                    s_mine.h = x;
                } else {
                    munmap(m, len);
                }
            }
        }
        if (fd >= 0)
            close(fd);
    }
    uint8_t *map = s_mine.map;
    *h = s_mine.h;
    pthread_mutex_unlock(&s_lock);
    return map;
}

/* Join iteration iter's slot: make it the iteration's if it held an
   earlier one. false: no board for this task (a later iteration holds the
   slot, so this task is stale; or another task has been clearing it for
   10 ms, so it died doing so). */
static bool
s_join(s_slot_t *s, uint64_t iter, size_t pop)
{
    uint64_t want = (iter + 1) << 1;
    double t0 = es_opts_now();
    for (;;) {
        uint64_t k = atomic_load(s->key);
        if (k == (want | 1))
            return true;
        if (k >> 1 > iter + 1)
            return false;
        if (k == want) { /* another task is clearing it: a few us, unless it died */
            if (es_opts_now() - t0 > 0.01)
                return false;
            sched_yield();
            continue;
        }
        if (atomic_compare_exchange_strong(s->key, &k, want)) {
            for (size_t j = 0; j < pop; j++)
                atomic_store_explicit(&s->state[j], S_EMPTY, memory_order_relaxed);
            atomic_store(s->key, want | 1);
            return true;
        }
    }
}

/* Compute task t into out. */
static int
s_compute(const es_ctx_t *ctx, const es_task_t *t, uint8_t *out)
{
    return es_rollout(ctx, t, (es_result_t *)(void *)out);
}

/* Put the result for rollout j (in res[j] already, or at from) on the
   board as done by kind. */
static void
s_publish(s_slot_t *s, size_t rs, size_t j, const uint8_t *from, unsigned kind)
{
    uint8_t *at = s->res + j * rs;
    if (from != at)
        memcpy(at, from, rs);
    s->chk[j] = es_fnv1a64(at, rs);
    atomic_store_explicit(&s->state[j], S_WORD(kind, getpid()), memory_order_release);
}

/* Copy done rollout j into out if it checks; false if not. */
static bool
s_take(s_slot_t *s, size_t rs, size_t j, const es_task_t *t, uint8_t *out)
{
    memcpy(out, s->res + j * rs, rs);
    uint64_t chk = s->chk[j];
    es_result_t r;
    memcpy(&r, out, sizeof r);
    atomic_thread_fence(memory_order_acquire);
    return chk == es_fnv1a64(out, rs) && r.iter == t->iter && r.rollout == t->rollout &&
           r.noise_idx == t->noise_idx && atomic_load(s->key) == (((t->iter + 1) << 1) | 1);
}

/* Is the claimer of state word w gone? */
static bool
s_gone(uint64_t w)
{
    pid_t p = S_PID(w);
    return p <= 0 || p == getpid() || (kill(p, 0) != 0 && errno == ESRCH);
}

#define S_LATER 1 /* another task is computing it: come back */

/* Our rollout t (j on the board) into o: copied when done, computed when
   free or its claimer is gone; S_LATER when claimed and !wait; with wait,
   waits for the claimer (computing it here too once it is too slow). */
static int
s_own(s_slot_t *s, size_t rs, const es_ctx_t *ctx, const es_task_t *t, uint8_t *o, bool wait,
      double *slowest)
{
    size_t j = t->rollout;
    pid_t me = getpid();
    double t0 = wait ? es_opts_now() : 0.0, limit = *slowest * 20 > 0.05 ? *slowest * 20 : 0.05;
    for (unsigned spins = 0;; spins++) {
        uint64_t w = atomic_load_explicit(&s->state[j], memory_order_acquire);
        unsigned k = S_KIND(w);
        if (k == S_DONE_OWNER || k == S_DONE_HELPER) {
            if (s_take(s, rs, j, t, o))
                return 0;
            break;
        }
        bool check = k == S_CLAIMED && (!wait || spins % 64 == 0);
        if (k == S_POSTED || (check && s_gone(w))) {
            if (!atomic_compare_exchange_strong(&s->state[j], &w, S_WORD(S_CLAIMED, me)))
                continue; /* it changed: look again */
            double c0 = es_opts_now();
            int rc = s_compute(ctx, t, o);
            if (rc) {
                atomic_store(&s->state[j], S_WORD(S_POSTED, me));
                return rc;
            }
            double d = es_opts_now() - c0;
            *slowest = d > *slowest ? d : *slowest;
            s_publish(s, rs, j, o, S_DONE_OWNER);
            return 0;
        }
        if (k != S_CLAIMED)
            break; /* not on the board */
        if (!wait)
            return S_LATER;
        if (check && es_opts_now() - t0 > limit)
            break;
        sched_yield();
    }
    return s_compute(ctx, t, o);
}

/* A slow task on demand, for tests: with ES_TEST_SLOW_US=N in the
   environment, the task that holds rollout 0 of an iteration sleeps N us
   before each rollout of its own, whichever worker runs it. t/7101 checks
   with it that the split and the board follow a slow task; a busy loop
   beside a worker does the same only while nothing else runs on the
   machine. The results do not change: only when they come. */
static unsigned
s_slow_us(const es_task_t *t, size_t count)
{
    const char *e = getenv("ES_TEST_SLOW_US");
    if (!e || !count || t[0].rollout != 0)
        return 0;
    long us = strtol(e, NULL, 10);
    return us > 0 && us <= 1000000 ? (unsigned)us : 0;
}

int
es_board_rollouts(const es_lux_policy_t *p, const es_ctx_t *ctx, const es_task_t *t,
                  size_t count, uint8_t *out, size_t rs, size_t *failed)
{
    unsigned slow = s_slow_us(t, count);
    s_hdr_t h;
    uint8_t *map = p->board[0] ? s_open(p, &h) : NULL;
    uint64_t iter = p->iter;
    s_slot_t s = {0};
    bool on = false;
    if (map && h.rs == rs) {
        s = s_slot(map, &h, iter);
        on = s_join(&s, iter, h.pop);
    }
    /* which of ours another task was computing when we came to it */
    uint8_t *later = on ? calloc(count, 1) : NULL;
    on = on && later;
    pid_t me = getpid();
    int rc = 0;
    /* post our rollouts, so that others may take them */
    for (size_t i = 0; on && i < count; i++) {
        size_t j = t[i].rollout;
        uint64_t e = S_EMPTY;
        if (t[i].iter == iter && j < h.pop &&
            atomic_compare_exchange_strong(&s.state[j], &e, S_WORD(S_WRITING, me))) {
            s.spec[j] = t[i];
            atomic_store_explicit(&s.state[j], S_WORD(S_POSTED, me), memory_order_release);
        }
    }
    /* ours in order; those another task is computing, after the rest */
    double slowest = 0.0;
    for (size_t i = 0; i < count; i++) {
        uint8_t *o = out + i * rs;
        if (slow)
            usleep(slow);
        if (!on || t[i].iter != iter || t[i].rollout >= h.pop)
            rc = s_compute(ctx, &t[i], o);
        else if ((rc = s_own(&s, rs, ctx, &t[i], o, false, &slowest)) == S_LATER)
            later[i] = 1, rc = 0;
        if (rc) {
            *failed = i;
            goto done;
        }
    }
    for (size_t i = 0; on && i < count; i++)
        if (later[i] && (rc = s_own(&s, rs, ctx, &t[i], out + i * rs, true, &slowest))) {
            *failed = i;
            goto done;
        }
    /* help: others' posted rollouts, from the top down */
    for (size_t j = h.pop; on && j-- > 0;) {
        uint64_t w = atomic_load_explicit(&s.state[j], memory_order_acquire);
        if (S_KIND(w) != S_POSTED)
            continue;
        es_task_t spec = s.spec[j];
        if (spec.iter != iter || spec.rollout != j ||
            !atomic_compare_exchange_strong(&s.state[j], &w, S_WORD(S_CLAIMED, me)))
            continue;
        if (s_compute(ctx, &spec, s.res + j * rs) != 0) {
            atomic_store(&s.state[j], w); /* posted again: its owner will say why */
            break;
        }
        s_publish(&s, rs, j, s.res + j * rs, S_DONE_HELPER);
    }
done:
    free(later);
    return rc;
}

/* 7003-es-board: es.so's board, through which the rollout tasks of an
   iteration take each other's rollouts (examples/es/es_lux_board.c). What a
   task returns must be the same bytes as computing its rollouts alone,
   whatever the board holds: rollouts done by another task, a result
   damaged on the board, a claim by a process that died or never finishes,
   a slot held by a later iteration, a board of another run or none.
   Included whole, so the test can set the board's words as a failing peer
   would leave them.
*/
#include "tap.h"

#include "../examples/es/es_lux_board.c"

#include "env.h"
#include "es_noise.h"
#include "es_policy.h"

#include <sys/wait.h>

enum { POP = 16, HALF = POP / 2 };
#define NOISE_LEN ((size_t)1 << 20)

static es_ctx_t s_ctx;
static size_t s_rs;
#define NIT 32
static es_task_t s_tasks[NIT][POP]; /* iterations 0 to NIT - 1 */
static uint8_t *s_want[NIT];        /* each rollout computed alone */

static void
s_setup(es_policy_t *pol, const es_noise_t *noise, float *theta)
{
    int w = 8;
    es_policy_init(pol, &es_env_cartpole, 1, &w);
    es_policy_init_weights(pol, theta, 3);
    s_ctx = (es_ctx_t){.env = &es_env_cartpole,
                       .policy = pol,
                       .theta = theta,
                       .noise = noise->data,
                       .noise_len = noise->len,
                       .sigma = 0.1f,
                       .episodes = 16}; /* long enough that a kill lands in one */
    s_rs = es_result_size(4);
    for (int it = 0; it < NIT; it++) {
        s_want[it] = malloc(POP * s_rs);
        for (uint32_t j = 0; j < POP; j++) {
            s_tasks[it][j] = es_task_make(5, (uint64_t)it, j, noise->len, pol->n_params, false);
            es_rollout(&s_ctx, &s_tasks[it][j], (es_result_t *)(void *)(s_want[it] + j * s_rs));
        }
    }
}

/* A task of iteration it doing rollouts first..first+n-1, into out. */
static int
s_task(const es_lux_policy_t *p, int it, int first, int n, uint8_t *out)
{
    es_lux_policy_t q = *p;
    q.iter = (uint64_t)it;
    size_t failed = 0;
    return es_board_rollouts(&q, &s_ctx, &s_tasks[it][first], (size_t)n, out, s_rs, &failed);
}

static bool
s_same(const uint8_t *out, int it, int first, int n)
{
    return memcmp(out, s_want[it] + (size_t)first * s_rs, (size_t)n * s_rs) == 0;
}

/* The driver's mapping of the board, to look at and set its words. */
static s_slot_t
s_peek(es_board_t *b, int it)
{
    return s_slot(b->map, &b->h, (uint64_t)it);
}

int
main(void)
{
    es_noise_t *noise = es_noise_new(7, NOISE_LEN);
    es_policy_t pol;
    float theta[512];
    s_setup(&pol, noise, theta);
    uint8_t *out = malloc(POP * s_rs), *out2 = malloc(POP * s_rs);
    char why[160];

    es_board_t *b = es_board_new(POP, s_rs, why, sizeof why);
    ok(b != NULL, "a board for %d rollouts of %zu bytes (%s)", POP, s_rs, b ? b->path : why);
    if (!b)
        bail("no board: %s", why);
    es_lux_policy_t p;
    memset(&p, 0, sizeof p);
    es_board_stamp(b, &p);
    ok(strncmp(p.board, "/proc/", 6) == 0 && memcmp(p.board_id, b->h.id, 16) == 0,
       "the policy names it: %s", p.board);

    /* alone: a task computes its own, and leaves them on the board */
    memset(out, 0, POP * s_rs);
    ok(s_task(&p, 0, 0, HALF, out) == 0 && s_same(out, 0, 0, HALF),
       "a task alone returns the bytes of its rollouts computed one by one");
    s_slot_t s = s_peek(b, 0);
    int own = 0;
    for (int j = 0; j < HALF; j++)
        own += S_KIND(atomic_load(&s.state[j])) == S_DONE_OWNER;
    ok(own == HALF && es_board_helped(b, 0) == 0, "...each done by itself on the board (%d)", own);

    /* rollouts another task posted and has not started: a task that is done
       with its own computes them (from the top down) */
    pid_t owner = fork();
    if (owner == 0) { /* posts its rollouts and stops before computing any */
        es_lux_policy_t q = p;
        q.iter = 1;
        s_slot_t c = s_slot(s_open(&q, &(s_hdr_t){0}), &b->h, 1);
        s_join(&c, 1, POP);
        for (int j = HALF; j < POP; j++) {
            c.spec[j] = s_tasks[1][j];
            atomic_store(&c.state[j], S_WORD(S_POSTED, getpid()));
        }
        _exit(0);
    }
    waitpid(owner, NULL, 0);
    memset(out, 0, POP * s_rs);
    ok(s_task(&p, 1, 0, HALF, out) == 0 && s_same(out, 1, 0, HALF),
       "a task with another's rollouts posted returns its own, unchanged");
    ok(es_board_helped(b, 1) == HALF, "...and computed the other's %d (%llu)", HALF,
       (unsigned long long)es_board_helped(b, 1));
    s = s_peek(b, 1);
    ok(memcmp(s.res + HALF * s_rs, s_want[1] + HALF * s_rs, HALF * s_rs) == 0,
       "...their results on the board are those computed alone");
    memset(out, 0, POP * s_rs);
    ok(s_task(&p, 1, HALF, HALF, out) == 0 && s_same(out, 1, HALF, HALF),
       "the other task then takes them: the same bytes");

    /* a damaged result is computed again */
    s.res[(HALF + 1) * s_rs + 30] ^= 0x40;
    s.res[(HALF + 2) * s_rs] ^= 1; /* its iteration */
    memset(out, 0, POP * s_rs);
    ok(s_task(&p, 1, HALF, HALF, out) == 0 && s_same(out, 1, HALF, HALF),
       "results damaged on the board (a flipped bit, a wrong iteration) are computed again");

    /* a claim by a process that died: taken over at once */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    atomic_store(&s.state[HALF + 3], S_WORD(S_CLAIMED, dead));
    double t0 = es_opts_now();
    memset(out, 0, POP * s_rs);
    int rc = s_task(&p, 1, HALF, HALF, out);
    double took = es_opts_now() - t0;
    ok(rc == 0 && s_same(out, 1, HALF, HALF),
       "a rollout claimed by a process that died: the same bytes (%.1f ms)", took * 1e3);
    /* taken over, not waited out: only a takeover leaves it done by the
       owner (one waited out is computed aside, the dead claim left) */
    ok(S_KIND(atomic_load(&s.state[HALF + 3])) == S_DONE_OWNER &&
           S_PID(atomic_load(&s.state[HALF + 3])) == getpid(),
       "...taken over at once and left on the board as done by its owner");

    /* a claim that never finishes: waited for, then computed */
    pid_t stuck = fork();
    if (stuck == 0) {
        pause();
        _exit(0);
    }
    atomic_store(&s.state[HALF + 4], S_WORD(S_CLAIMED, stuck));
    t0 = es_opts_now();
    memset(out, 0, POP * s_rs);
    rc = s_task(&p, 1, HALF, HALF, out);
    double waited = es_opts_now() - t0;
    ok(rc == 0 && s_same(out, 1, HALF, HALF) && waited >= 0.045 && waited < 5,
       "a rollout claimed by a live process that does not finish: waited for %.0f ms, then "
       "computed", waited * 1e3);
    kill(stuck, SIGKILL);
    waitpid(stuck, NULL, 0);

    /* a later iteration holds the slot: the task is stale and goes alone */
    ok(s_task(&p, 3, 0, HALF, out) == 0, "iteration 3 takes slot 1");
    s = s_peek(b, 3);
    uint64_t key = atomic_load(s.key);
    memset(out, 0, POP * s_rs);
    ok(s_task(&p, 1, 0, HALF, out) == 0 && s_same(out, 1, 0, HALF) && atomic_load(s.key) == key &&
           S_KIND(atomic_load(&s.state[HALF])) == S_EMPTY,
       "a task of iteration 1 then computes alone and leaves the slot as it was");

    /* a board of another run, or none */
    es_lux_policy_t other = p;
    other.board_id[0] ^= 1;
    key = atomic_load(s_peek(b, 2).key);
    memset(out, 0, POP * s_rs);
    ok(s_task(&other, 2, 0, POP, out) == 0 && s_same(out, 2, 0, POP) &&
           atomic_load(s_peek(b, 2).key) == key,
       "another run's board ID: the task computes alone, the board untouched");
    es_lux_policy_t gone = p;
    snprintf(gone.board, sizeof gone.board, "/proc/%d/fd/%d", (int)dead, 3);
    memset(out, 0, POP * s_rs);
    ok(s_task(&gone, 2, 0, POP, out) == 0 && s_same(out, 2, 0, POP),
       "a board that cannot be opened: the task computes alone");

    /* two tasks at once, in two processes, on a new board: each returns
       its own bytes */
    es_board_destroy(&b);
    b = es_board_new(POP, s_rs, why, sizeof why);
    if (!b)
        bail("no board: %s", why);
    es_board_stamp(b, &p);
    int good = 0, helped = 0;
    for (int it = 0; it < NIT / 2; it++) {
        pid_t kid = fork();
        if (kid == 0) {
            uint8_t *o = malloc(POP * s_rs);
            _exit(o && s_task(&p, it, HALF, HALF, o) == 0 && s_same(o, it, HALF, HALF) ? 0 : 1);
        }
        memset(out2, 0, POP * s_rs);
        bool mine = s_task(&p, it, 0, HALF, out2) == 0 && s_same(out2, it, 0, HALF);
        int st = 0;
        waitpid(kid, &st, 0);
        good += mine && WIFEXITED(st) && WEXITSTATUS(st) == 0;
        helped += (int)es_board_helped(b, (uint64_t)it);
    }
    ok(good == NIT / 2, "two tasks at once in two processes, %d iterations: the bytes computed "
       "alone (%d rollouts helped)", NIT / 2, helped);

    /* a task killed with kill -9 while it works on the board: its rollouts
       go to whoever is left */
    pid_t victim = fork();
    if (victim == 0) {
        uint8_t *o = malloc(POP * s_rs);
        for (int it = NIT / 2; it < NIT; it++)
            s_task(&p, it, HALF, HALF, o);
        pause();
        _exit(0);
    }
    /* killed once it works on the second half's iterations (a fixed
       5 ms could pass before it began, at a high load: then iteration 15,
       which it never touched, was checked) */
    for (int i = 0; i < 30000; i++) {
        uint64_t a = atomic_load(s_peek(b, 0).key), c = atomic_load(s_peek(b, 1).key);
        if ((int)((a > c ? a : c) >> 1) - 1 >= NIT / 2)
            break;
        usleep(1000);
    }
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    uint64_t k0 = atomic_load(s_peek(b, 0).key), k1 = atomic_load(s_peek(b, 1).key);
    int last = (int)((k0 > k1 ? k0 : k1) >> 1) - 1;
    s = s_peek(b, last);
    int claimed = 0, done = 0;
    for (int j = HALF; j < POP; j++) {
        claimed += S_KIND(atomic_load(&s.state[j])) == S_CLAIMED;
        done += S_KIND(atomic_load(&s.state[j])) == S_DONE_OWNER;
    }
    memset(out, 0, POP * s_rs);
    memset(out2, 0, POP * s_rs);
    ok(last >= NIT / 2 && last < NIT && s_task(&p, last, 0, HALF, out) == 0 &&
           s_task(&p, last, HALF, HALF, out2) == 0 && s_same(out, last, 0, HALF) &&
           s_same(out2, last, HALF, HALF),
       "a task killed in iteration %d (%d of its rollouts done, %d claimed): both halves "
       "return the bytes computed alone", last, done, claimed);

    es_board_destroy(&b);
    ok(b == NULL, "the board is gone with its driver");
    free(out);
    free(out2);
    for (int it = 0; it < NIT; it++)
        free(s_want[it]);
    es_noise_destroy(&noise);
    return done_testing();
}

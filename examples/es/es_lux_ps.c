/*  es_lux_ps - the parameter-server variant of es.so (--ps): the actor class
    EsServer, which holds the ES state, and the task es_ps_rollouts, which
    pulls the weights from it and pushes results to it. es_lux.h has the
    methods and formats; the driver's side is in es_lux_main.c.

    The server is the same es_t as the driver of the task variant, fed the
    same results: es_update places them by rollout number, so the order in
    which pushes arrive (or are replayed after a restart) cannot change the
    weights. What the server adds is bookkeeping: the results of the current
    iteration, one slot per rollout, filled by pushes.

    Checkpoints (save/load) hold the constructor's settings, the slots, the
    counters and es_state_write()'s bytes. The noise table is not in them:
    it is an object in the store that the driver holds for the whole run,
    and the server (created or loaded) lux_gets it by the ref in its
    settings and reads it in place.

    A rollout task that is retried after its worker died makes its actor
    calls again with the same IDs (the IDs of a task's calls derive from the
    task's): a call the node still has is not made twice, one it has done
    and let go of is made again. So the server may see a push twice; the
    second must be the same bytes (rollouts are pure), and is only counted.
*/
#include "es_lux.h"
#include "es_noise.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
es_lux_ps_init(es_lux_ps_init_t *init, const es_config_t *cfg, const char *env,
               const es_policy_t *pol, size_t noise_len, const lux_ref_t *noise)
{
    memset(init, 0, sizeof *init);
    init->magic = ES_LUX_PS_MAGIC;
    /* field by field into the zeroed struct: es_config_t has padding, and
       these bytes are logged (the constructor's argument) and checkpointed */
    init->es.seed = cfg->seed;
    init->es.population = cfg->population;
    init->es.episodes = cfg->episodes;
    init->es.sigma = cfg->sigma;
    init->es.lr = cfg->lr;
    init->es.beta1 = cfg->beta1;
    init->es.beta2 = cfg->beta2;
    init->es.adam_eps = cfg->adam_eps;
    init->es.l2 = cfg->l2;
    init->es.obs_norm = cfg->obs_norm;
    init->es.shared_env_seed = cfg->shared_env_seed;
    snprintf(init->env, sizeof init->env, "%s", env);
    init->n_hidden = pol->n_hidden;
    for (int i = 0; i < pol->n_hidden; i++)
        init->hidden[i] = pol->dims[i + 1];
    init->noise_len = noise_len;
    init->noise = *noise;
}

/* --- the server -------------------------------------------------------------------------- */

typedef struct {
    lux_t *lx;               /* the actor's connection (its process's, for good) */
    es_lux_ps_init_t init;   /* the settings */
    const es_env_t *env;
    es_policy_t pol;         /* the policy's shape */
    es_t *es;                /* weights, Adam, observation statistics */
    const float *noise;      /* the noise table, read in place (pinned: lux_get) */
    size_t pop;              /* results per iteration */
    size_t rs;               /* bytes of one result */
    uint8_t *slots;          /* pop results of the current iteration, by rollout number */
    uint8_t *have;           /* pop flags: slot filled */
    uint64_t held;           /* filled slots */
    uint64_t pushes;         /* push calls applied */
    uint64_t duplicates;     /* results pushed again */
    es_result_t **ptrs;      /* scratch for es_update */
} s_server_t;

/* What a checkpoint holds before es_state_write()'s bytes and the slots. */
typedef struct {
    es_lux_ps_init_t init;
    uint64_t held, pushes, duplicates;
    uint64_t state_size; /* es_state_size() */
} s_ckpt_t;

static void
s_server_free(s_server_t *s)
{
    if (!s)
        return;
    if (s->noise)
        lux_free(s->lx, 1, &s->init.noise);
    es_destroy(&s->es);
    free(s->slots);
    free(s->have);
    free(s->ptrs);
    free(s);
}

/* A server for init, at iteration 0 with the initial weights; NULL after
   lux_raise. */
static s_server_t *
s_server_new(lux_t *lx, const es_lux_ps_init_t *init)
{
    s_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        lux_raise(lx, "EsServer: out of memory");
        return NULL;
    }
    s->lx = lx;
    s->init = *init;
    s->init.env[sizeof s->init.env - 1] = '\0';
    if (init->magic != ES_LUX_PS_MAGIC || !(s->env = es_env_find(s->init.env)) ||
        init->n_hidden < 0 || init->n_hidden > ES_POLICY_MAX_HIDDEN ||
        es_policy_init(&s->pol, s->env, init->n_hidden, init->hidden) != 0 ||
        init->es.population < 1 || init->noise_len < s->pol.n_params) {
        lux_raise(lx, "EsServer: bad settings (magic %08x, environment '%s')", init->magic,
                  s->init.env);
        free(s);
        return NULL;
    }
    lux_val_t v;
    if (lux_get(lx, &init->noise, &v, -1) != 0) {
        lux_raise(lx, "EsServer: the noise table: %s", lux_errmsg());
        free(s);
        return NULL;
    }
    s->noise = v.data;
    if (v.size != init->noise_len * sizeof(float) || (uintptr_t)v.data % _Alignof(float)) {
        lux_raise(lx, "EsServer: the noise table has %zu bytes, not %" PRIu64 " floats", v.size,
                  init->noise_len);
        s_server_free(s);
        return NULL;
    }
    s->pop = (size_t)init->es.population;
    s->rs = es_result_size(s->env->obs_dim);
    float *theta0 = malloc(s->pol.n_params * sizeof *theta0);
    if (theta0) {
        es_policy_init_weights(&s->pol, theta0, init->es.seed);
        s->es = es_new(&init->es, s->pol.n_params, s->env->obs_dim, theta0, s->noise,
                       init->noise_len);
    }
    free(theta0);
    s->slots = calloc(s->pop, s->rs);
    s->have = calloc(s->pop, 1);
    s->ptrs = calloc(s->pop, sizeof *s->ptrs);
    if (!s->es || !s->slots || !s->have || !s->ptrs) {
        lux_raise(lx, "EsServer: out of memory");
        s_server_free(s);
        return NULL;
    }
    return s;
}

static void *
EsServer_create(lux_t *lx, int argc, const lux_val_t *argv)
{
    es_lux_ps_init_t init;
    if (argv[0].size != sizeof init) {
        lux_raise(lx, "EsServer takes an es_lux_ps_init_t (%zu bytes), not %zu bytes",
                  sizeof init, argv[0].size);
        return NULL;
    }
    memcpy(&init, argv[0].data, sizeof init);
    return s_server_new(lx, &init);
}

static void
EsServer_destroy(void *self)
{
    s_server_free(self);
}

static int
EsServer_save(lux_t *lx, void *self)
{
    s_server_t *s = self;
    s_ckpt_t c = {.init = s->init, .held = s->held, .pushes = s->pushes,
                  .duplicates = s->duplicates, .state_size = es_state_size(s->es)};
    size_t n = sizeof c + s->pop + s->pop * s->rs + c.state_size;
    uint8_t *p = lux_set_alloc(lx, 0, n);
    if (!p)
        return lux_raise(lx, "EsServer.save: no room for %zu bytes: %s", n, lux_errmsg());
    memcpy(p, &c, sizeof c);
    memcpy(p + sizeof c, s->have, s->pop);
    memcpy(p + sizeof c + s->pop, s->slots, s->pop * s->rs);
    es_state_write(s->es, p + sizeof c + s->pop + s->pop * s->rs);
    return 0;
}

static void *
EsServer_load(lux_t *lx, const lux_val_t *state)
{
    s_ckpt_t c;
    if (state->size < sizeof c) {
        lux_raise(lx, "EsServer: a checkpoint of %zu bytes is too short", state->size);
        return NULL;
    }
    memcpy(&c, state->data, sizeof c);
    s_server_t *s = s_server_new(lx, &c.init);
    if (!s)
        return NULL;
    const uint8_t *p = (const uint8_t *)state->data + sizeof c;
    if (state->size != sizeof c + s->pop + s->pop * s->rs + c.state_size ||
        es_state_read(s->es, p + s->pop + s->pop * s->rs, c.state_size) != 0) {
        lux_raise(lx, "EsServer: a checkpoint of %zu bytes that does not fit its settings: %s",
                  state->size, es_errmsg(s->es));
        s_server_free(s);
        return NULL;
    }
    memcpy(s->have, p, s->pop);
    memcpy(s->slots, p + s->pop, s->pop * s->rs);
    s->held = c.held;
    s->pushes = c.pushes;
    s->duplicates = c.duplicates;
    return s;
}
LUX_ACTOR(EsServer, 1, EsServer_create, EsServer_destroy, EsServer_save, EsServer_load)

/* Return value i: the policy object of the current iteration. */
static int
s_set_policy(lux_t *lx, s_server_t *s, int i)
{
    int obs_dim = s->env->obs_dim;
    const float *mean = es_obs_mean(s->es), *std = es_obs_std(s->es);
    size_t n = es_lux_policy_size((uint32_t)s->pol.n_params, mean ? (uint32_t)obs_dim : 0);
    void *p = lux_set_alloc(lx, i, n);
    if (!p)
        return lux_raise(lx, "EsServer: no room for the policy: %s", lux_errmsg());
    es_lux_policy_write(p, s->init.env, &s->pol, s->init.es.episodes, (float)s->init.es.sigma,
                        es_iter(s->es), s->init.noise_len, es_theta(s->es), obs_dim, mean, std);
    return 0;
}

static bool
s_u64(const lux_val_t *v, uint64_t *out)
{
    if (v->size != sizeof *out)
        return false;
    memcpy(out, v->data, sizeof *out);
    return true;
}

/* pull(iter) -> the policy object of iteration iter, or nothing once past it */
static int
EsServer_pull(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    s_server_t *s = self;
    uint64_t iter, now = es_iter(s->es);
    if (!s_u64(&argv[0], &iter))
        return lux_raise(lx, "EsServer.pull: takes an iteration (u64)");
    if (iter < now)
        return lux_set(lx, 0, "", 0);
    if (iter > now)
        return lux_raise(lx, "EsServer.pull: iteration %" PRIu64 " asked for, the server is at %"
                         PRIu64, iter, now);
    return s_set_policy(lx, s, 0);
}
LUX_METHOD(EsServer, pull, 1, 1)

/* push(results) -> results held for the current iteration. All checked
   before any is taken, so a refused push changes nothing. */
static int
EsServer_push(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    s_server_t *s = self;
    uint64_t now = es_iter(s->es);
    const uint8_t *p = argv[0].data;
    if (argv[0].size % s->rs)
        return lux_raise(lx, "EsServer.push: %zu bytes are not results of %zu bytes",
                         argv[0].size, s->rs);
    size_t n = argv[0].size / s->rs;
    es_result_t *r = malloc(s->rs); /* aligned copies: a value lies where its message put it */
    if (!r)
        return lux_raise(lx, "EsServer.push: out of memory");
    for (size_t i = 0; i < n; i++) {
        memcpy(r, p + i * s->rs, s->rs);
        const char *bad = r->iter > now                               ? "a future iteration"
                          : r->rollout >= s->pop                      ? "beyond the population"
                          : r->obs_dim != (uint32_t)s->env->obs_dim ? "of another shape"
                                                                      : NULL;
        if (!bad && r->iter == now && s->have[r->rollout] &&
            memcmp(s->slots + r->rollout * s->rs, r, s->rs) != 0)
            bad = "pushed before with other results (rollouts must be pure)";
        if (bad) {
            uint32_t rollout = r->rollout;
            uint64_t of = r->iter;
            free(r);
            return lux_raise(lx, "EsServer.push: rollout %u of iteration %" PRIu64 ": %s "
                             "(the server is at iteration %" PRIu64 ")",
                             rollout, of, bad, now);
        }
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(r, p + i * s->rs, s->rs);
        if (r->iter < now || s->have[r->rollout]) {
            s->duplicates++; /* a retried task's, or a late one's */
            continue;
        }
        memcpy(s->slots + r->rollout * s->rs, r, s->rs);
        s->have[r->rollout] = 1;
        s->held++;
    }
    free(r);
    s->pushes++;
    return lux_set(lx, 0, &s->held, sizeof s->held);
}
LUX_METHOD(EsServer, push, 1, 1)

/* update(iter) -> stats, the policy object of iteration iter + 1 */
static int
EsServer_update(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    s_server_t *s = self;
    uint64_t iter, now = es_iter(s->es);
    if (!s_u64(&argv[0], &iter))
        return lux_raise(lx, "EsServer.update: takes an iteration (u64)");
    if (iter != now)
        return lux_raise(lx, "EsServer.update: of iteration %" PRIu64 ", the server is at %"
                         PRIu64, iter, now);
    if (s->held != s->pop) {
        size_t missing = 0;
        while (missing < s->pop && s->have[missing])
            missing++;
        return lux_raise(lx, "EsServer.update: iteration %" PRIu64 " has %" PRIu64 " of %zu "
                         "results (rollout %zu is missing)", iter, s->held, s->pop, missing);
    }
    for (size_t i = 0; i < s->pop; i++)
        s->ptrs[i] = (es_result_t *)(void *)(s->slots + i * s->rs);
    es_lux_ps_stats_t out;
    memset(&out, 0, sizeof out);
    if (es_update(s->es, s->ptrs, s->pop, &out.st))
        return lux_raise(lx, "EsServer.update: %s", es_errmsg(s->es));
    memset(s->have, 0, s->pop);
    s->held = 0;
    out.pushes = s->pushes;
    out.duplicates = s->duplicates;
    int rc = lux_set(lx, 0, &out, sizeof out);
    return rc ? rc : s_set_policy(lx, s, 1);
}
LUX_METHOD(EsServer, update, 1, 2)

/* pid() -> this process: --kill-server kills it (kill -9) */
static int
EsServer_pid(lux_t *lx, void *self, int argc, const lux_val_t *argv)
{
    int64_t pid = (int64_t)getpid();
    return lux_set(lx, 0, &pid, sizeof pid);
}
LUX_METHOD(EsServer, pid, 0, 1)

/* --- the rollout task ------------------------------------------------------------------------ */

static int
es_ps_rollouts(lux_t *lx, int argc, const lux_val_t *argv)
{
    const lux_val_t *noise = &argv[1], *tasks = &argv[2];
    lux_actor_t server;
    char why[256];
    if (lux_actor_from(&argv[0], &server))
        return lux_raise(lx, "es_ps_rollouts: %s", lux_errmsg());
    if (noise->size % sizeof(float) || (uintptr_t)noise->data % _Alignof(float))
        return lux_raise(lx, "es_ps_rollouts: the noise table (%zu bytes) is not a float array",
                         noise->size);
    size_t count = tasks->size / sizeof(es_task_t);
    if (tasks->size % sizeof(es_task_t) || count == 0)
        return lux_raise(lx, "es_ps_rollouts: %zu bytes of tasks", tasks->size);
    es_task_t *t = malloc(tasks->size); /* aligned copies */
    if (!t)
        return lux_raise(lx, "es_ps_rollouts: out of memory");
    memcpy(t, tasks->data, tasks->size);
    uint64_t iter = t[0].iter;

    /* pull */
    lux_ref_t ref;
    lux_val_t v;
    if (lux_actor_call(lx, &server, "pull", 1, (lux_arg_t[]){LUX_VAL(&iter, sizeof iter)}, 1,
                       &ref) != 0 ||
        lux_get(lx, &ref, &v, -1) != 0) {
        free(t);
        return lux_raise(lx, "es_ps_rollouts: pulling the weights of iteration %" PRIu64 ": %s",
                         iter, lux_errmsg());
    }
    uint64_t done = count;
    if (v.size == 0) { /* the server is past this iteration: its results are in */
        lux_free(lx, 1, &ref);
        free(t);
        return lux_set(lx, 0, &done, sizeof done);
    }
    es_lux_view_t view;
    int rc = es_lux_view(&view, v.data, v.size, noise->data, noise->size / sizeof(float), why,
                         sizeof why);
    if (rc == 0 && view.h.iter != iter) {
        snprintf(why, sizeof why, "the server gave the weights of iteration %llu for %llu",
                 (unsigned long long)view.h.iter, (unsigned long long)iter);
        es_lux_view_free(&view);
        rc = LUX_EINVAL;
    }
    if (rc) {
        lux_free(lx, 1, &ref);
        free(t);
        return lux_raise(lx, "es_ps_rollouts: %s", why);
    }

    /* evaluate */
    size_t rs = es_result_size(view.ctx.env->obs_dim);
    uint8_t *out = malloc(count * rs);
    for (size_t i = 0; out && i < count && rc == 0; i++) {
        if (t[i].iter != iter) {
            snprintf(why, sizeof why, "tasks of iterations %llu and %llu together",
                     (unsigned long long)iter, (unsigned long long)t[i].iter);
            rc = LUX_EINVAL;
        } else if ((rc = es_rollout(&view.ctx, &t[i], (es_result_t *)(void *)(out + i * rs)))) {
            snprintf(why, sizeof why, "rollout %u of iteration %llu: %s", t[i].rollout,
                     (unsigned long long)iter, lux_strerror(rc));
        }
    }
    es_lux_view_free(&view);
    lux_free(lx, 1, &ref);
    free(t);
    if (!out || rc) {
        free(out);
        return lux_raise(lx, "es_ps_rollouts: %s", out ? why : "out of memory");
    }

    /* push, and wait until the server has them */
    rc = lux_actor_call(lx, &server, "push", 1, (lux_arg_t[]){LUX_VAL(out, count * rs)}, 1, &ref);
    free(out);
    if (rc != 0 || lux_get(lx, &ref, &v, -1) != 0)
        return lux_raise(lx, "es_ps_rollouts: pushing the results of iteration %" PRIu64 ": %s",
                         iter, lux_errmsg());
    lux_free(lx, 1, &ref);
    return lux_set(lx, 0, &done, sizeof done);
}
LUX_FUNCTION(es_ps_rollouts, 3, 1)

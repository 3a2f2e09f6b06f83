/* 5020-chain-harsh: chain replication under a seeded storm of real
   failures, harsher than t/5001's fixed schedule. From a seed: a log-only
   head of 1-4 shards x 3 replicas (2 in some runs); 1-3 clients appending
   events of 1 B to 1 MiB (bodies), one or in batches, with random pauses;
   1-3 subscribers, some starting late from an old seq, some dropped and
   resumed from their last seq; and a chaos thread that kill -9s replicas
   by position (head, middle, tail, a joiner), sometimes two at once,
   sometimes the chain master (the supervisor, then started again with
   `lux start --head`), SIGSTOPs a replica (or the supervisor) for longer
   than the dead time and SIGCONTs it, and lets killed replicas come back
   after random delays (the supervisor's restart is held back by
   LUX_TEST_REPLICA_HOLD), one of them, in some runs, never: its chain
   goes on with fewer. Then what DESIGN section 5 promises:
     - every chain is whole again (less a replica never restarted), each
       replica back within a bound;
     - no call into a client waited past its bound; every append was
       queued or refused with a message; every queued one acknowledged;
     - every acknowledged event is on every replica of its chain exactly
       once, in its client's order (cseq 1..n), its body intact;
     - every replica's hash chain verifies, the chain's files are prefixes
       of each other; `lux audit` passes;
     - every subscriber saw every seq after its start exactly once, in
       order, chained, the last one's hash that of the final log;
     - after `lux stop` no process of the run is left.

   t/5020-chain-harsh.t runs two seeds (the short form in make check);
   --seeds N --first S runs N seeds from S (the long form), -v for diags
   (or LUX_TEST_VERBOSE=1). A failing seed is replayed with --first S
   --seeds 1: the configuration and the chaos's choices follow the seed,
   the timing does not. */
#include "tap.h"
#include "lib/chainlog.h"
#include "lib/fx.h"
#include "db/db_chain.h"
#include "db/db_client.h"
#include "db/db_master.h"
#include "db/db_store.h"
#include "db/db_sub.h"
#include "util/util_err.h"
#include "util/util_fs.h"
#include "util/util_proc.h"
#include "util/util_time.h"

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXS 4
#define MAXC 3
#define MAXSUB 3
#define MAXSLOT (MAXS * 3)
#define MAXPIDS 256
#define NEVER INT64_MAX
#define CALL_MS 20000 /* a client's append waits at most this long */
#define SYNC_MS 60000 /* the final sync */
#define REJOIN_MS                                                                                  \
    60000 /* a replica back must be serving within this (load 25, tens of MiB to fetch) */

typedef struct {
    int id;
    uint64_t rng;
    db_client_t *cl;
    util_id_t job[MAXS];  /* a job of each shard: its events go there */
    uint64_t n[MAXS];     /* events queued per shard: cseq 1..n */
    uint32_t *size[MAXS]; /* body size of each, by cseq - 1 */
    size_t cap[MAXS];
    int64_t max_call_ms; /* the longest call into the client (the sync apart) */
    int refused;         /* appends refused (not queued) */
    char why[256];       /* the first refusal's message, or what went wrong */
    int bad;             /* refusals without a message, unexpected cseqs */
    int sync_rc;         /* the final sync */
    int64_t sync_ms;
    pthread_t th;
} s_client_t;

typedef struct {
    int id;
    uint32_t shard;
    uint64_t rng;
    int start_ms;   /* starts this late */
    bool old;       /* ...from an old seq */
    bool drops;     /* dropped and resumed now and then */
    uint64_t after; /* delivers from after + 1 */
    int resumed;    /* times dropped and resumed */
    int new_fails;  /* db_sub_new failures */
    fx_chain_t ck;
    bool reached; /* it got to the final last seq */
    pthread_t th;
} s_sub_t;

typedef struct {
    int64_t release_at; /* its hold file goes then; 0: none; NEVER */
    int64_t cont_at;    /* SIGCONT its stopped process then; 0: none */
    pid_t stopped;
    int64_t back_at; /* released or continued then, not yet serving; 0: none */
} s_slot_t;

static struct {
    uint64_t seed, rng;
    uint32_t shards, reps;
    int nclients, nsubs, chaos_ms;
    bool never_ok; /* this run may leave a replica dead */
    db_cluster_t c;
    char hold[PATH_MAX];
    _Atomic int64_t budget; /* body bytes left to append */
    atomic_bool stop_clients, stop_subs;
    _Atomic uint64_t acked[MAXS];  /* the highest seq acknowledged to a client */
    _Atomic uint64_t target[MAXS]; /* the final last seq, for the subscribers */
    s_client_t cl[MAXC];
    s_sub_t sub[MAXSUB];
    s_slot_t slot[MAXSLOT];
    int never; /* the slot never restarted, -1: none */
    pid_t sup_stopped;
    int64_t sup_cont_at;
    pid_t pids[MAXPIDS]; /* every replica and supervisor of the run */
    int npids;
    /* chaos counts */
    int kills, doubles, master_kills, stops, sup_stops, rejoins, interrupted;
    int64_t rejoin_max_ms;
    int late_bad; /* rejoins past REJOIN_MS */
    char chaos_err[512];
    bool running; /* a cluster to stop at exit */
    int64_t t0;   /* when the run started */
} R;

static bool s_verbose;
static int s_failed; /* this seed's failed checks */
static const char *s_argv0;

/* ok(), counting this seed's failures. */
static void s_ok(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
s_ok(bool cond, const char *fmt, ...)
{
    char b[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (!ok(cond, "seed %llu: %s", (unsigned long long) R.seed, b))
        s_failed++;
}

static void s_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
s_note(const char *fmt, ...)
{
    if (!s_verbose)
        return;
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    diag("seed %llu %.3f s: %s", (unsigned long long) R.seed, (util_mono_ms() - R.t0) / 1000.0, b);
}

static uint64_t
s_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x ? x : 1;
}

static uint64_t
s_rand(uint64_t *s, uint64_t n)
{
    return n ? tap_rand(s) % n : 0;
}

static void
s_add_pid(pid_t pid)
{
    if (pid <= 0)
        return;
    for (int i = 0; i < R.npids; i++)
        if (R.pids[i] == pid)
            return;
    if (R.npids < MAXPIDS)
        R.pids[R.npids++] = pid;
}

static void
s_hold_path(int k, char *out, size_t n)
{
    snprintf(out, n, "%s/replica-%u-%u", R.hold, k / R.reps, k % R.reps);
}

static void
s_hold(int k, bool on)
{
    char p[PATH_MAX + 32];
    s_hold_path(k, p, sizeof p);
    if (on) {
        FILE *f = fopen(p, "w");
        if (f)
            fclose(f);
    } else {
        unlink(p);
    }
}

/* --- clients -------------------------------------------------------------------------- */

/* The body of a client's event cseq of shard s: bytes anyone can rebuild. */
static void
s_fill(uint8_t *b, uint32_t n, int client, uint32_t s, uint64_t cseq)
{
    uint64_t x = s_mix(((uint64_t) client << 40) ^ ((uint64_t) s << 32) ^ cseq);
    for (uint32_t i = 0; i < n; i++) {
        if ((i & 7) == 0)
            x = s_mix(x);
        b[i] = (uint8_t) (x >> (8 * (i & 7)));
    }
}

static uint32_t
s_size(s_client_t *k, bool big)
{
    uint64_t r = tap_rand(&k->rng);
    uint32_t n;
    if (big)
        n = r % 4 == 0 ? 1u << 20 : 65536 + (uint32_t) (r / 4 % ((1u << 20) - 65536));
    else if (r % 10 == 0)
        n = 1 + (uint32_t) (r / 10 % 65536);
    else
        n = 1 + (uint32_t) (r / 10 % (1u << (r / 1000 % 13)));
    if (atomic_fetch_sub(&R.budget, n) < n) {
        atomic_fetch_add(&R.budget, n);
        n = 1 + (uint32_t) (r % 64);
    }
    return n;
}

static void
s_took(s_client_t *k, int64_t t0)
{
    int64_t d = util_mono_ms() - t0;
    if (d > k->max_call_ms)
        k->max_call_ms = d;
}

static void
s_acked(s_client_t *k)
{
    for (uint32_t s = 0; s < R.shards; s++) {
        uint64_t v = db_client_acked_seq(k->cl, s), cur = atomic_load(&R.acked[s]);
        while (v > cur && !atomic_compare_exchange_weak(&R.acked[s], &cur, v))
            ;
    }
}

static void
s_append_one(s_client_t *k, uint8_t *body, bool big)
{
    uint32_t s = (uint32_t) s_rand(&k->rng, R.shards);
    uint32_t size = s_size(k, big);
    uint64_t cseq = k->n[s] + 1;
    s_fill(body, size, k->id, s, cseq);
    db_event_t e = {.kind = DB_K_note};
    DB_SET_ID(&e, job, DB_F_JOB, &k->job[s]);
    DB_SET_INT(&e, idx, DB_F_IDX, (int64_t) cseq);
    e.body = body;
    e.body_len = size;
    e.mask |= DB_F_BODY;
    int64_t t0 = util_mono_ms();
    int rc = db_client_append(k->cl, &e);
    s_took(k, t0);
    if (rc) {
        const char *m = lux_errmsg();
        k->refused++;
        if (!m || !*m)
            k->bad++;
        if (!k->why[0])
            snprintf(k->why, sizeof k->why, "append refused (%d): %s", rc, m ? m : "");
        atomic_fetch_add(&R.budget, size);
        return;
    }
    if (e.cseq != cseq) {
        if (!k->bad++)
            snprintf(k->why, sizeof k->why, "shard %u: cseq %llu given, %llu expected", s,
                     (unsigned long long) e.cseq, (unsigned long long) cseq);
        return;
    }
    if (k->n[s] == k->cap[s]) {
        k->cap[s] = k->cap[s] ? 2 * k->cap[s] : 1024;
        k->size[s] = realloc(k->size[s], k->cap[s] * sizeof *k->size[s]);
        if (!k->size[s])
            bail("out of memory");
    }
    k->size[s][k->n[s]++] = size;
}

static void *
s_client_main(void *arg)
{
    s_client_t *k = arg;
    uint8_t *body = malloc(1u << 20);
    if (!body)
        bail("out of memory");
    while (!atomic_load(&R.stop_clients)) {
        uint64_t r = tap_rand(&k->rng);
        int burst = r % 100 < 70   ? 1 + (int) (r / 100 % 4)
                    : r % 100 < 96 ? 10 + (int) (r / 100 % 190)
                                   : 1;
        for (int i = 0; i < burst && !atomic_load(&R.stop_clients); i++)
            s_append_one(k, body, r % 100 >= 96);
        int64_t t0 = util_mono_ms();
        db_client_flush(k->cl);
        s_took(k, t0);
        uint64_t p = tap_rand(&k->rng);
        int64_t end =
            util_mono_ms() + (p % 100 < 85 ? (int64_t) (p / 100 % 20) : (int64_t) (p / 100 % 400));
        do {
            t0 = util_mono_ms();
            db_client_poll(k->cl, (int) (end - t0 > 0 ? end - t0 : 0));
            s_took(k, t0);
        } while (util_mono_ms() < end);
        s_acked(k);
    }
    int64_t t0 = util_mono_ms();
    k->sync_rc = db_client_sync(k->cl, SYNC_MS);
    k->sync_ms = util_mono_ms() - t0;
    if (k->sync_rc && !k->why[0])
        snprintf(k->why, sizeof k->why, "sync: %s", lux_errmsg());
    s_acked(k);
    free(body);
    return NULL;
}

/* --- subscribers ---------------------------------------------------------------------- */

/* The hash at seq of shard s, from its tail's file (seq at or below an
   acknowledged one: in every chain member). 0 or -1. */
static int
s_hash_at(uint32_t s, uint64_t seq, uint8_t out[DB_HASH_LEN])
{
    uint32_t index;
    char path[PATH_MAX];
    if (fx_pid_at(&R.c, s, -1, &index) <= 0)
        return -1;
    db_store_opts_t o = {.path = db_cluster_replica_db(&R.c, s, index, path, sizeof path),
                         .readonly = true};
    db_store_t *st = db_store_open(&o);
    int rc = st ? db_store_hash_at(st, seq, out) : -1;
    db_store_close(&st);
    return rc ? -1 : 0;
}

static db_sub_t *
s_sub_open(s_sub_t *u, uint64_t after)
{
    for (int64_t t0 = util_mono_ms(); util_mono_ms() - t0 < 30000;) {
        db_sub_t *sub = db_sub_new(&R.c, NULL, u->shard, after);
        if (sub)
            return sub;
        u->new_fails++;
        usleep(100000);
    }
    return NULL;
}

static void *
s_sub_main(void *arg)
{
    s_sub_t *u = arg;
    for (int64_t t0 = util_mono_ms();
         util_mono_ms() - t0 < u->start_ms && !atomic_load(&R.stop_subs);)
        usleep(20000);
    fx_chain_init(&u->ck, &R.c, u->shard);
    uint64_t acked = atomic_load(&R.acked[u->shard]);
    if (u->old && acked) {
        uint64_t at = 1 + s_rand(&u->rng, acked);
        if (s_hash_at(u->shard, at, u->ck.prev) == 0) {
            u->after = at;
            u->ck.next = at + 1;
        } else {
            fx_chain_init(&u->ck, &R.c, u->shard);
        }
    }
    s_note("subscriber %d (shard %u) starts after seq %llu", u->id, u->shard,
           (unsigned long long) u->after);
    db_sub_t *sub = s_sub_open(u, u->after);
    int64_t next_drop = util_mono_ms() + 300 + (int64_t) s_rand(&u->rng, 3000), stop_t0 = 0;
    while (sub) {
        if (atomic_load(&R.stop_subs)) {
            uint64_t t = atomic_load(&R.target[u->shard]);
            if (!stop_t0)
                stop_t0 = util_mono_ms();
            if (t && u->ck.next > t) {
                u->reached = true;
                break;
            }
            if (util_mono_ms() - stop_t0 > SYNC_MS)
                break;
        }
        net_batch_t b;
        if (db_sub_recv(sub, &b, 50) > 0)
            fx_chain_batch(&u->ck, &b, NULL, NULL);
        if (u->drops && util_mono_ms() >= next_drop && !atomic_load(&R.stop_subs)) {
            db_sub_destroy(&sub);
            u->resumed++;
            sub = s_sub_open(u, u->ck.next - 1);
            next_drop = util_mono_ms() + 300 + (int64_t) s_rand(&u->rng, 3000);
        }
    }
    db_sub_destroy(&sub);
    return NULL;
}

/* --- chaos ---------------------------------------------------------------------------- */

static bool
s_serving(const db_status_t *st, int k)
{
    uint32_t s = (uint32_t) k / R.reps;
    const db_chain_t *ch = &st->chains[s];
    return db_chain_find(ch, (uint32_t) k % R.reps) >= 0 && st->age_ms[k] >= 0 &&
           st->age_ms[k] < R.c.dead_ms && st->beats[k].state == DB_RS_CHAIN &&
           st->beats[k].epoch == ch->epoch;
}

/* The pid of slot k if it beats now (0 otherwise). */
static pid_t
s_live_pid(const db_status_t *st, int k)
{
    if (st->age_ms[k] < 0 || st->age_ms[k] > R.c.dead_ms / 2)
        return 0;
    return (pid_t) st->beats[k].pid;
}

static bool
s_free(int k)
{
    return !R.slot[k].release_at && !R.slot[k].cont_at && R.never != k;
}

static void
s_kill_slot(const db_status_t *st, int k, bool never)
{
    pid_t pid = s_live_pid(st, k);
    if (pid <= 0)
        return;
    s_add_pid(pid);
    s_hold(k, true);
    int64_t now = util_mono_ms();
    uint64_t d = s_rand(&R.rng, 5);
    R.slot[k].release_at = never ? NEVER : now + (d == 0 ? 0 : (int64_t) s_rand(&R.rng, d * 800));
    R.slot[k].back_at = 0;
    if (never)
        R.never = k;
    int pos = db_chain_find(&st->chains[k / R.reps], (uint32_t) k % R.reps);
    s_note("kill -9 replica %d.%d (pid %d, position %d of %u)%s", k / (int) R.reps,
           k % (int) R.reps, (int) pid, pos, st->chains[k / R.reps].n, never ? ", never back" : "");
    kill(pid, SIGKILL);
    R.kills++;
}

/* A chain member (or, 1 in 6, a replica outside the chain) of shard s
   that is free to act on; -1 when none. */
static int
s_pick(const db_status_t *st, uint32_t s)
{
    const db_chain_t *ch = &st->chains[s];
    if (s_rand(&R.rng, 6) == 0) {
        for (uint32_t i = 0; i < R.reps; i++) {
            int k = (int) (s * R.reps + i);
            if (db_chain_find(ch, i) < 0 && s_free(k) && s_live_pid(st, k) > 0)
                return k;
        }
    }
    if (!ch->n)
        return -1;
    uint32_t pos = (uint32_t) s_rand(&R.rng, ch->n);
    int k = (int) (s * R.reps + ch->m[pos].index);
    return s_free(k) && s_live_pid(st, k) > 0 ? k : -1;
}

static bool
s_any_pending(void)
{
    for (uint32_t k = 0; k < R.shards * R.reps; k++)
        if ((R.slot[k].release_at && R.slot[k].release_at != NEVER) || R.slot[k].cont_at)
            return true;
    return R.sup_stopped != 0;
}

static void
s_master_kill(void)
{
    char pidfile[PATH_MAX + 32], err[2048];
    pid_t pid =
        util_pidfile_read(db_cluster_path(&R.c, pidfile, sizeof pidfile, "run/supervisor.pid"));
    if (pid <= 0)
        return;
    s_add_pid(pid);
    s_note("kill -9 the supervisor and its chain master (pid %d)", (int) pid);
    kill(pid, SIGKILL);
    R.master_kills++;
    for (int64_t t0 = util_mono_ms(); util_proc_alive(pid) && util_mono_ms() - t0 < 10000;)
        usleep(10000);
    usleep((useconds_t) (200 + s_rand(&R.rng, 2300)) * 1000);
    int rc = fx_lux(NULL, 0, err, sizeof err, "start --head --dir %s --log-only", R.c.dir);
    s_note("lux start --head again: %d", rc);
    if (rc && !R.chaos_err[0])
        snprintf(R.chaos_err, sizeof R.chaos_err,
                 "lux start --head after the master's kill: %d: %s", rc, err);
    s_add_pid(util_pidfile_read(pidfile));
}

static void
s_act(const db_status_t *st)
{
    uint64_t a = s_rand(&R.rng, 100);
    uint32_t s = (uint32_t) s_rand(&R.rng, R.shards);
    int k = s_pick(st, s);
    if (a < 40) { /* one replica */
        if (k < 0)
            return;
        /* never back: only a member whose chain is whole and serving, so
           that the master takes it out, not one of the others */
        bool never = R.never_ok && R.never < 0 && st->chains[s].n == R.reps &&
                     db_chain_find(&st->chains[s], (uint32_t) k % R.reps) >= 0 &&
                     s_rand(&R.rng, 3) == 0;
        for (uint32_t m = 0; never && m < st->chains[s].n; m++) {
            int o = (int) (s * R.reps + st->chains[s].m[m].index);
            never = o == k || (s_free(o) && s_serving(st, o));
        }
        s_kill_slot(st, k, never);
        if (never) {
            /* nothing more until the master has taken it out of its chain:
               then its chain never needs it back */
            for (int64_t t0 = util_mono_ms(); util_mono_ms() - t0 < 30000; usleep(50000)) {
                db_status_t now;
                if (db_master_status(&R.c, NULL, &now, 1000))
                    continue;
                bool gone = db_chain_find(&now.chains[s], (uint32_t) k % R.reps) < 0;
                db_status_free(&now);
                if (gone)
                    break;
            }
        }
    } else if (a < 55) { /* two at once: of one shard or of two */
        uint32_t s2 = s_rand(&R.rng, 2) ? s : (uint32_t) s_rand(&R.rng, R.shards);
        int k2 = s_pick(st, s2);
        if (k < 0 || k2 < 0 || k2 == k)
            return;
        s_note("two at once");
        R.doubles++;
        s_kill_slot(st, k, false);
        s_kill_slot(st, k2, false);
    } else if (a < 65) { /* the chain master */
        if (!s_any_pending())
            s_master_kill();
    } else if (a < 85) { /* a replica stopped past the dead time */
        pid_t pid = k >= 0 ? s_live_pid(st, k) : 0;
        if (pid <= 0)
            return;
        s_add_pid(pid);
        R.slot[k].stopped = pid;
        R.slot[k].cont_at = util_mono_ms() + 2 * R.c.dead_ms + (int64_t) s_rand(&R.rng, 1600);
        R.slot[k].back_at = 0;
        s_note("SIGSTOP replica %d.%d (pid %d)", k / (int) R.reps, k % (int) R.reps, (int) pid);
        kill(pid, SIGSTOP);
        R.stops++;
    } else if (a < 90) { /* the supervisor stopped */
        char pidfile[PATH_MAX + 32];
        pid_t pid =
            util_pidfile_read(db_cluster_path(&R.c, pidfile, sizeof pidfile, "run/supervisor.pid"));
        if (pid <= 0 || R.sup_stopped)
            return;
        R.sup_stopped = pid;
        R.sup_cont_at = util_mono_ms() + R.c.dead_ms + (int64_t) s_rand(&R.rng, 1500);
        s_note("SIGSTOP the supervisor (pid %d)", (int) pid);
        kill(pid, SIGSTOP);
        R.sup_stops++;
    }
}

/* Holds released and stopped processes continued when due (all of them,
   the never one apart, when all is set). */
static void
s_due(bool all)
{
    int64_t now = util_mono_ms();
    for (uint32_t k = 0; k < R.shards * R.reps; k++) {
        s_slot_t *x = &R.slot[k];
        if (x->release_at && x->release_at != NEVER && (all || now >= x->release_at)) {
            s_hold((int) k, false);
            x->release_at = 0;
            x->back_at = now;
            s_note("replica %u.%u may start again", k / R.reps, k % R.reps);
        }
        if (x->cont_at && (all || now >= x->cont_at)) {
            kill(x->stopped, SIGCONT);
            x->cont_at = 0;
            x->back_at = now;
            s_note("SIGCONT replica %u.%u (pid %d)", k / R.reps, k % R.reps, (int) x->stopped);
        }
    }
    if (R.sup_stopped && (all || now >= R.sup_cont_at)) {
        kill(R.sup_stopped, SIGCONT);
        s_note("SIGCONT the supervisor (pid %d)", (int) R.sup_stopped);
        R.sup_stopped = 0;
    }
}

/* Replicas back (released, continued) that serve now: their time. */
static void
s_rejoins(const db_status_t *st)
{
    int64_t now = util_mono_ms();
    for (uint32_t k = 0; k < R.shards * R.reps; k++) {
        s_slot_t *x = &R.slot[k];
        if (st->age_ms[k] >= 0)
            s_add_pid((pid_t) st->beats[k].pid);
        if (!x->back_at || !s_serving(st, (int) k))
            continue;
        int64_t d = now - x->back_at;
        R.rejoins++;
        if (d > R.rejoin_max_ms)
            R.rejoin_max_ms = d;
        if (d > REJOIN_MS)
            R.late_bad++;
        x->back_at = 0;
    }
}

static void *
s_chaos_main(void *arg)
{
    (void) arg;
    int64_t t0 = util_mono_ms(), next = t0 + 300 + (int64_t) s_rand(&R.rng, 700);
    while (util_mono_ms() - t0 < R.chaos_ms) {
        s_due(false);
        db_status_t st;
        if (db_master_status(&R.c, NULL, &st, 1000) == 0) {
            s_rejoins(&st);
            if (util_mono_ms() >= next && !R.sup_stopped) {
                s_act(&st);
                next = util_mono_ms() + 100 + (int64_t) s_rand(&R.rng, 800);
            }
            db_status_free(&st);
        }
        usleep(20000);
    }
    s_due(true);
    return NULL;
}

/* --- checks --------------------------------------------------------------------------- */

/* Every event of every client on the file at path, in seq order: cseq 1..n
   of each (client, shard), idx = cseq, body as appended. 0 when so; else
   -1 with why. */
static int
s_check_file(const char *path, uint32_t s, char *why, size_t n)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = 0;
    uint8_t *want = malloc(1u << 20);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ||
        sqlite3_prepare_v2(db,
                           "SELECT seq, cseq, idx, body FROM event WHERE client = ?1 "
                           "ORDER BY seq",
                           -1, &st, NULL)) {
        snprintf(why, n, "%s: %s", path, sqlite3_errmsg(db));
        rc = -1;
    }
    for (int c = 0; !rc && c < R.nclients; c++) {
        s_client_t *k = &R.cl[c];
        uint64_t got = 0;
        sqlite3_reset(st);
        sqlite3_bind_blob(st, 1, db_client_id(k->cl)->b, 16, SQLITE_STATIC);
        int step;
        while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
            uint64_t seq = (uint64_t) sqlite3_column_int64(st, 0);
            uint64_t cseq = (uint64_t) sqlite3_column_int64(st, 1);
            int64_t idx = sqlite3_column_int64(st, 2);
            const void *body = sqlite3_column_blob(st, 3);
            uint32_t len = (uint32_t) sqlite3_column_bytes(st, 3);
            if (cseq != got + 1 || idx != (int64_t) cseq || cseq > k->n[s]) {
                snprintf(why, n,
                         "client %d at seq %llu: cseq %llu idx %lld after cseq %llu (%llu queued)",
                         c, (unsigned long long) seq, (unsigned long long) cseq, (long long) idx,
                         (unsigned long long) got, (unsigned long long) k->n[s]);
                rc = -1;
                break;
            }
            s_fill(want, k->size[s][cseq - 1], c, s, cseq);
            if (len != k->size[s][cseq - 1] || memcmp(body, want, len) != 0) {
                snprintf(why, n, "client %d cseq %llu at seq %llu: body of %u bytes, %u appended%s",
                         c, (unsigned long long) cseq, (unsigned long long) seq, len,
                         k->size[s][cseq - 1], len == k->size[s][cseq - 1] ? ", differs" : "");
                rc = -1;
            }
            got = cseq;
        }
        if (!rc && step != SQLITE_DONE) {
            snprintf(why, n, "%s: %s", path, sqlite3_errmsg(db));
            rc = -1;
        }
        if (!rc && got != k->n[s]) {
            snprintf(why, n, "client %d: %llu of its %llu events", c, (unsigned long long) got,
                     (unsigned long long) k->n[s]);
            rc = -1;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(want);
    return rc;
}

/* --- one run -------------------------------------------------------------------------- */

static void
s_at_exit(void)
{
    if (!R.running)
        return;
    s_due(true);
    fx_stop(&R.c);
    R.running = false;
}

static void
s_setup(uint64_t seed, bool quick)
{
    memset(&R, 0, sizeof R);
    R.seed = seed;
    R.t0 = util_mono_ms();
    R.rng = s_mix(seed);
    R.never = -1;
    R.shards = 1 + (uint32_t) s_rand(&R.rng, MAXS);
    R.reps = s_rand(&R.rng, 4) == 0 ? 2 : 3;
    R.nclients = 1 + (int) s_rand(&R.rng, MAXC);
    R.nsubs = 1 + (int) s_rand(&R.rng, MAXSUB);
    R.chaos_ms = quick ? 5000 : 6000 + (int) s_rand(&R.rng, 14000);
    R.never_ok = s_rand(&R.rng, 3) == 0;
    atomic_store(&R.budget, quick ? (int64_t) 6 << 20 : (int64_t) 48 << 20);
    for (int i = 0; i < R.nsubs; i++) {
        s_sub_t *u = &R.sub[i];
        u->id = i;
        u->rng = s_mix(seed * 977 + 100 + (uint64_t) i);
        u->shard = (uint32_t) s_rand(&u->rng, R.shards);
        u->start_ms =
            s_rand(&u->rng, 2) ? 0 : 500 + (int) s_rand(&u->rng, (uint64_t) R.chaos_ms / 2);
        u->old = u->start_ms && s_rand(&u->rng, 3) != 0;
        u->drops = s_rand(&u->rng, 2) == 0;
    }
}

static void
s_run(uint64_t seed, bool quick)
{
    char err[4096];
    s_setup(seed, quick);
    snprintf(R.hold, sizeof R.hold, "%s/hold-%llu", tap_tmpdir(), (unsigned long long) seed);
    mkdir(R.hold, 0700);
    setenv("LUX_TEST_REPLICA_HOLD", R.hold, 1);
    diag("seed %llu: %u shard(s) x %u replicas, %d client(s), %d subscriber(s), chaos %d ms%s",
         (unsigned long long) seed, R.shards, R.reps, R.nclients, R.nsubs, R.chaos_ms,
         R.never_ok ? ", one replica may never come back" : "");
    fx_start(&R.c, R.shards, R.reps, "--log-only");
    R.running = true;
    {
        pid_t p[MAXPIDS];
        int np = fx_pids(&R.c, p, MAXPIDS);
        for (int i = 0; i < np; i++)
            s_add_pid(p[i]);
    }
    for (int i = 0; i < R.nclients; i++) {
        s_client_t *k = &R.cl[i];
        k->id = i;
        k->rng = s_mix(seed * 7919 + (uint64_t) i);
        db_client_opts_t co = {
            .cluster = &R.c, .timeout_ms = CALL_MS, .batch = s_rand(&k->rng, 2) ? 64 : 0};
        if (!(k->cl = db_client_new(&co)))
            bail("client: %s", lux_errmsg());
        for (uint32_t s = 0; s < R.shards; s++) {
            db_event_t e = {.kind = DB_K_note};
            do {
                util_id_random(&k->job[s]);
                e.mask = 0;
                DB_SET_ID(&e, job, DB_F_JOB, &k->job[s]);
            } while (db_client_shard(k->cl, &e) != s);
        }
    }
    for (int i = 0; i < R.nclients; i++)
        pthread_create(&R.cl[i].th, NULL, s_client_main, &R.cl[i]);
    for (int i = 0; i < R.nsubs; i++)
        pthread_create(&R.sub[i].th, NULL, s_sub_main, &R.sub[i]);
    pthread_t chaos;
    pthread_create(&chaos, NULL, s_chaos_main, NULL);
    pthread_join(chaos, NULL);
    s_ok(!R.chaos_err[0],
         "chaos: %d kills (%d two at once), %d of the master, %d "
         "replicas and %d supervisors stopped%s%s",
         R.kills, R.doubles, R.master_kills, R.stops, R.sup_stops, R.chaos_err[0] ? ": " : "",
         R.chaos_err);

    /* every chain whole again, the never-restarted replica apart */
    int64_t t0 = util_mono_ms();
    bool whole = true;
    for (uint32_t s = 0; s < R.shards; s++) {
        uint32_t want = R.reps - (R.never >= 0 && (uint32_t) R.never / R.reps == s);
        if (!fx_wait_chain(&R.c, s, want, 120000)) {
            whole = false;
            diag("seed %llu: shard %u is not whole (%u members) after 120 s",
                 (unsigned long long) seed, s, want);
        }
    }
    int64_t whole_ms = util_mono_ms() - t0;
    db_status_t st;
    if (db_master_status(&R.c, NULL, &st, 5000) == 0) {
        s_rejoins(&st);
        db_status_free(&st);
    }
    int pending = 0;
    for (uint32_t k = 0; k < R.shards * R.reps; k++)
        pending += R.slot[k].back_at != 0;
    s_ok(whole && pending == 0 && R.late_bad == 0 && whole_ms <= REJOIN_MS,
         "every chain whole again %lld ms after the chaos; %d replicas back serving, "
         "the slowest in %lld ms (bound %d); %d not back; never back: %s",
         (long long) whole_ms, R.rejoins, (long long) R.rejoin_max_ms, REJOIN_MS, pending,
         R.never >= 0 ? "one" : "none");

    /* the clients sync, then the subscribers reach the end */
    atomic_store(&R.stop_clients, true);
    for (int i = 0; i < R.nclients; i++)
        pthread_join(R.cl[i].th, NULL);
    for (int i = 0; i < R.nclients; i++) {
        s_client_t *k = &R.cl[i];
        uint64_t n = 0;
        for (uint32_t s = 0; s < R.shards; s++)
            n += k->n[s];
        s_ok(k->bad == 0 && k->sync_rc == 0 && k->max_call_ms <= CALL_MS + 5000 &&
                 db_client_unacked(k->cl) == 0,
             "client %d: %llu events queued, all acknowledged (sync %lld ms), %d refused, "
             "longest call %lld ms (bound %d)%s%s",
             i, (unsigned long long) n, (long long) k->sync_ms, k->refused,
             (long long) k->max_call_ms, CALL_MS, k->why[0] ? ": " : "", k->why);
    }
    for (uint32_t s = 0; s < R.shards; s++) {
        uint32_t index;
        fx_pid_at(&R.c, s, -1, &index);
        atomic_store(&R.target[s], fx_last_seq(&R.c, s, index));
    }
    atomic_store(&R.stop_subs, true);
    for (int i = 0; i < R.nsubs; i++)
        pthread_join(R.sub[i].th, NULL);

    /* stop, and nothing left running */
    int rc = fx_lux(NULL, 0, err, sizeof err, "stop --dir %s", R.c.dir);
    R.running = false;
    int alive = 0;
    for (int i = 0; i < R.npids; i++) {
        for (int64_t t1 = util_mono_ms();
             util_mono_ms() - t1 < 10000 && util_proc_alive(R.pids[i]);)
            usleep(10000);
        if (util_proc_alive(R.pids[i])) {
            alive++;
            diag("seed %llu: pid %d still runs after lux stop", (unsigned long long) seed,
                 (int) R.pids[i]);
        }
    }
    s_ok(rc == 0 && alive == 0, "lux stop (%s); none of the run's %d processes left",
         rc ? err : "ok", R.npids);

    /* the files */
    db_chain_t chain[MAXS];
    if (db_chain_load_state(&R.c, chain))
        bail("master.state: %s", lux_errmsg());
    for (uint32_t s = 0; s < R.shards; s++) {
        char path[DB_MAX_REPLICAS][PATH_MAX], why[512] = "";
        uint64_t last[DB_MAX_REPLICAS];
        uint8_t hash[DB_MAX_REPLICAS][DB_HASH_LEN];
        bool good = true, verified;
        for (uint32_t m = 0; m < chain[s].n; m++) {
            db_cluster_replica_db(&R.c, s, chain[s].m[m].index, path[m], sizeof path[m]);
            last[m] = chainlog_file_last(path[m], 0, hash[m], NULL, &verified);
            if (!verified && good) {
                good = false;
                snprintf(why, sizeof why, "replica %u does not verify", chain[s].m[m].index);
            }
            if (m > 0) {
                uint8_t h[DB_HASH_LEN], at[DB_HASH_LEN];
                chainlog_file_last(path[m - 1], last[m], h, at, &verified);
                if (good && (last[m - 1] < last[m] || memcmp(at, hash[m], DB_HASH_LEN) != 0)) {
                    good = false;
                    snprintf(why, sizeof why,
                             "replica %u (%llu events) is not a prefix of "
                             "replica %u (%llu)",
                             chain[s].m[m].index, (unsigned long long) last[m],
                             chain[s].m[m - 1].index, (unsigned long long) last[m - 1]);
                }
            }
            char w[400];
            if (good && s_check_file(path[m], s, w, sizeof w)) {
                good = false;
                snprintf(why, sizeof why, "replica %u: %s", chain[s].m[m].index, w);
            }
        }
        for (uint32_t i = 0; i < R.reps; i++) { /* the others' chains verify too */
            if (db_chain_find(&chain[s], i) >= 0)
                continue;
            char p[PATH_MAX];
            uint8_t h[DB_HASH_LEN];
            chainlog_file_last(db_cluster_replica_db(&R.c, s, i, p, sizeof p), 0, h, NULL, &verified);
            if (!verified && good) {
                good = false;
                snprintf(why, sizeof why, "replica %u (out of the chain) does not verify", i);
            }
        }
        s_ok(good && chain[s].n > 0,
             "shard %u: %u replicas, %llu events, chains verified, prefixes of each "
             "other, every client's events on each once, in order, intact%s%s",
             s, chain[s].n, (unsigned long long) (chain[s].n ? last[0] : 0), why[0] ? ": " : "",
             why);
        /* the subscribers of this shard */
        for (int i = 0; i < R.nsubs; i++) {
            s_sub_t *u = &R.sub[i];
            if (u->shard != s)
                continue;
            uint8_t h[DB_HASH_LEN], at[DB_HASH_LEN];
            uint64_t upto = u->ck.next - 1;
            bool same = chain[s].n && upto > 0;
            if (same) {
                chainlog_file_last(path[chain[s].n - 1], upto, h, at, &verified);
                same = memcmp(at, u->ck.prev, DB_HASH_LEN) == 0;
            }
            s_ok(u->reached && u->ck.bad == 0 && same,
                 "subscriber %d of shard %u%s%s: seqs %llu..%llu once each, in order, "
                 "chained (%s), the last as in the log%s; resumed %d times",
                 i, s, u->start_ms ? ", late" : "", u->after ? " from an old seq" : "",
                 (unsigned long long) u->after + 1, (unsigned long long) upto,
                 u->ck.bad ? u->ck.why : "no gap, no repeat",
                 u->reached ? "" : " (it did not reach the end)", u->resumed);
        }
    }
    static char audit[65536];
    rc = fx_lux(audit, sizeof audit, err, sizeof err, "audit --dir %s", R.c.dir);
    s_ok(rc == 0, "lux audit (%s)", rc ? err : "ok");
    /* its problems, and the unacknowledged suffix of a replica never back
       (a note: t/1017), said */
    for (char *l = audit, *nl; l && *l; l = nl) {
        if ((nl = strchr(l, '\n')))
            *nl++ = '\0';
        if (strstr(l, "PROBLEM") || strstr(l, "unacknowledged"))
            diag("seed %llu: audit: %s", (unsigned long long) seed, l);
    }

    for (int i = 0; i < R.nclients; i++) {
        db_client_destroy(&R.cl[i].cl);
        for (uint32_t s = 0; s < R.shards; s++)
            free(R.cl[i].size[s]);
    }
    /* what the run leaves: its directories, kept when a check failed */
    if (!s_failed) {
        char cmd[3 * PATH_MAX];
        bool own_socks = strncmp(R.c.sock_dir, R.c.dir, strlen(R.c.dir)) != 0;
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' %s%s%s", R.c.dir, R.hold, own_socks ? "'" : "",
                 own_socks ? R.c.sock_dir : "", own_socks ? "'" : "");
        if (system(cmd) != 0)
            diag("could not remove %s", R.c.dir);
    } else {
        diag("seed %llu failed: its cluster is kept in %s; again: %s --first %llu --seeds 1 -v",
             (unsigned long long) seed, R.c.dir, s_argv0, (unsigned long long) seed);
    }
    s_failed = 0;
}

int
main(int argc, char **argv)
{
    uint64_t first = 1, seeds = 2;
    bool quick = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            seeds = strtoull(argv[++i], NULL, 10);
            quick = false;
        } else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc) {
            first = strtoull(argv[++i], NULL, 10);
            quick = false;
        } else if (strcmp(argv[i], "-v") == 0) {
            setenv("LUX_TEST_VERBOSE", "1", 1);
        } else {
            fprintf(stderr, "usage: %s [--seeds N] [--first S] [-v]\n", argv[0]);
            return 2;
        }
    }
    s_argv0 = argv[0];
    s_verbose = tap_verbose();
    tap_atexit(s_at_exit);
    for (uint64_t seed = first; seed < first + seeds; seed++)
        s_run(seed, quick);
    return done_testing();
}

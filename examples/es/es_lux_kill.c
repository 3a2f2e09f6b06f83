/*  es_lux_kill - --kill-workers: kill -9 this run's workers at random while
    it trains, to show that retries and lineage change nothing.

    Whose workers: on the embedded default the node manager is a thread of
    the driver process and its workers are this process's children, started
    as `lux worker ...`. So a worker of this run is a process whose parent is
    this process and whose second argument is "worker"; nothing else on the
    machine is touched. A child that died stays a zombie (its PID is not
    reused) until the node manager reaps it, so a PID read here names our
    worker when the signal goes out, bar the node reaping it and the system
    handing out the same PID in between.

    When: a thread sleeps a random time between min_ms and max_ms, picks one
    of the live workers at random and kills it, until stopped. The first
    pause is shorter, 1 to min_ms / 2 ms, so that short runs see a kill too
    (CartPole seed 1 trains in about 20 ms: with the first kill after 30 ms
    or more, --kill-workers killed nothing). After a kill the next one
    waits, beyond its pause, until the driver says an iteration ended
    (es_lux_killer_progress): on a loaded machine a worker took longer to
    start and run its task than the longest pause, the same task was
    killed on each of its 20 attempts and the run failed (t/7102 in CI).
    Paced by progress, every kill costs at most one retry of the tasks
    under way, and the run ends however slow the machine. The choices
    come from their own generator (seeded from the clock unless given), so
    they never touch the training's random numbers.
*/
#include "es_lux.h"
#include "es_rng.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct es_lux_killer {
    pthread_t thread;     /* the killing thread */
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t wake;  /* signalled by stop */
    bool stop;            /* es_lux_killer_stop was called */
    es_rng_t rng;         /* when and whom */
    int min_ms, max_ms;   /* the range of the pauses */
    int killed;           /* workers killed */
    atomic_long progress; /* es_lux_killer_progress calls */
    long progress_at_kill; /* progress when the last kill went out */
};

/* Whether pid is a live child of this process running `lux worker`. */
static bool
s_is_worker(int pid, int self)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold anything, so go past the last ')' */
    char *p = strrchr(buf, ')');
    char state;
    int ppid;
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2 || ppid != self || state == 'Z')
        return false;
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    if (!(f = fopen(path, "re")))
        return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t first = strnlen(buf, n);
    return first + 1 < n && strcmp(buf + first + 1, "worker") == 0;
}

int
es_lux_workers(int *pids, int max)
{
    int self = (int)getpid(), n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        if (s_is_worker((int)pid, self))
            pids[n++] = (int)pid;
    }
    closedir(d);
    return n;
}

/* Sleep ms unless stopped first; true when stopped. */
static bool
s_pause(es_lux_killer_t *k, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->lock);
    while (!k->stop && pthread_cond_timedwait(&k->wake, &k->lock, &until) != ETIMEDOUT)
        ;
    bool stop = k->stop;
    pthread_mutex_unlock(&k->lock);
    return stop;
}

static void *
s_run(void *arg)
{
    es_lux_killer_t *k = arg;
    for (bool first = true;; first = false) {
        int lo = first ? 1 : k->min_ms;
        int hi = !first ? k->max_ms : k->min_ms / 2 > 1 ? k->min_ms / 2 : 1;
        int ms = lo + (int)es_rng_below(&k->rng, (uint64_t)(hi - lo + 1));
        if (s_pause(k, ms))
            break;
        long now = atomic_load(&k->progress);
        if (k->killed > 0 && now == k->progress_at_kill)
            continue; /* nothing ended since the last kill */
        int pids[256];
        int n = es_lux_workers(pids, 256);
        if (n == 0)
            continue;
        int pid = pids[es_rng_below(&k->rng, (uint64_t)n)];
        if (kill(pid, SIGKILL) == 0) {
            k->killed++;
            k->progress_at_kill = now;
        }
    }
    return NULL;
}

es_lux_killer_t *
es_lux_killer_start(uint64_t seed, int min_ms, int max_ms)
{
    es_lux_killer_t *k = calloc(1, sizeof *k);
    if (!k || min_ms < 0 || max_ms < min_ms) {
        free(k);
        return NULL;
    }
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    }
    es_rng_seed(&k->rng, seed);
    k->min_ms = min_ms;
    atomic_init(&k->progress, 0);
    k->max_ms = max_ms;
    pthread_mutex_init(&k->lock, NULL);
    pthread_cond_init(&k->wake, NULL);
    if (pthread_create(&k->thread, NULL, s_run, k) != 0) {
        pthread_mutex_destroy(&k->lock);
        pthread_cond_destroy(&k->wake);
        free(k);
        return NULL;
    }
    return k;
}

void
es_lux_killer_progress(es_lux_killer_t *k)
{
    if (k)
        atomic_fetch_add(&k->progress, 1);
}

int
es_lux_killer_stop(es_lux_killer_t **self_p)
{
    es_lux_killer_t *k = *self_p;
    if (!k)
        return 0;
    pthread_mutex_lock(&k->lock);
    k->stop = true;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->lock);
    pthread_join(k->thread, NULL);
    int killed = k->killed;
    pthread_mutex_destroy(&k->lock);
    pthread_cond_destroy(&k->wake);
    free(k);
    *self_p = NULL;
    return killed;
}

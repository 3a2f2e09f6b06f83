/*  util_prof - per-hop timestamps of spilled tasks (see util_prof.h). */
#include "util_prof.h"
#include "util_time.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_MAX 4096 /* records held before they are written */

typedef struct {
    const char *hop;
    uint8_t id[16];
    int64_t ns;
} s_rec_t;

atomic_int util_prof_state;
/* The records and the file's name, under s_lock: a driver and the node
   manager it hosts (the embedded default) stamp from two threads at once,
   and with a plain counter two stamps took one slot, or both passed the
   end check and wrote past the buffer (t/3166). Only a process that
   profiles takes it: unset, a stamp stays a load and a branch. */
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static s_rec_t *s_recs;
static int s_n;
static char s_dir[PATH_MAX - 16], s_path[PATH_MAX];

/* With s_lock held. */
static void
s_write(void)
{
    if (s_n == 0)
        return;
    FILE *f = fopen(s_path, "a");
    if (f) {
        for (int i = 0; i < s_n; i++) {
            fprintf(f, "%s ", s_recs[i].hop);
            for (int k = 0; k < 16; k++)
                fprintf(f, "%02x", s_recs[i].id[k]);
            fprintf(f, " %lld\n", (long long) s_recs[i].ns);
        }
        fclose(f);
    }
    s_n = 0;
}

static void
s_at_exit(void)
{
    pthread_mutex_lock(&s_lock);
    s_write();
    pthread_mutex_unlock(&s_lock);
}

/* A fork holds the lock across it, so that no stamp is half made in the
   child's copy; a child forked after init writes its own records to its
   own file. */
static void
s_prepare(void)
{
    pthread_mutex_lock(&s_lock);
}

static void
s_parent(void)
{
    pthread_mutex_unlock(&s_lock);
}

static void
s_child(void)
{
    s_n = 0;
    snprintf(s_path, sizeof s_path, "%s/%d.prof", s_dir, (int) getpid());
    pthread_mutex_unlock(&s_lock);
}

/* With s_lock held: whether profiling is on. */
static bool
s_setup(void)
{
    const char *dir = getenv("LUX_SPILL_PROFILE");
    if (!dir || !*dir)
        return false;
    if (strlen(dir) >= sizeof s_dir || !(s_recs = calloc(S_MAX, sizeof *s_recs)))
        return false;
    strcpy(s_dir, dir);
    snprintf(s_path, sizeof s_path, "%s/%d.prof", s_dir, (int) getpid());
    atexit(s_at_exit);
    pthread_atfork(s_prepare, s_parent, s_child);
    return true;
}

bool
util_prof_init(void)
{
    /* two threads' first stamps both come here: one sets up */
    pthread_mutex_lock(&s_lock);
    int st = atomic_load_explicit(&util_prof_state, memory_order_relaxed);
    if (st == 0) {
        st = s_setup() ? 2 : 1;
        atomic_store_explicit(&util_prof_state, st, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s_lock);
    return st == 2;
}

void
util_prof_note(const char *hop, const uint8_t id[16])
{
    pthread_mutex_lock(&s_lock);
    if (s_recs) {
        if (s_n == S_MAX)
            s_write();
        s_rec_t *r = &s_recs[s_n++];
        r->hop = hop;
        memcpy(r->id, id, 16);
        r->ns = util_mono_ns();
    }
    pthread_mutex_unlock(&s_lock);
}

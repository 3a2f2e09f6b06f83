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
static s_rec_t *s_recs;
static int s_n;
static char s_dir[PATH_MAX - 16], s_path[PATH_MAX];

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

/* A child forked after init writes its own records to its own file. */
static void
s_child(void)
{
    s_n = 0;
    snprintf(s_path, sizeof s_path, "%s/%d.prof", s_dir, (int) getpid());
}

bool
util_prof_init(void)
{
    const char *dir = getenv("LUX_SPILL_PROFILE");
    atomic_store_explicit(&util_prof_state, 1, memory_order_relaxed);
    if (!dir || !*dir)
        return false;
    if (strlen(dir) >= sizeof s_dir || !(s_recs = calloc(S_MAX, sizeof *s_recs)))
        return false;
    strcpy(s_dir, dir);
    snprintf(s_path, sizeof s_path, "%s/%d.prof", s_dir, (int) getpid());
    atomic_store_explicit(&util_prof_state, 2, memory_order_relaxed);
    atexit(s_write);
    pthread_atfork(NULL, NULL, s_child);
    return true;
}

void
util_prof_note(const char *hop, const uint8_t id[16])
{
    if (s_n == S_MAX)
        s_write();
    s_rec_t *r = &s_recs[s_n++];
    r->hop = hop;
    memcpy(r->id, id, 16);
    r->ns = util_mono_ns();
}

/* 3181-spill-writer-handback: the spill writer's thread touches no job
   once it has handed it back (exec_spill.c). The ASan run of t/3108's
   seed 1087 (chaos, 2026-11-29) caught the thread reading the job's path,
   for the test hook's line, after it had put the job on the done list and
   let go of the lock: the node's loop had already taken the list
   (exec_spill_writer_done) and freed the job (heap-use-after-free in
   s_writer, the job freed by s_hand_back).

   Here the node's part is played by a thread that takes the done list as
   often as it can, while the main thread queues N small spills into a
   directory in /dev/shm (no disk in the way) with LUX_TEST_SPILL_GATE set,
   so that every hand-over writes the job's path to GATE.done. Each job
   must come back once, in order, written; each GATE.done line must be a
   path that was queued (a freed job's path reads as whatever the
   allocator left there: glibc keeps its list pointers in a freed chunk's
   first words), each path once; under ASan (the CI's sanitizer build may
   run it) the read itself is the report. The race is a few instructions
   wide: N spills give it many chances, not a certainty; ASan's seed found
   it. */
#include "tap.h"
#include "exec/exec_spill.h"
#include "util/util_err.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 20000

static exec_spill_writer_t *s_w;
static atomic_int s_back, s_stop;
static int s_bad_order, s_bad_rc;

static void
s_handed(void *ctx, void *arg, int rc, const char *msg)
{
    (void) ctx;
    (void) msg;
    int i = (int) (intptr_t) arg;
    if (i != atomic_load(&s_back))
        s_bad_order++;
    if (rc)
        s_bad_rc++;
    atomic_fetch_add(&s_back, 1);
}

/* the node's loop: takes what is done as often as it can */
static void *
s_node(void *arg)
{
    (void) arg;
    while (!atomic_load(&s_stop) && atomic_load(&s_back) < N)
        exec_spill_writer_done(s_w, s_handed, NULL);
    return NULL;
}

int
main(void)
{
    char base[512], dir[600], gate[700], done[720], path[800];
    const char *shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tap_tmpdir();
    snprintf(base, sizeof base, "%s", tap_tmpdir());
    snprintf(dir, sizeof dir, "%s/lux-3181-%d", shm, (int) getpid());
    if (mkdir(dir, 0700))
        bail("mkdir %s failed", dir);
    snprintf(gate, sizeof gate, "%s/gate", base);
    snprintf(done, sizeof done, "%s.done", gate);
    FILE *f = fopen(gate, "w"); /* open: writes do not wait at it */
    if (!f)
        bail("cannot make %s", gate);
    fclose(f);
    setenv("LUX_TEST_SPILL_GATE", gate, 1);

    s_w = exec_spill_writer_new();
    ok(s_w != NULL, "a spill writer starts");
    if (!s_w)
        return done_testing();
    pthread_t node;
    pthread_create(&node, NULL, s_node, NULL);
    static const char bytes[64] = "sixty-four bytes of a small object, spilled and read back";
    int queued = 0;
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "%s/s-%d", dir, i);
        if (exec_spill_writer_queue(s_w, path, bytes, sizeof bytes, (void *) (intptr_t) i))
            break;
        queued++;
        if (i % 64 == 63) /* the writer's pace, roughly: keep the queue short */
            while (atomic_load(&s_back) < i - 256)
                usleep(100);
    }
    is_int(queued, N, "%d spills queued", N);
    for (int i = 0; i < 600 && atomic_load(&s_back) < queued; i++)
        usleep(100000);
    atomic_store(&s_stop, 1);
    pthread_join(node, NULL);
    exec_spill_writer_done(s_w, s_handed, NULL);
    is_int(atomic_load(&s_back), queued, "every spill is handed back");
    is_int(s_bad_order, 0, "in the order queued");
    is_int(s_bad_rc, 0, "written");
    exec_spill_writer_destroy(&s_w, s_handed, NULL, 10000, NULL);

    /* the hook's lines: each a queued path, each once */
    char *seen = calloc(N, 1);
    int lines = 0, foreign = 0, twice = 0;
    char line[1024], want[800];
    f = fopen(done, "r");
    size_t dl = strlen(dir);
    while (f && fgets(line, sizeof line, f)) {
        lines++;
        line[strcspn(line, "\n")] = '\0';
        int i = -1;
        char *end = NULL;
        if (strncmp(line, dir, dl) == 0 && strncmp(line + dl, "/s-", 3) == 0)
            i = (int) strtol(line + dl + 3, &end, 10);
        if (i < 0 || i >= N || !end || *end ||
            (snprintf(want, sizeof want, "%s/s-%d", dir, i), strcmp(want, line))) {
            if (foreign++ < 3)
                diag("a line that is no queued path: \"%.80s\"", line);
            continue;
        }
        if (seen[i]++)
            twice++;
    }
    if (f)
        fclose(f);
    is_int(lines, queued, "the hook wrote a line for each hand-over");
    is_int(foreign, 0, "each line is the path of a job queued (none read from a freed job)");
    is_int(twice, 0, "each path once");
    free(seen);
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "%s/s-%d", dir, i);
        unlink(path);
    }
    rmdir(dir);
    return done_testing();
}

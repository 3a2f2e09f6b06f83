/* 3166-prof-threads: LUX_SPILL_PROFILE's stamps taken by several threads
   of one process are all written, none lost or torn (util_prof.h).

   In the embedded default a driver hosts its node manager in a thread of
   its own process, and both stamp hops of the same tasks (d_call, d_got
   on the driver's side; h_submit, b_dispatch, b_result on the node's).
   The records went into one buffer with a plain counter, unguarded: two
   threads stamping at once took the same slot, or both passed the
   buffer's end check and wrote past it.

   Built here: a child process with LUX_SPILL_PROFILE set; four threads,
   let go together, stamp 100,000 times each under a hop of their own;
   the child exits (its records are written at exit). Its PID.prof must
   hold exactly 100,000 well-formed lines of each hop. */
#include "tap.h"
#include "util/util_prof.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_THREADS 4
#define S_N 100000

static const char *s_hops[S_THREADS] = {"t_zero", "t_one", "t_two", "t_three"};
static pthread_barrier_t s_go;

static void *
s_stamper(void *arg)
{
    int k = (int) (intptr_t) arg;
    uint8_t id[16] = {0};
    id[0] = (uint8_t) k;
    pthread_barrier_wait(&s_go);
    for (uint32_t i = 0; i < S_N; i++) {
        memcpy(id + 4, &i, 4);
        util_prof_stamp(s_hops[k], id);
    }
    return NULL;
}

int
main(void)
{
    /* not under tap_tmpdir(): the child's exit runs the harness's clean-up
       too, which would remove that directory, the profile with it */
    char dir[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/lux-3166-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        bail("mkdtemp %s", dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("LUX_SPILL_PROFILE", dir, 1);
        pthread_t th[S_THREADS];
        pthread_barrier_init(&s_go, NULL, S_THREADS);
        for (int k = 0; k < S_THREADS; k++)
            if (pthread_create(&th[k], NULL, s_stamper, (void *) (intptr_t) k) != 0)
                _exit(3);
        for (int k = 0; k < S_THREADS; k++)
            pthread_join(th[k], NULL);
        exit(0); /* the records are written at exit */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "four threads stamped %d times each and the process exited (status 0x%x)", S_N, status);

    char path[PATH_MAX + 32], line[256];
    snprintf(path, sizeof path, "%s/%d.prof", dir, (int) pid);
    FILE *f = fopen(path, "r");
    ok(f != NULL, "its profile %s was written", path);
    long count[S_THREADS] = {0}, bad = 0;
    while (f && fgets(line, sizeof line, f)) {
        char hop[64], hex[64];
        long long ns;
        int k = -1;
        if (sscanf(line, "%63s %63s %lld", hop, hex, &ns) == 3 && strlen(hex) == 32 && ns > 0)
            for (int j = 0; j < S_THREADS; j++)
                if (strcmp(hop, s_hops[j]) == 0)
                    k = j;
        if (k >= 0 && strtol((char[3]) {hex[0], hex[1], 0}, NULL, 16) == k)
            count[k]++;
        else
            bad++;
    }
    if (f)
        fclose(f);
    for (int k = 0; k < S_THREADS; k++)
        is_int(count[k], S_N, "every stamp of thread %d (%s) is there", k, s_hops[k]);
    is_int(bad, 0, "no line torn or of another thread's hop under its ID");
    unlink(path);
    rmdir(dir);
    return done_testing();
}

/* 3171-embedded-shm-signals: a program on the embedded default leaves no
   store file in /dev/shm when SIGTERM or SIGINT ends it, and a kill -9's
   is removed by the next start; a live program's file is never removed
   (issue 24: zero leaked /dev/shm files).

   Each program is a child of this test that starts the embedded default
   (lux_init with no address: the node manager in its own process, its
   store /dev/shm/lux-UID-PID-NODE), says so through a pipe, and sleeps.
   SIGTERM, then SIGINT: the child dies of the signal (its status says
   so) and no file of its pid stays. A child that set its own SIGTERM
   handler keeps it (the handler runs). SIGKILL: its file stays, until
   another child starts the embedded default, which removes it, while the
   file of a third child, alive, stays. Before, SIGTERM and SIGINT left
   the file (checks 3, 6 and 12 failed). */
#include "tap.h"
#include "lib/graph.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t s_own;

static void
s_own_handler(int sig)
{
    (void) sig;
    s_own = 1;
}

/* A child on the embedded default (own: with its own SIGTERM handler,
   which makes it exit 7); its pid, once it has started. */
static pid_t
s_child(bool own)
{
    int fd[2];
    if (pipe(fd))
        bail("pipe");
    pid_t pid = fork();
    if (pid < 0)
        bail("fork");
    if (pid == 0) {
        close(fd[0]);
        /* as a program started from a terminal: a test run from a shell's
           background job inherits SIGINT ignored (POSIX: an asynchronous
           list without job control ignores SIGINT and SIGQUIT; .ci/run
           under `nohup ... &` failed checks 5 and 6 so), and the embedded
           default rightly leaves an ignored signal alone */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, own ? s_own_handler : SIG_DFL);
        lux_t *lx = graph_unrecorded(NULL, 1, 4u << 20);
        if (write(fd[1], "x", 1) != 1)
            _exit(3);
        for (int i = 0; i < 600 && !s_own; i++)
            usleep(100 * 1000);
        if (s_own) {
            lux_shutdown(&lx);
            _exit(7);
        }
        _exit(0);
    }
    close(fd[1]);
    char c;
    bool up = read(fd[0], &c, 1) == 1;
    close(fd[0]);
    if (!up)
        bail("a child did not start the embedded default");
    return pid;
}

/* How many files of pid's stores are in /dev/shm. */
static int
s_files(pid_t pid)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "lux-%d-%d-", (int) getuid(), (int) pid);
    DIR *d = opendir("/dev/shm");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static void
s_ended_by(int sig, const char *name)
{
    pid_t pid = s_child(false);
    is_int(s_files(pid), 1, "a program on the embedded default has its store file (%s)", name);
    kill(pid, sig);
    int st = 0;
    waitpid(pid, &st, 0);
    ok(WIFSIGNALED(st) && WTERMSIG(st) == sig, "%s ends it, of the signal (status %#x)", name, st);
    is_int(s_files(pid), 0, "after %s, no file of its pid is left", name);
}

int
main(void)
{
    setenv("LUX_LOG", "error", 0);
    s_ended_by(SIGTERM, "SIGTERM");
    s_ended_by(SIGINT, "SIGINT");

    /* a program's own handler stays its own */
    pid_t pid = s_child(true);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 7, "a program's own SIGTERM handler is kept: it "
       "runs, and the program shuts down (status %#x)", st);
    is_int(s_files(pid), 0, "... and its file goes at its shutdown");

    /* kill -9: its file stays until the next start, which spares a live one's */
    pid_t live = s_child(false), dead = s_child(false);
    kill(dead, SIGKILL);
    waitpid(dead, &st, 0);
    is_int(s_files(dead), 1, "after SIGKILL, its file stays");
    pid_t next = s_child(false);
    is_int(s_files(dead), 0, "the next start of the embedded default removes it");
    is_int(s_files(live), 1, "... and not the file of a live program");
    kill(live, SIGTERM);
    kill(next, SIGTERM);
    waitpid(live, &st, 0);
    waitpid(next, &st, 0);
    is_int(s_files(live) + s_files(next), 0, "both ended by SIGTERM: no file left");
    return done_testing();
}

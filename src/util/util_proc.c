/*  util_proc - spawning, watching and measuring processes (Linux /proc). */
#include "util_proc.h"
#include "util_err.h"
#include "util_fs.h"
#include "util_time.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

pid_t
util_spawn(char *const argv[], const char *logpath)
{
    return util_spawn_env(argv, logpath, NULL);
}

char **
util_env_without(const char *prefix, const char *const keep[])
{
    size_t n = 0, k = 0, plen = strlen(prefix);
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    for (size_t i = 0; env && i < n; i++) {
        const char *v = environ[i], *eq = strchr(v, '=');
        size_t name = eq ? (size_t) (eq - v) : strlen(v);
        bool drop = strncmp(v, prefix, plen) == 0;
        for (size_t j = 0; drop && keep && keep[j]; j++)
            drop = !(strlen(keep[j]) == name && strncmp(v, keep[j], name) == 0);
        if (!drop && !(env[k++] = strdup(v)))
            util_env_free(&env);
    }
    if (!env)
        util_err(LUX_ENOMEM, "out of memory");
    return env;
}

void
util_env_free(char ***envp)
{
    for (size_t i = 0; *envp && (*envp)[i]; i++)
        free((*envp)[i]);
    free(*envp);
    *envp = NULL;
}

pid_t
util_spawn_env(char *const argv[], const char *logpath, char *const envp[])
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    pid_t pid;
    int rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logpath ? logpath : "/dev/null",
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    /* nothing else of ours: a descriptor opened without O_CLOEXEC
       (ours, or a library's, or a module's) must not live on in the
       child, where it would keep a pipe's write end open, and the
       reader waiting for its end waits for ever (es.so's report, when a
       worker was replaced as it read) */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    rc = posix_spawn(&pid, argv[0], &fa, &at, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        return util_err(LUX_EIO, "spawn %s: %s", argv[0], strerror(rc));
    return pid;
}

bool
util_proc_alive(pid_t pid)
{
    char path[64], buf[512];
    if (pid <= 0)
        return false;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return false;
    /* a zombie still answers kill(0); read its state */
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

bool
util_proc_stop(pid_t pid, int sig, int timeout_ms)
{
    int64_t deadline = util_mono_ms() + timeout_ms;
    if (pid <= 0)
        return true;
    kill(pid, sig);
    for (;;) {
        if (waitpid(pid, NULL, WNOHANG) == pid || !util_proc_alive(pid))
            return true;
        if (util_mono_ms() >= deadline)
            break;
        usleep(5000);
    }
    kill(pid, SIGKILL);
    for (int i = 0; i < 200; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid || !util_proc_alive(pid))
            return true;
        usleep(5000);
    }
    return false;
}

int64_t
util_proc_cpu_ns(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* fields after the command: state(3) ... utime(14) stime(15) */
    unsigned long long ut = 0, st = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (int64_t) ((ut + st) * (1000000000ULL / (unsigned long long) hz));
}

/* /proc/PID/NAME into buf (NUL-ended, n bytes at most); its length, or -1. */
static ssize_t
s_proc_read(pid_t pid, const char *name, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int) pid, name);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = '\0';
    return (ssize_t) got;
}

bool
util_proc_is_worker(pid_t pid)
{
    char buf[4096];
    ssize_t n = s_proc_read(pid, "cmdline", buf, sizeof buf);
    for (ssize_t i = 0; i < n; i += (ssize_t) strlen(buf + i) + 1)
        if (strcmp(buf + i, "worker") == 0)
            return true;
    return false;
}

pid_t
util_proc_ppid(pid_t pid)
{
    char buf[1024], state;
    int ppid;
    if (s_proc_read(pid, "stat", buf, sizeof buf) < 0)
        return -1;
    /* "pid (comm) state ppid ...": comm may hold anything, so go past the last ')' */
    const char *p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2 || state == 'Z')
        return -1;
    return (pid_t) ppid;
}

uint64_t
util_proc_start(pid_t pid)
{
    char buf[1024], state;
    unsigned long long start = 0;
    if (pid <= 0 || s_proc_read(pid, "stat", buf, sizeof buf) < 0)
        return 0;
    /* past the last ')' (comm may hold anything): field 3, the state, then
       fields 4-21, then 22, the start time */
    const char *p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                     "%*d %*d %*d %*d %llu", &state, &start) != 2 || state == 'Z' ||
        state == 'X')
        return 0;
    return (uint64_t) start;
}

int64_t
util_proc_rss(pid_t pid, int64_t *peak)
{
    char path[64];
    char *s;
    int64_t rss = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
    if (peak)
        *peak = -1;
    if (!(s = util_read_file(path, NULL)))
        return -1;
    char *p = strstr(s, "VmRSS:");
    if (p)
        rss = strtoll(p + 6, NULL, 10) * 1024;
    p = strstr(s, "VmHWM:");
    if (p && peak)
        *peak = strtoll(p + 6, NULL, 10) * 1024;
    free(s);
    return rss;
}

int
util_lock_file(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return util_err(LUX_EIO, "%s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(fd);
        return util_err(e == EWOULDBLOCK ? LUX_EEXIST : LUX_EIO, "%s: %s", path,
                        e == EWOULDBLOCK ? "held by another process" : strerror(e));
    }
    return fd;
}

int
util_die_with_parent(void)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
        return util_err(LUX_EIO, "prctl: %s", strerror(errno));
    if (getppid() != parent || parent == 1)
        return util_err(LUX_EDEAD, "our parent is gone");
    return 0;
}

int
util_pidfile_write(const char *path)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%d\n", (int) getpid());
    return util_write_file(path, buf, (size_t) n, 0600);
}

pid_t
util_pidfile_read(const char *path)
{
    char *s = util_read_file(path, NULL);
    if (!s)
        return 0;
    long v = strtol(s, NULL, 10);
    free(s);
    return v > 0 ? (pid_t) v : 0;
}

int
util_fd_limit(int need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl))
        return util_err(LUX_EIO, "cannot read the open-files limit: %s", strerror(errno));
    rlim_t want = UTIL_FD_WANT;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        want = rl.rlim_max;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        struct rlimit up = {.rlim_cur = want, .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = want;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t) need) {
        char hard[32] = "unlimited";
        if (rl.rlim_max != RLIM_INFINITY)
            snprintf(hard, sizeof hard, "%llu", (unsigned long long) rl.rlim_max);
        return util_err(LUX_EFULL, "the open-files limit (ulimit -n) is %llu, its hard limit "
                        "%s: Lux needs %d at least (sockets, workers and log files); raise it, "
                        "e.g. ulimit -n 1024", (unsigned long long) rl.rlim_cur, hard, need);
    }
    return 0;
}

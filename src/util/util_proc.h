/*  util_proc - processes: spawning daemons, pid files, liveness, and the
    CPU time and memory of a process as the kernel counts them. */
#ifndef UTIL_PROC_H_INCLUDED
#define UTIL_PROC_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Start argv[0] (a path) with argv in a new session, stdin from /dev/null
   and stdout/stderr to logpath (appended; /dev/null when NULL), and no
   other descriptor of ours (whether O_CLOEXEC or not). Returns the pid,
   or a negative LUX_E* code. */
pid_t util_spawn(char *const argv[], const char *logpath);

/* The same with the environment envp (NULL: ours). */
pid_t util_spawn_env(char *const argv[], const char *logpath, char *const envp[]);

/* A copy of our environment without the variables whose names start
   with prefix, but for those named in keep (NULL-terminated): for
   util_spawn_env. NULL when out of memory; free with util_env_free. */
char **util_env_without(const char *prefix, const char *const keep[]);
void util_env_free(char ***envp);

/* Whether pid is alive (and not a zombie). */
bool util_proc_alive(pid_t pid);

/* Send sig to pid, wait up to timeout_ms for it to exit, then SIGKILL.
   Reaps it when it is our child. True when it is gone. */
bool util_proc_stop(pid_t pid, int sig, int timeout_ms);

/* User+system CPU time of pid in ns (from /proc); -1 when unknown. */
int64_t util_proc_cpu_ns(pid_t pid);

/* When pid started (field 22 of /proc/PID/stat: clock ticks after boot),
   0 when it is gone or a zombie. A pid is reused once its process ends;
   the pid and its start time together name one process. */
uint64_t util_proc_start(pid_t pid);

/* Resident set size and its peak in bytes (from /proc); -1 when unknown. */
int64_t util_proc_rss(pid_t pid, int64_t *peak);

/* Whether pid runs `lux worker` (an argument of its command line is
   "worker"): false when it is gone or unreadable. */
bool util_proc_is_worker(pid_t pid);

/* The parent of pid when pid is alive and not a zombie, else -1 (from
   /proc/PID/stat). */
pid_t util_proc_ppid(pid_t pid);

/* Make room for need open files at least: the soft limit (ulimit -n) is
   raised towards UTIL_FD_WANT, no higher than the hard limit. 0, or
   LUX_EFULL naming both limits when even the hard one is below need
   (ZeroMQ aborts the process when a socket finds no descriptor, so a
   process refuses to start instead). */
#define UTIL_FD_NEED 256
#define UTIL_FD_WANT 8192
int util_fd_limit(int need);

/* Take an exclusive lock on path (created 0600) for the life of the
   process; the fd is returned and kept open. LUX_EEXIST when
   another process holds it. */
int util_lock_file(const char *path);

/* Ask for SIGTERM when our parent dies; LUX_EDEAD if it already has. */
int util_die_with_parent(void);

/* Write our pid to path; read a pid back (0 when none or unreadable). */
int util_pidfile_write(const char *path);
pid_t util_pidfile_read(const char *path);

#endif

/*  es_lux_report - the closing report of an ES run, drawn from the run's
    log with the same `lux sql` a user would type, each query printed above
    its answer so that it can be run again, changed, or extended.

    The driver's results reach it before the node manager's task_finished
    events reach the log (they are appended asynchronously, in batches), so
    the report first waits until the log holds an outcome for every task
    the driver submitted.

    Which lux: $LUX_BIN when set, else this program when it is lux (the
    driver runs inside `lux run`), else `lux` on the PATH.
*/
#include "es_lux.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *
s_lux(char *buf, size_t n)
{
    const char *env = getenv("LUX_BIN");
    if (env && *env)
        return env;
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len > 0) {
        buf[len] = '\0';
        const char *base = strrchr(buf, '/');
        base = base ? base + 1 : buf;
        if (strcmp(base, "lux") == 0 || strcmp(base, "lt-lux") == 0)
            return buf;
    }
    return "lux";
}

/* Run `lux sql --dir dir [--csv] sql`. With out, its stdout goes there
   (up to n - 1 bytes, NUL-terminated); else to ours. The exit status, or
   -1 when it could not be run. */
static int
s_sql(const char *dir, const char *sql, bool csv, char *out, size_t n)
{
    char exe[4096];
    const char *lux = s_lux(exe, sizeof exe);
    char *argv[] = {(char *)lux, "sql", "--dir", (char *)dir, csv ? "--csv" : (char *)sql,
                    csv ? (char *)sql : NULL, NULL};
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out) {
        /* O_CLOEXEC: a worker the node manager spawns meanwhile (it runs
           in this process) must not get the write end, or the read
           below never sees the end */
        if (pipe2(fds, O_CLOEXEC) < 0) {
            posix_spawn_file_actions_destroy(&fa);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        posix_spawn_file_actions_addclose(&fa, fds[1]);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid;
    int rc = strchr(lux, '/') ? posix_spawn(&pid, lux, &fa, NULL, argv, environ)
                              : posix_spawnp(&pid, lux, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out) {
        close(fds[1]);
        size_t got = 0;
        ssize_t r;
        while (rc == 0 && (r = read(fds[0], out + got, n - 1 - got)) != 0) {
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 || (got += (size_t)r) >= n - 1)
                break;
        }
        out[got] = '\0';
        close(fds[0]);
    }
    if (rc != 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* How to name lux to the user: ./lux in a build tree, else lux. */
static const char *
s_shown(void)
{
    return access("./lux", X_OK) == 0 ? "./lux" : "lux";
}

/* Print a query as the user would type it, then its answer. */
static void
s_show(FILE *f, const char *dir, const char *title, const char *sql)
{
    fprintf(f, "\n== %s\n$ %s sql --dir %s \"%s\"\n", title, s_shown(), dir, sql);
    fflush(f);
    if (s_sql(dir, sql, false, NULL, 0) != 0)
        fprintf(f, "(lux sql failed)\n");
}

int
es_lux_report(FILE *f, const char *dir, const char *job, long tasks, const char *task,
              const char *actor, int timeout_ms)
{
    char sql[1024], out[256];
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM tasks WHERE job_id = '%s' AND status != 'pending'", job);
    long have = -1;
    for (;;) {
        if (s_sql(dir, sql, true, out, sizeof out) != 0) {
            fprintf(f, "es: cannot read the log in %s with lux sql\n", dir);
            return -1;
        }
        const char *nl = strchr(out, '\n'); /* a header line, then the count */
        have = nl ? strtol(nl + 1, NULL, 10) : -1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
        if (have >= tasks || ms >= timeout_ms)
            break;
        usleep(50000);
    }
    if (have < tasks)
        fprintf(f, "\n(the log holds the outcome of %ld of the %ld tasks so far)\n", have, tasks);

    snprintf(sql, sizeof sql,
             "SELECT function, count(*) AS tasks, sum(attempts) AS runs, "
             "sum(retries) AS retries, round(sum(duration_ms) / 1e3, 2) AS task_seconds, "
             "round(avg(duration_ms), 2) AS avg_ms "
             "FROM tasks WHERE job_id = '%s' GROUP BY function ORDER BY function",
             job);
    s_show(f, dir, "tasks per function, and the time they took", sql);
    snprintf(sql, sizeof sql,
             "SELECT worker AS worker_pid, count(*) AS tasks, "
             "round(sum(duration_ms) / 1e3, 2) AS busy_seconds "
             "FROM tasks WHERE job_id = '%s' GROUP BY worker ORDER BY min(t_start)",
             job);
    s_show(f, dir, "the worker processes that ran them", sql);
    snprintf(sql, sizeof sql,
             "SELECT r.function, r.attempt, r.reason FROM retries r "
             "JOIN tasks t ON t.task_id = r.task_id WHERE t.job_id = '%s' ORDER BY r.ts LIMIT 10",
             job);
    s_show(f, dir, "retries, and why (the first 10)", sql);
    if (actor) {
        snprintf(sql, sizeof sql,
                 "SELECT method, count(*) AS calls, min(call_number) AS first, "
                 "max(call_number) AS last FROM actor_calls WHERE actor_id = '%s' "
                 "GROUP BY method ORDER BY first",
                 actor);
        s_show(f, dir, "the parameter server's calls, in the order it applied them", sql);
        snprintf(sql, sizeof sql,
                 "SELECT restart, checkpoint_call, calls_replayed FROM actor_restarts "
                 "WHERE actor_id = '%s' ORDER BY seq",
                 actor);
        s_show(f, dir, "its restarts: the checkpoint each loaded, the calls it re-applied", sql);
    }
    const char *lux = s_shown();
    fprintf(f, "\nThe log of this run is in %s. Ask it anything, e.g.:\n"
               "  %s sql --dir %s \"SELECT * FROM tasks WHERE job_id = '%s' LIMIT 5\"\n",
            dir, lux, dir, job);
    if (task)
        fprintf(f, "  %s sql --dir %s \"SELECT * FROM task_deps WHERE task_id = '%s'\"\n"
                   "      (the last rollout task read the noise table%s by ref)\n",
                lux, dir, task, actor ? "" : " and that iteration's policy");
    if (actor)
        fprintf(f, "  %s sql --dir %s \"SELECT * FROM actor_calls WHERE actor_id = '%s' "
                   "ORDER BY call_number LIMIT 10\"\n",
                lux, dir, actor);
    return 0;
}

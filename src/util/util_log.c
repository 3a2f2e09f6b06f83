/*  util_log - one logger with levels and a component prefix.

    Each line is formatted into a stack buffer and written with a single
    write(2), so lines from the threads of one process never interleave.
    Failing to log never fails the caller.
*/
#include "util_log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

int util_log_level = UTIL_LOG_WARN;
static int s_fd = 2;
static _Thread_local char s_name[48];

static const char s_letters[] = "EWIDT";

void
util_log_init(int dflt)
{
    static const char *names[] = {"error", "warn", "info", "debug", "trace"};
    const char *env = getenv("LUX_LOG");
    util_log_level = dflt;
    if (!env)
        return;
    for (int i = 0; i < 5; i++)
        if (strcasecmp(env, names[i]) == 0)
            util_log_level = i;
}

int
util_log_to_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -3; /* LUX_EIO; this file stays free of util_err */
    if (s_fd > 2)
        close(s_fd);
    s_fd = fd;
    return 0;
}

void
util_log_name(const char *fmt, ...)
{
    va_list ap;
    char thread[16];
    va_start(ap, fmt);
    vsnprintf(s_name, sizeof s_name, fmt, ap);
    va_end(ap);
    /* the thread's name too (15 characters), for top -H and /proc */
    snprintf(thread, sizeof thread, "%s", s_name);
    prctl(PR_SET_NAME, thread, 0, 0, 0);
}

void
util_log_write(int level, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    size_t n;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - n, ".%06ldZ %c %d %s%s", ts.tv_nsec / 1000,
                  s_letters[level < 0 ? 0 : level > 4 ? 4 : level], (int) getpid(),
                  s_name[0] ? s_name : "lux", ": ");
    va_start(ap, fmt);
    if (n < sizeof line)
        n += vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    if (write(s_fd, line, n) < 0) {
        /* nowhere left to report it */
    }
}

/*  util_log - one logger with levels and a component prefix.

    Lines look like
        2026-11-22T04:40:00.123456Z W replica 0.1: epoch 3 -> 4 (tail died)
    The level comes from LUX_LOG (error, warn, info, debug, trace; default
    warn for commands and tests, info for daemons which log to a file in
    their directory). The component name is per thread.
*/
#ifndef UTIL_LOG_H_INCLUDED
#define UTIL_LOG_H_INCLUDED

enum util_log_level {
    UTIL_LOG_ERROR = 0,
    UTIL_LOG_WARN,
    UTIL_LOG_INFO,
    UTIL_LOG_DEBUG,
    UTIL_LOG_TRACE
};

extern int util_log_level; /* current level; read by the macros */

/* Read LUX_LOG, falling back to dflt when unset or unknown. */
void util_log_init(int dflt);

/* Send lines to path (appended) instead of stderr; 0 or LUX_EIO. */
int util_log_to_file(const char *path);

/* Name the calling thread's component in every line it logs. */
void util_log_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void util_log_write(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define UTIL_LOG(lvl, ...)                                                    \
    do {                                                                      \
        if ((lvl) <= util_log_level)                                          \
            util_log_write((lvl), __VA_ARGS__);                               \
    } while (0)
#define log_error(...) UTIL_LOG(UTIL_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) UTIL_LOG(UTIL_LOG_WARN, __VA_ARGS__)
#define log_info(...) UTIL_LOG(UTIL_LOG_INFO, __VA_ARGS__)
#define log_debug(...) UTIL_LOG(UTIL_LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) UTIL_LOG(UTIL_LOG_TRACE, __VA_ARGS__)

#endif

/*  util_complain - a rate-limited complaint (see util_complain.h). */
#include "util_complain.h"
#include "util_log.h"
#include "util_time.h"

#include <stdarg.h>
#include <stdio.h>

void
util_complain_init(util_complain_t *c, int64_t every_ms)
{
    c->every_ms = every_ms > 0 ? every_ms : 0;
    c->last_ms = INT64_MIN;
    c->dropped = 0;
}

static bool
s_vcomplain(util_complain_t *c, int level, int64_t now_ms, const char *fmt, va_list ap)
{
    if (c->last_ms != INT64_MIN && now_ms - c->last_ms < c->every_ms) {
        c->dropped++;
        return false;
    }
    if (level <= util_log_level) {
        char line[1024];
        vsnprintf(line, sizeof line, fmt, ap);
        if (c->dropped)
            util_log_write(level, "%s (%llu more like it in the last %.1f s)", line,
                           (unsigned long long) c->dropped, (double) (now_ms - c->last_ms) / 1e3);
        else
            util_log_write(level, "%s", line);
    }
    c->last_ms = now_ms;
    c->dropped = 0;
    return true;
}

bool
util_complain(util_complain_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool logged = s_vcomplain(c, UTIL_LOG_ERROR, util_mono_ms(), fmt, ap);
    va_end(ap);
    return logged;
}

bool
util_complain_at(util_complain_t *c, int64_t now_ms, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool logged = s_vcomplain(c, UTIL_LOG_ERROR, now_ms, fmt, ap);
    va_end(ap);
    return logged;
}

bool
util_complain_lvl(util_complain_t *c, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool logged = s_vcomplain(c, level, util_mono_ms(), fmt, ap);
    va_end(ap);
    return logged;
}

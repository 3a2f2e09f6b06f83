/*  util_spin - the adaptive polling window (see util_spin.h). */
#include "util_spin.h"
#include "util_log.h"
#include "util_time.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

void
util_spin_init(util_spin_t *s, int64_t max_ns)
{
    s->max_ns = max_ns > 0 ? max_ns : 0;
    s->window_ns = 0;
}

int64_t
util_spin_max_env(const char *var, int64_t dflt_ns)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return dflt_ns;
    char *end;
    errno = 0;
    long long us = strtoll(v, &end, 10);
    if (errno || *end || us < 0 || us > 1000000) {
        log_warn("%s=%s: not a number of microseconds from 0 to 1000000; using %lld", var, v,
                 (long long) (dflt_ns / 1000));
        return dflt_ns;
    }
    return (int64_t) us * 1000;
}

bool
util_spin_again_for(int64_t window_ns, int64_t t0)
{
    if (util_mono_ns() - t0 >= window_ns)
        return false;
    sched_yield();
    return true;
}

bool
util_spin_again(const util_spin_t *s, int64_t t0)
{
    return util_spin_again_for(s->window_ns, t0);
}

int64_t
util_spin_lull_window(const util_spin_t *s, bool idle, int64_t since_ns)
{
    if (idle && since_ns >= 0 && since_ns < UTIL_SPIN_LULL_NS)
        return s->max_ns;
    return s->window_ns;
}

void
util_spin_update(util_spin_t *s, int64_t waited_ns, bool event)
{
    if (s->max_ns == 0)
        return;
    if (event && waited_ns <= s->window_ns)
        return; /* the poll caught it */
    if (!event || waited_ns > s->max_ns) {
        s->window_ns /= 2;
        if (s->window_ns < UTIL_SPIN_START_NS)
            s->window_ns = 0;
        return;
    }
    /* a message came soon after the window: a longer one would have had it */
    s->window_ns = s->window_ns ? 2 * s->window_ns : UTIL_SPIN_START_NS;
    if (s->window_ns > s->max_ns)
        s->window_ns = s->max_ns;
}

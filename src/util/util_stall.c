/*  util_stall - the time a periodic tick did not run (util_stall.h). */
#include "util_stall.h"

void
util_stall_init(util_stall_t *s, int64_t period_ms, int64_t late_ms)
{
    s->tick_ms = 0;
    s->period_ms = period_ms;
    s->late_ms = late_ms;
}

int64_t
util_stall_tick(util_stall_t *s, int64_t now_ms)
{
    int64_t away = s->tick_ms ? now_ms - s->tick_ms - s->period_ms : 0;
    s->tick_ms = now_ms;
    return away > s->late_ms ? away : 0;
}

int64_t
util_stall_credit(int64_t *since_ms, int64_t away_ms, int64_t now_ms)
{
    int64_t was = *since_ms;
    if (away_ms <= 0 || was >= now_ms)
        return 0;
    *since_ms = was + away_ms < now_ms ? was + away_ms : now_ms;
    return *since_ms - was;
}

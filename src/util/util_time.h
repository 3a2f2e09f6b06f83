/*  util_time - clocks. Wall time (ns since the Unix epoch) is what events
    carry; monotonic time is for timeouts and durations. */
#ifndef UTIL_TIME_H_INCLUDED
#define UTIL_TIME_H_INCLUDED

#include <stdint.h>
#include <time.h>

static inline int64_t
util_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t
util_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t
util_mono_ms(void)
{
    return util_mono_ns() / 1000000;
}

/* CPU time of the calling thread, ns. */
static inline int64_t
util_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif

/*  util_prof - where a spilled task's time goes (LUX_SPILL_PROFILE).

    With LUX_SPILL_PROFILE set to a directory, each process (drivers, node
    managers, workers) notes a monotonic timestamp at each hop of a task
    (util_prof_stamp) and writes them to DIR/PID.prof as lines
    "HOP TASK-ID NS" when its buffer fills and at exit; CLOCK_MONOTONIC is
    the same clock in every process of a machine, so hops of one task in
    different processes can be subtracted (tools/spill-profile.py joins
    them). Unset (the default): util_prof_stamp costs a load and a branch;
    set, a lock (threads of one process stamp at once).
*/
#ifndef UTIL_PROF_H_INCLUDED
#define UTIL_PROF_H_INCLUDED

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* 0: not looked at yet, 1: off, 2: on. Read by every thread that stamps
   (a driver's and the node manager's it hosts, the embedded default), so
   atomic; relaxed, as it orders nothing: it only says whether to take
   the records' lock (util_prof.c), which orders the rest. */
extern atomic_int util_prof_state;

bool util_prof_init(void);
void util_prof_note(const char *hop, const uint8_t id[16]);

/* Whether stamps are taken (after the first stamp looked). */
static inline bool
util_prof_on(void)
{
    return atomic_load_explicit(&util_prof_state, memory_order_relaxed) == 2;
}

/* Note that the task with this 16-byte ID passed hop (a short literal). */
static inline void
util_prof_stamp(const char *hop, const uint8_t id[16])
{
    int st = atomic_load_explicit(&util_prof_state, memory_order_relaxed);
    if (st == 1 || (st == 0 && !util_prof_init()))
        return;
    util_prof_note(hop, id);
}

#endif

/*  util_spin - how long a loop polls for its next message before it
    sleeps: an adaptive window, after KVM's halt polling (halt_poll_ns in
    Linux's virt/kvm/kvm_main.c, which polls a halted virtual CPU's
    wake-up before it gives the physical CPU away).

    WHY. A thread that sleeps until a message comes pays for the wake-up:
    the kernel must find it a CPU, and when that CPU is idle, bring it out
    of its idle state. On the 2-vCPU VM Lux is measured on, a CPU that
    sleeps halts at once (its guest halt polling is off), and waking it
    costs about 25 us on each side, against 4 us to switch threads on one
    CPU (a unix-socket round trip between two threads: 53 us across CPUs,
    8 us on one). A loop that expects its next message within tens of
    microseconds does better to poll for it: its CPU stays busy, the
    sender's message costs no wake-up, and nothing halts. A loop that
    waits milliseconds would only burn a CPU polling.

    THE WINDOW. Each wait first polls for up to `window` ns, then sleeps.
    After the wait, knowing how long it took in all (`waited`) and whether
    a message ended it:
      - it ended within the window: the window stays;
      - a message ended it after the window, but within max: the window
        doubles (from UTIL_SPIN_START_NS), since a longer poll would have
        caught it;
      - it took longer than max, or ended by its timeout: the window
        halves, and below UTIL_SPIN_START_NS it is 0.
    So a stream of quick replies (a synchronous caller, an actor's calls)
    brings the window to max in a few waits, and work that keeps the loop
    waiting for milliseconds (long tasks) brings it to 0: no polling.

    A LULL. Where the loop knows that none of its own work is running
    (a node manager with no task or call out on its workers) and that
    some just ended (within UTIL_SPIN_LULL_NS), the callers who got those
    results are likely to send the next within tens of microseconds (a
    driver's update between two rounds of tasks), and a poll then takes
    the CPU from no work of the loop's: such a wait polls for the longest
    window, whatever the adaptive one says, and when that is longer than
    the adaptive one, does not change it (it says how the loop's other
    waits end); a lull never narrows the window. Polling while work runs is what
    the adaptive window guards against: on the VM Lux is measured on, a
    polling CPU slows a computing one beside it (doc/DESIGN.md 12).

    The caller polls (a non-blocking check of its sockets, then
    util_spin_again, which yields between checks so that a thread that
    shares its CPU, the one about to answer, runs first), then sleeps for
    what is left. */
#ifndef UTIL_SPIN_H_INCLUDED
#define UTIL_SPIN_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>

#define UTIL_SPIN_START_NS 10000    /* the first window after a quick wait */
#define UTIL_SPIN_DEFAULT_NS 200000 /* the longest window by default (KVM's default too) */
#define UTIL_SPIN_LULL_NS 1000000   /* how long after work ended a lull is fresh */

typedef struct {
    int64_t max_ns;    /* the longest window; 0: never poll */
    int64_t window_ns; /* how long the next wait polls before it sleeps */
} util_spin_t;

/* A window of at most max_ns; 0 turns polling off. */
void util_spin_init(util_spin_t *s, int64_t max_ns);

/* The longest window set by the environment variable `var` (microseconds;
   0 turns polling off), or dflt_ns when it is not set or not a number. */
int64_t util_spin_max_env(const char *var, int64_t dflt_ns);

/* In a poll that began at t0 (util_mono_ns) and has found nothing yet:
   false once the window is spent (sleep now); else the CPU is yielded
   (sched_yield, so that a thread sharing it, most likely the one about
   to answer, runs first) and true: poll again. */
bool util_spin_again(const util_spin_t *s, int64_t t0);
/* The same for a window given (util_spin_lull_window's). */
bool util_spin_again_for(int64_t window_ns, int64_t t0);

/* The window of a wait that begins since_ns after the loop's last work
   ended, none of it running now (idle): the longest while that lull is
   fresh (see A LULL above), else the adaptive window. A wait that polled
   for a window other than the adaptive one does not update it. */
int64_t util_spin_lull_window(const util_spin_t *s, bool idle, int64_t since_ns);

/* A wait took waited_ns (polling and sleeping) and was ended by a message
   (event) or by its timeout (!event): adapt the window. */
void util_spin_update(util_spin_t *s, int64_t waited_ns, bool event);

static inline int64_t
util_spin_window(const util_spin_t *s)
{
    return s->window_ns;
}

#endif

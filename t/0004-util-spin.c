/* 0004-util-spin: the polling window grows while replies come soon after
   it, stays while they come within it, and falls to nothing when waits
   are long or end by their timeout (src/util/util_spin.h); a fresh lull
   polls for the longest window; LUX_SPIN_US sets its ceiling. */
#include "tap.h"
#include "util/util_log.h"
#include "util/util_spin.h"
#include "util/util_time.h"

#include <stdlib.h>

#define US 1000

int
main(void)
{
    util_spin_t s;
    util_log_level = tap_verbose() ? UTIL_LOG_DEBUG : UTIL_LOG_ERROR; /* the warnings below */
    util_spin_init(&s, 200 * US);
    is_int(util_spin_window(&s), 0, "a new window is closed: the first wait sleeps");

    util_spin_update(&s, 60 * US, true);
    is_int(util_spin_window(&s), UTIL_SPIN_START_NS, "a reply 60 us after the wait began opens it");
    util_spin_update(&s, 60 * US, true);
    is_int(util_spin_window(&s), 2 * UTIL_SPIN_START_NS, "another, after the window: it doubles");
    for (int i = 0; i < 10; i++)
        util_spin_update(&s, 190 * US, true);
    is_int(util_spin_window(&s), 200 * US, "it grows to the ceiling and no further");

    util_spin_update(&s, 120 * US, true);
    is_int(util_spin_window(&s), 200 * US, "a reply within the window leaves it as it is");

    util_spin_update(&s, 5000 * US, true);
    is_int(util_spin_window(&s), 100 * US, "a wait longer than the ceiling halves it");
    util_spin_update(&s, 80 * US, false);
    is_int(util_spin_window(&s), 50 * US, "so does a wait that ended by its timeout");
    util_spin_update(&s, 5000 * US, true);
    util_spin_update(&s, 5000 * US, true);
    is_int(util_spin_window(&s), 12500, "halving goes on while waits stay long");
    util_spin_update(&s, 5000 * US, true);
    is_int(util_spin_window(&s), 0, "below the first window it closes");
    util_spin_update(&s, 5000 * US, true);
    is_int(util_spin_window(&s), 0, "and stays closed while waits are long");

    /* polling's end: at once when the window is spent, later while it is not */
    s.window_ns = 0;
    ok(!util_spin_again(&s, util_mono_ns()), "a closed window never polls again");
    s.window_ns = 1000000 * US; /* a second: no stall of the test gets past it */
    ok(util_spin_again(&s, util_mono_ns()), "an open one polls again at its start");
    ok(!util_spin_again(&s, util_mono_ns() - 2000000 * US), "and not once it is spent");

    /* a lull: nothing of the loop's running, and something just ended */
    util_spin_init(&s, 200 * US);
    is_int(util_spin_lull_window(&s, true, 30 * US), 200 * US,
           "a fresh lull polls for the longest window, though the adaptive one is closed");
    is_int(util_spin_window(&s), 0, "and leaves the adaptive one as it was");
    is_int(util_spin_lull_window(&s, true, UTIL_SPIN_LULL_NS), 0,
           "a lull as old as UTIL_SPIN_LULL_NS is not fresh: the adaptive window");
    is_int(util_spin_lull_window(&s, false, 30 * US), 0,
           "while work runs, the adaptive window, however recent the last end");
    is_int(util_spin_lull_window(&s, true, -5 * US), 0, "an end in the future counts for nothing");
    s.window_ns = 40 * US;
    is_int(util_spin_lull_window(&s, false, 30 * US), 40 * US, "an open adaptive window as it is");
    ok(!util_spin_again_for(0, util_mono_ns()), "a window of 0 never polls");
    ok(util_spin_again_for(1000000 * US, util_mono_ns()), "a given window polls at its start");
    ok(!util_spin_again_for(200 * US, util_mono_ns() - 2000000 * US), "and not once it is spent");

    util_spin_init(&s, 0);
    is_int(util_spin_lull_window(&s, true, 30 * US), 0, "with polling off, not in a lull either");
    util_spin_update(&s, 50 * US, true);
    util_spin_update(&s, 50 * US, true);
    is_int(util_spin_window(&s), 0, "a ceiling of 0 never opens it");

    unsetenv("T_SPIN");
    is_int(util_spin_max_env("T_SPIN", 200 * US), 200 * US, "unset: the default ceiling");
    setenv("T_SPIN", "0", 1);
    is_int(util_spin_max_env("T_SPIN", 200 * US), 0, "0 turns polling off");
    setenv("T_SPIN", "50", 1);
    is_int(util_spin_max_env("T_SPIN", 200 * US), 50 * US, "a number of microseconds");
    setenv("T_SPIN", "-3", 1);
    is_int(util_spin_max_env("T_SPIN", 200 * US), 200 * US, "a negative number: the default");
    setenv("T_SPIN", "50us", 1);
    is_int(util_spin_max_env("T_SPIN", 200 * US), 200 * US, "not a number: the default");
    setenv("T_SPIN", "99999999", 1);
    is_int(util_spin_max_env("T_SPIN", 200 * US), 200 * US, "more than a second: the default");
    return done_testing();
}

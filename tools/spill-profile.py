#!/usr/bin/env python3
"""spill-profile.py - where a spilled task's time goes, hop by hop (issue 28).

Run a benchmark with LUX_SPILL_PROFILE=DIR (an empty directory): every
process of the run (the driver, both node managers, the workers) writes
DIR/PID.prof, lines "HOP TASK-ID MONOTONIC-NS" (src/util/util_prof.h).
This joins them by task and prints, for the last N tasks (default 400,
spillback_latency_us's one-at-a-time runs) that went through every hop of
a spilled task, the median of each stage and of the whole, in us.

    mkdir /tmp/p && LUX_SPILL_PROFILE=/tmp/p ./lux bench spillback_latency_us
    tools/spill-profile.py /tmp/p [N]

The hops, in order (a task that skipped one, e.g. kept on the head, is
left out):
    d_call     the driver's lux_call (the SUBMIT goes with its lux_get)
    h_submit   the head's node manager takes the task
    h_placed   the global scheduler placed it and it waits to be sent
    h_send     the head's NODE_TASK to node B goes
    b_recv     node B takes it
    b_dispatch B hands it to a worker (in a TASKS batch)
    w_start    the worker starts it ...
    w_end      ... and it returns
    b_result   B has the worker's RESULTS
    b_reply    B's NODE_TASK_DONE goes back
    h_done     the head takes it
    h_ready    its output is ready on the head (waiters answered next)
    d_got      the driver's lux_get returns it
"""
import glob
import os
import statistics
import sys

HOPS = ["d_call", "h_submit", "h_placed", "h_send", "b_recv", "b_dispatch", "w_start",
        "w_end", "b_result", "b_reply", "h_done", "h_ready", "d_got"]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: spill-profile.py DIR [N]")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    tasks = {}
    for path in glob.glob(os.path.join(sys.argv[1], "*.prof")):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) != 3 or p[0] not in HOPS:
                    continue
                t = tasks.setdefault(p[1], {})
                t.setdefault(p[0], int(p[2]))  # the first time it passed
    full = [t for t in tasks.values() if all(h in t for h in HOPS)]
    full.sort(key=lambda t: t["d_call"])
    full = full[-n:]
    if not full:
        sys.exit("spill-profile.py: no task went through every hop")
    print("%d spilled tasks, median us per stage:" % len(full))
    for a, b in zip(HOPS, HOPS[1:]):
        d = [(t[b] - t[a]) / 1e3 for t in full]
        print("  %-10s -> %-10s %8.1f   (p10 %.1f, p90 %.1f)" % (
            a, b, statistics.median(d), sorted(d)[len(d) // 10], sorted(d)[len(d) * 9 // 10]))
    d = [(t["d_got"] - t["d_call"]) / 1e3 for t in full]
    print("  %-24s %8.1f" % ("d_call -> d_got (all)", statistics.median(d)))


main()

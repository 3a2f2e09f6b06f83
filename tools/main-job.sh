#!/bin/sh
# main-job.sh - the main job of the quick start, on a local head started
# for it in .lux-quickstart/: a head with 4 shards, each replicated 3 times,
# a job's events appended through the chains (examples/hello_log, until
# the runtime runs real tasks), and what SQL says about them. The cluster is
# stopped at the end; its log stays for your own queries.
set -e
cd "$(dirname "$0")/.."
D=${LUX_QUICKSTART_DIR:-$PWD/.lux-quickstart}
rm -rf "$D"
./lux start --head --dir "$D" --shards 4 --replicas 3
trap './lux stop --dir "$D" >/dev/null 2>&1 || true' EXIT
obj=$(examples/hello_log --dir "$D" --iterations 5 --width 16)
echo
./lux status --dir "$D"
echo
echo "== tasks per function (lux sql --dir $D \"...\")"
./lux sql --dir "$D" "SELECT function, count(*) AS tasks, round(avg(duration_ms), 1) AS avg_ms,
    sum(retries) AS retries FROM tasks GROUP BY function"
echo
echo "== which tasks were retried, and why"
./lux sql --dir "$D" "SELECT task_id, function, attempt, reason FROM retries"
echo
echo "== the lineage of the final weights ($obj)"
./lux sql --dir "$D" "SELECT depth, function, count(*) AS tasks FROM lineage('$obj')
    GROUP BY depth, function ORDER BY depth LIMIT 8"
echo
./lux audit --dir "$D" | tail -1
./lux stop --dir "$D"
trap - EXIT
echo
echo "The log is in $D (one SQLite file per replica). Query it any time:"
echo "  ./lux sql --dir $D \"SELECT * FROM tasks LIMIT 5\""

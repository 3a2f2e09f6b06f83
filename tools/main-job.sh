#!/bin/sh
# main-job.sh - the main job of the quick start: Evolution Strategies
# (examples/es/es.so) trains a policy for CartPole-v1 until it is solved (a
# mean return of 475 over 100 episodes), on the embedded default that `lux
# run` starts for it: log shards, a node manager with its shared-memory
# object store, one worker process per core. Every rollout is a task in the
# log. At the end es.so prints a report drawn from the log with `lux sql`;
# then the log's hash chains are audited. The log stays in
# .lux-quickstart/runs/ for your own queries.
#
#   tools/main-job.sh [ES OPTIONS]      e.g. --seed 2, --kill-workers, --json
set -e
cd "$(dirname "$0")/.."
D=${LUX_QUICKSTART_DIR:-$PWD/.lux-quickstart}
mkdir -p "$D/runs"
status=0
./lux run --dir "$D/runs" examples/es/es.so --env cartpole --seed 1 "$@" || status=$?
# the run directory lux run just made: the newest one
run=$(ls -td "$D"/runs/*/ 2>/dev/null | head -n 1)
if [ -n "$run" ] && [ "$status" -le 1 ]; then
    echo
    echo "== every replica's hash chain (./lux audit --dir ${run%/})"
    ./lux audit --dir "${run%/}" | tail -n 1
fi
exit "$status"

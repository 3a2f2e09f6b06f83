#!/bin/sh
# 6115-cluster-spill-profile: LUX_SPILL_PROFILE notes every hop of a
# spilled task (src/util/util_prof.h) in every process of its path, and
# tools/spill-profile.py joins them. A head and node 1 (which alone has
# far) started with LUX_SPILL_PROFILE=DIR; a driver on the head runs 5
# tasks needing far (spilled to node 1) and 2 needing nothing (kept on the
# head); once the cluster has stopped (the processes write their notes as
# they exit), the script finds the 5 spilled tasks, and only them, through
# all 13 hops, in order (each stage's median at least 0).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
SMOD=$(cluster_mod schedmod)
if ! command -v python3 >/dev/null 2>&1; then
    skip_all "no python3 for tools/spill-profile.py"
fi
mkdir "$TAP_TMP/prof"
export LUX_SPILL_PROFILE="$TAP_TMP/prof"

cluster_up CPU=1 CPU=1,far=1

out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 5 far=1 2>&1)
is "$(echo "$out" | grep -c "^$CL_DIR/n1\$")" 5 "5 tasks needing far ran on node 1" || diag "$out"
out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 2 - 2>&1)
is "$(echo "$out" | grep -c "^$CL_DIR/head\$")" 2 "2 tasks needing nothing ran on the head" ||
    diag "$out"
cluster_down

n=$(ls "$TAP_TMP/prof" | grep -c '\.prof$')
ok $([ "$n" -ge 4 ]; echo $?) "driver, both node managers and a worker wrote notes ($n files)"
out=$(python3 "${LUX_SRCDIR:-.}/tools/spill-profile.py" "$TAP_TMP/prof" 100 2>&1)
like "$out" "5 spilled tasks, median" "the script found the 5 spilled tasks through every hop" ||
    diag "$out"
stages=$(echo "$out" | grep -c -- '->')
is "$stages" 13 "12 stages and the whole" || diag "$out"
neg=$(echo "$out" | grep -- '->' | awk '$4 + 0 < 0 || $5 + 0 < 0' | wc -l)
is "$neg" 0 "no stage's median is negative (the hops in order, one clock)" || diag "$out"

# unset, nothing is written
rm -f "$TAP_TMP/prof"/*
unset LUX_SPILL_PROFILE
rm -rf "$CL_DIR/head" "$CL_DIR/n1"
CL_PORT=$((CL_PORT + 5))
cluster_up CPU=1 CPU=1,far=1
out=$("$LUX" run --address "$CL_DIR/head" "$SMOD" where 1 far=1 2>&1)
is "$out" "$CL_DIR/n1" "without LUX_SPILL_PROFILE a spilled task runs ..." || diag "$out"
cluster_down
is "$(ls "$TAP_TMP/prof" | wc -l)" 0 "... and no process writes notes"
done_testing

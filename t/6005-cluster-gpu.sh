#!/bin/sh
# 6005-cluster-gpu: a node declares the GPUs it finds as its GPU resource
# (exec_gpu.c), here through LUX_FAKE_GPUS, the test's stand-in for
# /proc/driver/nvidia/gpus and nvidia-smi: two fake GPUs give GPU=2 in
# node_joined and `lux status` (their indexes in --json), "none" gives no
# GPU resource, and --resources GPU=N overrides what was found. (Handing a
# task the GPUs it holds, CUDA_VISIBLE_DEVICES and lux_gpu_ids: t/6050.)
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
trap 'cluster_down; tap_cleanup' EXIT

LUX_FAKE_GPUS=none cluster_head --workers 1 --store-mb 16
ok $CL_RC "the head starts (no GPUs)"
LUX_FAKE_GPUS=0,1 cluster_join 1 --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "node 1 joins with two fake GPUs"
LUX_FAKE_GPUS=none cluster_join 2 --workers 1 --store-mb 16 --resources CPU=1
ok $CL_RC "node 2 joins with none"
LUX_FAKE_GPUS=0,1,2,3 cluster_join 3 --workers 1 --store-mb 16 --resources CPU=1,GPU=1
ok $CL_RC "node 3 joins with four, and says GPU=1"
n1=$(cat "$TAP_TMP/n1/run/node.joined")
n2=$(cat "$TAP_TMP/n2/run/node.joined")
n3=$(cat "$TAP_TMP/n3/run/node.joined")
cluster_wait_sql "SELECT node_id, resources FROM nodes ORDER BY address" \
    "$n1,\"CPU=1,GPU=2\"" 30
ok $? "node_joined of node 1: GPU=2"
like "$CL_SQL" "$n2,CPU=1
" "node 2: no GPU resource"
like "$CL_SQL" "$n3,\"CPU=1,GPU=1\"" "node 3: GPU=1, as it was told"
js=$("$LUX" status --dir "$TAP_TMP/head" --json)
like "$js" "\"gpus\": \"0,1\", \"age_ms\"" "lux status --json: node 1's GPU indexes"

done_testing

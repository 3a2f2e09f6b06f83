#!/bin/sh
# 3169-ractor-ckpt-spilled: an actor placed on another node restarts from
# its checkpoint when that node dies, even when its home holds that
# checkpoint on disk (spilled, rule 10 of DESIGN 7), not in its store.
# As t/6073 (a head without disk, two nodes with it, dead after 1.5 s; a
# counter with checkpoint_every 3 on a node with disk, add(1) ... add(5),
# kill -9 of that node, add(6) ... add(10)), but the driver, on the head,
# puts 40 MiB (4 MiB each, held) into the head's 32 MiB store after call 5,
# so the checkpoint of call 3 that the head keeps is spilled before the
# kill; the counter's checkpoints carry 256 KiB (held in the store, not
# inline). The counts must be those of the run without the kill. Before,
# the home sent the creation without the checkpoint (only one in the
# store went), the new node warned "its checkpoint of call 3 did not come
# with it: it starts from its constructor", and the calls after the kill
# were never answered (checks 9-12 and 14 failed).
. "${LUX_SRCDIR:-.}/t/lib/ckpt.sh"

ckpt_start 40
# the checkpoint's object, from its record ("object HEX"): its spill file on the head
cluster_wait_sql "SELECT substr(info, 8) FROM event WHERE kind = 13 AND lower(hex(actor)) = '$aid'" \
    "" 30
obj=$(echo "$CL_SQL" | tail -n 1)
cluster_wait_file "$CL_DIR/head/spill/$obj.lz4" 60
ok $? "the head holds the checkpoint spilled ($obj)" ||
    diag "$(ls "$CL_DIR/head/spill" 2>&1)"
ckpt_kill "1 3 6 10 15 21 28 36 45 55 "
grep -q 'did not come with it' "$CL_DIR/n$other/log/node.log"
ok $([ $? -ne 0 ]; echo $?) "node $other does not say its checkpoint did not come" ||
    diag "$(grep 'did not come' "$CL_DIR/n$other/log/node.log")"

done_testing

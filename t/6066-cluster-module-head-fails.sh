#!/bin/sh
# 6066-cluster-module-head-fails: the last resort of a module fetch
# (exec_rmodule.c) has an end. Node 1 (disk=1) runs every task and holds
# no module; node 2, the drivers' node, answers asks for modules with one
# byte changed (test hook LUX_TEST_MODULE_BAD=1), so node 1 asks the head.
#  - The head answers with wrong bytes too (the same hook): node 1 refuses
#    them naming the hash, gives up on the module, and the task fails with
#    an error naming the hash and why (no wait for the fetch's 20 s).
#  - The head never answers (test hook LUX_TEST_MODULE_GATE on the head:
#    it holds the ask): node 1 gives up after 20 s naming the head, and
#    the task fails naming the hash and why, within the driver's 120 s get
#    (before: "module HASH: ...HASH.so: No such file or directory").
# Each case uses a module of its own hash (schedmod.so with one byte
# appended: a hash given up on is remembered for 20 s).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
nlog() { cat "$CL_DIR/$1"/log/*.log 2>/dev/null; }
gateh=$TAP_TMP/gateh
: >"$gateh"
for k in 1 2; do
    cp "$(cluster_mod schedmod)" "$TAP_TMP/mod$k.so"
    printf '%s' "$k" >>"$TAP_TMP/mod$k.so"
done

LUX_TEST_MODULE_BAD=1 LUX_TEST_MODULE_GATE=$gateh \
    cluster_head --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "the head starts, answering asks for modules with a byte changed" || diag "$CL_OUT"
cluster_join 1 --workers 1 --store-mb 32 --resources CPU=1,disk=1
ok $CL_RC "node 1 joins, with disk=1" || diag "$CL_OUT"
LUX_TEST_MODULE_BAD=1 cluster_join 2 --workers 1 --store-mb 32 --resources CPU=1
ok $CL_RC "node 2 joins, answering with a byte changed" || diag "$CL_OUT"

# wrong bytes from the head
out=$("$LUX" run --address "$CL_DIR/n2" "$TAP_TMP/mod1.so" where 1 disk=1 2>&1)
rc=$?
set -- "$CL_DIR"/n2/modules/*.so
h1=$(basename "$1" .so)
ok $([ $rc -ne 0 ]; echo $?) "a task whose module neither node 2 nor the head gives right fails" ||
    diag "$out"
like "$out" "$h1" "... its error names the module's hash" || diag "$out"
like "$out" "the bytes the head sent do not match the hash" "... and why it is not there" ||
    diag "$out"
like "$(nlog n1)" "module $h1: the bytes the head sent do not match the hash: refused: its \
tasks fail" "node 1 refused the head's bytes, naming the hash"
ok $([ ! -e "$CL_DIR/n1/modules/$h1.so" ]; echo $?) "... and keeps no module of that hash"

# no answer from the head
rm -f "$gateh"
"$LUX" run --address "$CL_DIR/n2" "$TAP_TMP/mod2.so" where 1 disk=1 >"$TAP_TMP/d2" 2>&1 &
d2=$!
CL_DRIVERS="$CL_DRIVERS $d2"
wait "$d2"
rc=$?
h2=
for f in "$CL_DIR"/n2/modules/*.so; do
    [ "$(basename "$f" .so)" = "$h1" ] || h2=$(basename "$f" .so)
done
ok $([ $rc -ne 0 ] && [ -n "$h2" ]; echo $?) "a task whose module the head never gives fails" ||
    diag "$(cat "$TAP_TMP/d2")"
like "$(cat "$TAP_TMP/d2")" "$h2" "... its error names the module's hash"
like "$(cat "$TAP_TMP/d2")" "neither the node that sent its task nor the head" \
    "... and why it is not there: nobody gave it"
like "$(nlog head)" "LUX_TEST_MODULE_GATE: an ask for a module held" "the head held the ask"
like "$(nlog n1)" "module $h2: neither the node that sent its task nor the head (tcp://" \
    "node 1 gave up naming the head"
like "$(nlog n1)" "in 20 s) gave it: its tasks fail" "... after its 20 s"

done_testing

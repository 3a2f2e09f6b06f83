#!/bin/sh
# 6122-cluster-lib-wait: the cluster harness's waits on `lux sql`
# (t/lib/cluster.sh) ask at least once, whatever their time. Before, they
# asked only while the second (date +%s) was below the end: with SECS 1
# the second could tick over before the first ask, and a wait whose
# answer was there failed having asked nothing (t/6119 check 18 did, its
# CL_SQL empty). SECS 0 is that case every time. `lux sql` here is a
# stand-in that answers one value (LUX_BIN), so no cluster runs.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
trap 'tap_cleanup' EXIT
cat >"$TAP_TMP/lux" <<'SH'
#!/bin/sh
echo count
echo 0
SH
chmod +x "$TAP_TMP/lux"
LUX_BIN="$TAP_TMP/lux"
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"

cluster_wait_value "SELECT count(*) FROM nodes" 0 0
ok $? "cluster_wait_value with SECS 0 asks once and takes the answer"
is "$CL_SQL" "count
0" "... which it keeps in CL_SQL"
cluster_wait_sql "SELECT count(*) FROM nodes" 0 0
ok $? "cluster_wait_sql with SECS 0 asks once and takes the answer"
start=$(date +%s)
cluster_wait_value "SELECT count(*) FROM nodes" 1 1
ok $([ $? -eq 1 ]; echo $?) "a value that never comes: 1"
ok $([ $(($(date +%s) - start)) -le 3 ]; echo $?) "... once SECS are over"

done_testing

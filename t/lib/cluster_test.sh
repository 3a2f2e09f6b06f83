# cluster_test.sh - the opening of a multi-node test, written once: it
# sources tap.sh, makes the test's scratch directory, sources cluster.sh,
# sets LUX_FAKE_GPUS=none (no test depends on this machine's GPUs), and
# at exit runs $CL_ON_EXIT (a test's own clean-up, e.g. releasing the
# drivers it holds), kills -9 the drivers whose pids the test put in
# $CL_DRIVERS, stops the cluster and removes the directory.
#
#   . "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
#   MOD=$(cluster_mod schedmod)        # t/lib/.libs/schedmod.so
#   cluster_hold MODE BYTES I NAME     # an object made and held on node I
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
. "${LUX_SRCDIR:-.}/t/lib/cluster.sh"
CL_DRIVERS=
CL_ON_EXIT=:
trap 'eval "$CL_ON_EXIT"; for _p in $CL_DRIVERS; do kill -9 "$_p" 2>/dev/null; done
      cluster_down; tap_cleanup' EXIT
export LUX_FAKE_GPUS=none

cluster_mod() { # cluster_mod NAME: the path of t/lib's module NAME
    echo "${LUX_BUILDDIR:-.}/t/lib/.libs/$1.so"
}

# cluster_hold MODE BYTES I NAME: a driver on node I runs $MOD MODE BYTES
# $TAP_TMP/NAME in the background (its pid in CL_DRIVERS, its output in
# $TAP_TMP/NAME.out): schedmod's hold/make write the ref of the object
# they made and hold to that file. 0 with the ref's hex in $REF once
# written, 1 when nothing came in 120 s.
cluster_hold() {
    "$LUX" run --address "$CL_DIR/n$3" "$MOD" "$1" "$2" "$TAP_TMP/$4" \
        >"$TAP_TMP/$4.out" 2>&1 &
    CL_DRIVERS="$CL_DRIVERS $!"
    REF=
    _i=0
    while [ $_i -lt 1200 ] && [ ! -s "$TAP_TMP/$4" ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    REF=$(cat "$TAP_TMP/$4" 2>/dev/null)
    [ -n "$REF" ]
}

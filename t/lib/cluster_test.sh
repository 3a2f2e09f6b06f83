# cluster_test.sh - the opening of a multi-node test, written once: it
# sources tap.sh, makes the test's scratch directory, sources cluster.sh,
# sets LUX_FAKE_GPUS=none (no test depends on this machine's GPUs), and
# at exit runs $CL_ON_EXIT (a test's own clean-up, e.g. releasing the
# drivers it holds), kills -9 the drivers whose pids the test put in
# $CL_DRIVERS, stops the cluster and removes the directory.
#
#   . "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
#   MOD=$(cluster_mod schedmod)        # t/lib/.libs/schedmod.so
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

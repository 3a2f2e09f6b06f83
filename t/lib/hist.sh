# hist.sh - how the history tests (lux sql, pull, compact, replay) begin.
# Source it after tap.sh; it sets LUX (the lux under test), B (the build
# tree) and HELLO (examples/hello_log). Then one of:
#   hist_cluster   a scratch directory in tmp and D=$tmp/c for a cluster;
#                  at exit the cluster in D is stopped and tmp removed (a
#                  test that starts more sets its own trap after it)
#   hist_replay    a scratch directory in tmp, TMPDIR=$tmp exported (the
#                  replays' clusters go there); at exit tmp is removed
# and match GOT REGEX DESCRIPTION: ok when a line of GOT matches the
# extended REGEX, else both said; wait_file FILE: until FILE exists (at
# most 120 s; 1 if it never came).
LUX=${LUX_BIN:-./lux}
B=${LUX_BUILDDIR:-.}
HELLO=$B/examples/hello_log

hist_cluster() {
    tap_tmpdir
    tmp=$TAP_TMP
    D=$tmp/c
    trap '"$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT
}

hist_replay() {
    tap_tmpdir
    tmp=$TAP_TMP
    trap 'tap_cleanup' EXIT
    TMPDIR=$tmp
    export TMPDIR
}

match() { # match GOT REGEX DESCRIPTION
    printf '%s\n' "$1" | grep -Eq -- "$2"
    ok $? "$3"
    printf '%s\n' "$1" | grep -Eq -- "$2" || printf '#   got: %s\n#   expected to match: %s\n' "$1" "$2"
}

wait_file() { # wait_file FILE
    _w=0
    while [ ! -e "$1" ]; do
        _w=$((_w + 1))
        [ $_w -gt 1200 ] && return 1
        sleep 0.1
    done
}

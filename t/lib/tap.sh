# tap.sh - TAP for shell tests (t/*.sh). Source it; call ok/is/like (and
# skip for a check that cannot run here); end with done_testing. tap_tmpdir
# makes a private scratch directory, removed by tap_cleanup unless a check
# failed or LUX_KEEP is set; its path is in TAP_TMP after tap_tmpdir. run
# runs a command and keeps its status and output for the checks.
_tap_n=0
_tap_failed=0
_tap_tmp=

# ok, is and like return 1 when the check fails, so that "ok ... || diag
# ..." shows its diagnostic (they returned 0 either way, and the 189
# "|| diag" of the shell tests printed nothing on a failure).
ok() { # ok STATUS DESCRIPTION: STATUS 0 passes
    _tap_n=$((_tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $_tap_n - $2"
    else
        echo "not ok $_tap_n - $2"
        _tap_failed=$((_tap_failed + 1))
        return 1
    fi
}

is() { # is GOT WANT DESCRIPTION
    if [ "$1" = "$2" ]; then ok 0 "$3"; else
        ok 1 "$3"
        printf '#   got: %s\n#   expected: %s\n' "$1" "$2"
        return 1
    fi
}

like() { # like GOT PATTERN DESCRIPTION: PATTERN is a fixed string
    case "$1" in
    *"$2"*) ok 0 "$3" ;;
    *)
        ok 1 "$3"
        printf '#   got: %s\n#   expected to contain: %s\n' "$1" "$2"
        return 1
        ;;
    esac
}

skip() { # skip WHY: a check that cannot run here, counted as passed
    _tap_n=$((_tap_n + 1))
    echo "ok $_tap_n # SKIP $1"
}

skip_all() { echo "1..0 # SKIP $1"; exit 0; }

tap_tmpdir() { # sets TAP_TMP (call it directly, not in $(...): a subshell
    # would make the directory without the parent knowing to remove it)
    if [ -z "$_tap_tmp" ]; then
        _tap_tmp=$(mktemp -d "${TMPDIR:-/tmp}/lux-test-XXXXXX")
    fi
    TAP_TMP=$_tap_tmp
}

tap_small_disk() { # tap_small_disk SIZE: sets tmp=$TAP_TMP, makes $tmp/small
    # and skips the whole test unless a tmpfs of SIZE (6m, 32m...) can be
    # mounted there in a private mount namespace (root, or the right to
    # unshare and mount); the test mounts it itself inside its own
    # `unshare -m`, where everything that needs the small disk runs
    tap_tmpdir
    tmp=$TAP_TMP
    trap 'tap_cleanup' EXIT
    mkdir -p "$tmp/small"
    if ! unshare -m sh -c "mount -t tmpfs -o size=$1 tmpfs '$tmp/small'" >/dev/null 2>&1; then
        skip_all "cannot mount a small tmpfs in a private mount namespace (needs root)"
    fi
}

run() { # run CMD...: its status in $rc, its stdout in $out and stderr in
    # $err (kept in $TAP_TMP/out and $TAP_TMP/err); after tap_tmpdir
    "$@" >"$TAP_TMP/out" 2>"$TAP_TMP/err"
    rc=$?
    out=$(cat "$TAP_TMP/out")
    err=$(cat "$TAP_TMP/err")
}

tap_cleanup() {
    if [ -n "$_tap_tmp" ] && [ "$_tap_failed" -eq 0 ] && [ -z "$LUX_KEEP" ]; then
        rm -rf "$_tap_tmp"
    elif [ -n "$_tap_tmp" ]; then
        echo "# kept $_tap_tmp" >&2
    fi
}

done_testing() {
    echo "1..$_tap_n"
    [ "$_tap_failed" -eq 0 ]
    exit $?
}

diag() { # diag TEXT...: a comment line in the TAP output, for each line of TEXT
    printf '%s\n' "$*" | sed 's/^/# /'
}

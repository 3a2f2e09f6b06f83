# es.sh - what the ES tests (t/7101, t/7102) share: the programs, a run of
# es.so with its JSON line, a field of it, a hash check, a one-value query,
# a run with workers killed, and es_local's Pendulum reference.
# Sourced after t/lib/tap.sh.

LUX=${LUX_BIN:-./lux}
B=${LUX_BUILDDIR:-.}
ES=$B/examples/es/es.so
LOCAL=$B/examples/es/es_local
PROCS=$B/examples/es/es_procs
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

field() { # field NAME JSON
    printf '%s\n' "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

es() { # es ARGS...: lux run es.so; the JSON line in $json, the status in $rc
    timeout -s KILL 120 "$LUX" run --dir "$tmp/runs" "$ES" --json --no-report "$@" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    json=$(tail -n 1 "$tmp/out")
    case "$json" in
    "{"*) ;;
    *) echo "# lux run es.so $*: exit status $rc, no JSON; its last words:"
       tail -n 5 "$tmp/err" | sed 's/^/#   /' ;;
    esac
}

is_hash() { # is_hash VALUE DESCRIPTION: 16 hex digits (an empty hash must not compare equal)
    case "$1" in
    [0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]) ok 0 "$2" ;;
    *) ok 1 "$2"; echo "#   got: '$1'" ;;
    esac
}

sql() { # sql DIR QUERY: one value
    "$LUX" sql --dir "$1" --csv "$2" | sed -n 2p
}

es_killed() { # es_killed WANT ARGS...: es ARGS (with --kill-workers) until a
    # task was retried (3 tries), or the weights differ from WANT; the count
    # of retried tasks in $retries
    want=$1
    shift
    retries=0
    for try in 1 2 3; do
        es "$@"
        [ "$(field weights_hash "$json")" = "$want" ] || break
        retries=$(sql "$(field log "$json")" \
            "SELECT count(*) FROM retries r JOIN tasks t USING (task_id) WHERE t.job_id = '$(field job "$json")'")
        [ "${retries:-0}" -gt 0 ] && break
        echo "# try $try: $(field killed "$json") workers killed, no task retried; again"
    done
}

pendulum_ref() { # pendulum_ref: es_local's weights for $P in $pwant (checked)
    P="--env pendulum --seed 2 --max-iters 8 --target 0"
    pref=$(timeout -s KILL 120 "$LOCAL" $P --json --quiet | tail -n 1)
    pwant=$(field weights_hash "$pref")
    is_hash "$pwant" "es_local pendulum: a weights hash ($pwant)"
}

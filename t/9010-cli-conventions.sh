#!/bin/sh
# 9010-cli-conventions: every lux command keeps the same command-line
# conventions (lux(1), EXIT STATUS): -h and --help print its usage to
# stdout and exit 0; an unknown option, an option without its value, a
# malformed number or a stray argument prints "lux CMD: what is wrong" and
# the usage to stderr and exits 2; a runtime error (a directory holding no
# cluster, a missing file) exits 1 with a message naming the thing.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

# every command, the internal ones (run by lux itself) included
for c in start stop status sql audit pull timeline replay lineage run bench \
    supervise replica worker; do
    for h in --help -h; do
        run "$LUX" "$c" $h
        is "$rc" 0 "lux $c $h exits 0"
        like "$out" "usage: lux $c" "lux $c $h prints the usage on stdout"
        is "$err" "" "lux $c $h writes nothing to stderr"
    done
    run "$LUX" "$c" --no-such-option
    is "$rc" 2 "lux $c with an unknown option exits 2"
    like "$err" "lux $c: unknown option '--no-such-option'" "lux $c names the option"
    like "$err" "usage: lux $c" "lux $c prints the usage after a usage error"
done

# an option given without its value: named, exit 2, the usage
for cv in "start --dir" "stop --dir" "status --dir" "sql --dir" "audit --window" \
    "timeline --job" "lineage -o" "run --workers" "bench --dir" "supervise --dir" \
    "replica --shard" "worker --node"; do
    set -- $cv
    run "$LUX" "$1" "$2"
    is "$rc" 2 "lux $cv (no value) exits 2"
    like "$err" "lux $1: $2 needs a value" "lux $1 says $2 needs a value"
    like "$err" "usage: lux $1" "lux $1 prints the usage"
done

# a malformed number: the option, the value and the usage, exit 2
for cv in "start --head --dir $tmp/x --shards 0" "start --head --dir $tmp/x --port 8x" \
    "start --head --dir $tmp/x --checkpoint-s -3" "audit --dir $tmp --window many" \
    "run --workers -1 x.so" "run --store-mb 1e3 x.so"; do
    set -- $cv
    run "$LUX" "$@"
    is "$rc" 2 "lux $cv exits 2"
    like "$err" "must be a number" "lux $1 says what the number must be"
    like "$err" "usage: lux $1" "lux $1 prints the usage after a malformed number"
done
[ ! -e "$tmp/x" ]
ok $? "a start refused for its options made no directory"

# arguments missing or one too many
for cv in "stop" "status" "sql" "sql --dir $tmp" "audit" "timeline" "timeline $tmp" \
    "lineage $tmp" "run" "status --dir $tmp extra" "stop --dir $tmp extra" \
    "audit --dir $tmp extra" "lineage a b c" "timeline a b -o t.json" "bench --quick no_such"; do
    set -- $cv
    run "$LUX" "$@"
    is "$rc" 2 "lux $cv exits 2"
    like "$err" "usage: lux $1" "lux $cv prints the usage"
done

# options after the arguments are options; for run, the module's own
run "$LUX" status "$tmp/nothing" --dir
is "$rc" 2 "lux status ARG --dir (options after arguments are parsed) exits 2"
like "$err" "--dir needs a value" "and says --dir needs a value"

# runtime errors: exit 1, naming the thing
id=0123456789abcdef0123456789abcdef
for cv in "status --dir $tmp/nothing" "stop --dir $tmp/nothing" \
    "sql --dir $tmp/nothing SELECT" "audit --dir $tmp/nothing" \
    "timeline $tmp/nothing -o $tmp/t.json" "lineage $tmp/nothing ${id}00000000" \
    "run $tmp/nothing.so" "sql $tmp/nothing.db SELECT"; do
    set -- $cv
    run "$LUX" "$@"
    is "$rc" 1 "lux $cv (nothing there) exits 1"
    like "$err" "lux $1: " "lux $1 names itself"
    like "$err" "$tmp/nothing" "lux $1 names what is missing"
done

done_testing

#!/bin/sh
# 9011-start-faults: lux start and lux run refuse what cannot work before
# they make anything. A --port in use (the chain master's, or the next one,
# its PUB) fails with "port P is in use" and leaves no directory, so a
# retry on a free port starts; a stopped cluster whose port was taken says
# so and keeps its directory as it was; the supervisor that meets a port in
# use exits 1 with the error, not on an assertion of czmq. A bad
# --resources exits 2 and leaves no cluster and no run directory.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
command -v python3 >/dev/null || skip_all "python3 is needed to hold a port"
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
holders=
trap '[ -n "$holders" ] && kill $holders 2>/dev/null; "$LUX" stop --dir "$D" >/dev/null 2>&1; tap_cleanup' EXIT

hold() { # hold PORT|0 FILE: a process listening on 127.0.0.1:PORT (0: any
    # free port) until killed; its port in FILE, its pid in $holder and
    # added to $holders; fails if the port cannot be bound
    rm -f "$2" "$2.new"
    python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
with open(sys.argv[2] + ".new", "w") as f:
    f.write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[2] + ".new", sys.argv[2])
time.sleep(600)' "$1" "$2" 2>/dev/null &
    holder=$!
    holders="$holders $holder"
    n=0
    while [ ! -s "$2" ] && [ $n -lt 300 ] && kill -0 "$holder" 2>/dev/null; do
        sleep 0.1
        n=$((n + 1))
    done
    [ -s "$2" ]
}

unhold() { # unhold PID
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    holders=$(echo "$holders" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
}

# Two neighbouring ports held by this test (a cluster on --port P binds P
# for its chain master and P + 1 for its PUB): no check below depends on a
# port next to a random one being free, or staying free, in someone else's
# hands (CI failed once on that).
P=
for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    hold 0 "$tmp/port" || continue
    h1=$holder
    P=$(cat "$tmp/port")
    [ "$P" -lt 65535 ] && hold "$((P + 1))" "$tmp/port1" && { h2=$holder; break; }
    unhold "$h1"
    [ -n "$holder" ] && [ "$holder" != "$h1" ] && unhold "$holder"
    P=
done
[ -n "$P" ] || { echo "Bail out! cannot hold two neighbouring ports"; exit 1; }
run "$LUX" start --head --dir "$D" --listen tcp://127.0.0.1 --port "$P" --log-only
is "$rc" 1 "start on a --port in use exits 1"
like "$err" "port $P is in use" "naming the port"
is "$(echo "$err" | grep -c Assertion)" 0 "with no assertion failure"
[ ! -e "$D" ]
ok $? "and leaves no directory behind"
unhold "$h1"
run "$LUX" start --head --dir "$D" --listen tcp://127.0.0.1 --port "$P" --log-only
if [ "$rc" -eq 1 ] && echo "$err" | grep -q "port $P is in use"; then
    for c in 1 2 3; do skip "port $P was taken by someone else once released"; done
else
    is "$rc" 1 "start whose --port + 1 (the PUB) is in use exits 1"
    like "$err" "port $((P + 1)) is in use" "naming that port"
    [ ! -e "$D" ]
    ok $? "and leaves no directory behind"
fi
unhold "$h2"

# the retry, on a port that is free (the one just released)
run "$LUX" start --head --dir "$D" --listen tcp://127.0.0.1 --port "$P" --log-only
is "$rc" 0 "a retry on a free port starts the cluster ($err)"
run "$LUX" stop --dir "$D"
is "$rc" 0 "stop it"

# a stopped cluster whose port someone took meanwhile
if hold "$P" "$tmp/port"; then
    cp "$D/cluster.conf" "$tmp/conf.before"
    run "$LUX" start --head --dir "$D"
    is "$rc" 1 "restarting a cluster whose port was taken exits 1"
    like "$err" "port $P is in use" "naming the port"
    cmp -s "$D/cluster.conf" "$tmp/conf.before"
    ok $? "its cluster.conf is unchanged"
    # the supervisor itself (as lux start would run it, had it not checked)
    run "$LUX" supervise --dir "$D" --log-only
    is "$rc" 1 "a supervisor whose chain master cannot bind exits 1"
    like "$err" "Address already in use" "with the bind error"
    is "$(echo "$err" | grep -c Assertion)" 0 "and no assertion failure"
    unhold "$holder"
    run "$LUX" start --head --dir "$D"
    is "$rc" 0 "once the port is free, it restarts ($err)"
    "$LUX" stop --dir "$D" >/dev/null 2>&1
else
    skip "port $P was taken again before this test could hold it"
fi

# a bad --resources: exit 2, nothing made
for r in CPU=abc GPU=x =3 GPU "GPU=-1"; do
    run "$LUX" start --head --dir "$tmp/r" --resources "$r"
    is "$rc" 2 "start --resources '$r' exits 2"
    like "$err" "'${r%%,*}' is not NAME=AMOUNT" "naming the item"
    [ ! -e "$tmp/r" ]
    ok $? "and makes no directory"
    run "$LUX" run --dir "$tmp/runs" --resources "$r" "${LUX_BUILDDIR:-.}/examples/hello/hello.so" 3
    is "$rc" 2 "run --resources '$r' exits 2"
    [ ! -e "$tmp/runs" ]
    ok $? "and makes no run directory"
done

# a resource named twice is refused, not the last one taken (CPU=N may still
# override the default CPU count, once)
for r in GPU=1,GPU=2 CPU=1,x=2,CPU=3; do
    run "$LUX" start --head --dir "$tmp/r" --resources "$r"
    is "$rc" 2 "start --resources '$r' exits 2"
    like "$err" "given twice" "saying a name is given twice ($err)"
    [ "$rc" = 0 ] && "$LUX" stop --dir "$tmp/r" >/dev/null 2>&1
    [ ! -e "$tmp/r" ]
    ok $? "and makes no directory"
done

done_testing

# cluster.sh - a cluster of several machines on this one, for tests and
# benchmarks: a head and N nodes, each with its own directory and its own
# address. Source it after tap.sh (and tap_tmpdir); see t/README,
# "A cluster on one box".
#
# Two forms:
#   loopback (no root): the head listens on 127.0.0.1, node I says it is
#     127.0.0.(I+1) (--node-ip); every process shares this machine's
#     network namespace.
#   netns (root and iproute2): cluster_netns_up N first. The head and each
#     node get a network namespace of their own, joined by veth pairs to a
#     hub namespace that routes between them (10.R.I.2 is machine I, the
#     head I=0, its hub side 10.R.I.1), so that
#       cluster_partition FROM TO    (ip -n HUB rule add from A to B blackhole)
#     cuts one direction and cluster_heal FROM TO mends it. cluster_netns_why
#     says why the form cannot run here (empty when it can).
#
#   cluster_up [-d MS] HEADRES [RES...]  a head and nodes 1, 2, ... (1 worker,
#                                      a 32 MiB store each) with those
#                                      --resources, each start a TAP check;
#                                      -d: LUX_NODE_DEAD_MS=MS for the head
#   cluster_head [LUX START OPTIONS]   start the head in $CL_DIR/head
#   cluster_join I [OPTIONS]           start node I in $CL_DIR/nI; its output
#                                      in $CL_OUT, its status in $CL_RC
#   cluster_node_pid I                 the pid of node I's daemon
#   cluster_wait_sql SQL WANT [SECS]   poll `lux sql --csv` on the head until
#                                      its output holds WANT (0) or SECS pass
#                                      (1); the output in $CL_SQL
#   cluster_wait_value SQL WANT [SECS] the same, until the last line of its
#                                      output is WANT (a count of 10 is not 0)
#   cluster_wait_file FILE [SECS]      wait until FILE exists (0) or SECS
#                                      (default 120) pass (1)
#   cluster_head_beat SINCE [MIN]      "W S": the head's node manager's
#                                      table_waits and tasks submitted, from
#                                      a heartbeat it sent at SINCE (ms since
#                                      the epoch) or later that counts at
#                                      least MIN submitted (1: none in 60 s)
#   cluster_kill_node I                kill -9 node I's daemon and its
#                                      workers (a machine that dies takes
#                                      them with it)
#   cluster_down                       stop every node and the head this
#                                      script started, remove the namespaces
#
# Only what this script started is stopped (by its directory or pid).

CL_DIR=${TAP_TMP:?tap_tmpdir first}
LUX=${LUX_BIN:-./lux}
CL_NS=            # the namespaces' prefix once cluster_netns_up ran
CL_NODES=
CL_HEAD_UP=

# A port for the head's master (it takes PORT to PORT+4, +4 the bulk port): from the
# test's pid, moved on by cluster_head when it is taken.
CL_PORT=$((20000 + ($$ % 2000) * 7))

cl_ip() { # cl_ip I: machine I's address (0: the head)
    if [ -n "$CL_NS" ]; then
        echo "10.$CL_NET.$1.2"
    elif [ "$1" -eq 0 ]; then
        echo 127.0.0.1
    else
        echo "127.0.0.$(($1 + 1))"
    fi
}

cl_exec() { # cl_exec I CMD...: run CMD on machine I
    _i=$1
    shift
    if [ -n "$CL_NS" ]; then
        ip netns exec "$CL_NS-$_i" "$@"
    else
        "$@"
    fi
}

cluster_head() {
    _try=0
    while :; do
        CL_OUT=$(cl_exec 0 "$LUX" start --head --dir "$CL_DIR/head" \
            --listen "tcp://$(cl_ip 0)" --port "$CL_PORT" "$@" 2>&1)
        CL_RC=$?
        [ $CL_RC -eq 0 ] && break
        _try=$((_try + 1))
        case "$CL_OUT" in
        *"in use"* | *"Address already in use"* | *"did not serve"* | *"exited during start"*)
            if [ $_try -lt 5 ]; then
                "$LUX" stop --dir "$CL_DIR/head" >/dev/null 2>&1
                rm -rf "$CL_DIR/head"
                CL_PORT=$((CL_PORT + 5))
                continue
            fi
            ;;
        esac
        echo "# cluster_head failed: $CL_OUT" >&2
        return 1
    done
    CL_HEAD_UP=1
    CL_ADDRESS="$(cl_ip 0):$CL_PORT"
    CL_TOKEN="$CL_DIR/head/token"
    return 0
}

cluster_up() { # cluster_up [-d MS] HEADRES [RES...]
    _dead=
    if [ "$1" = -d ]; then
        _dead=$2
        shift 2
    fi
    if [ -n "$_dead" ]; then
        LUX_NODE_DEAD_MS=$_dead cluster_head --workers 1 --store-mb 32 --resources "$1"
    else
        cluster_head --workers 1 --store-mb 32 --resources "$1"
    fi
    ok $CL_RC "the head starts, with $1" || diag "$CL_OUT"
    shift
    _n=1
    for _r in "$@"; do
        cluster_join $_n --workers 1 --store-mb 32 --resources "$_r"
        ok $CL_RC "node $_n joins, with $_r" || diag "$CL_OUT"
        _n=$((_n + 1))
    done
}

cluster_join() { # cluster_join I [OPTIONS]
    _i=$1
    shift
    CL_OUT=$(cl_exec "$_i" "$LUX" start --address "$CL_ADDRESS" --dir "$CL_DIR/n$_i" \
        --token-file "$CL_TOKEN" --node-ip "$(cl_ip "$_i")" "$@" 2>&1)
    CL_RC=$?
    CL_NODES="$CL_NODES $_i"
    return $CL_RC
}

cluster_node_pid() { cat "$CL_DIR/n$1/run/node.pid" 2>/dev/null; }

# Both ask at least once: with SECS 1 the second could tick over before
# the first ask, and the wait failed having asked nothing (CL_SQL empty).
cluster_wait_sql() { # cluster_wait_sql SQL WANT [SECS]
    _end=$(($(date +%s) + ${3:-60}))
    while :; do
        CL_SQL=$("$LUX" sql --dir "$CL_DIR/head" --csv "$1" 2>&1)
        case "$CL_SQL" in *"$2"*) return 0 ;; esac
        [ "$(date +%s)" -lt $_end ] || return 1
        sleep 0.2
    done
}

cluster_wait_value() { # cluster_wait_value SQL WANT [SECS]: as cluster_wait_sql, but the
    # answer's last line (a one-value query's value) must be WANT itself, not hold it
    _end=$(($(date +%s) + ${3:-60}))
    while :; do
        CL_SQL=$("$LUX" sql --dir "$CL_DIR/head" --csv "$1" 2>&1)
        [ "$(printf '%s\n' "$CL_SQL" | tail -n 1)" = "$2" ] && return 0
        [ "$(date +%s)" -lt $_end ] || return 1
        sleep 0.2
    done
}

cluster_wait_file() { # cluster_wait_file FILE [SECS]
    _end=$(($(date +%s) + ${2:-120}))
    while [ ! -e "$1" ] && [ "$(date +%s)" -lt $_end ]; do
        sleep 0.1
    done
    [ -e "$1" ]
}

cluster_wait_gone() { # cluster_wait_gone PID [SECS]: until process PID is gone (30 s); 1 if not
    _i=0
    while kill -0 "$1" 2>/dev/null && [ $_i -lt $((${2:-30} * 10)) ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    ! kill -0 "$1" 2>/dev/null
}

cluster_wait_line() { # cluster_wait_line TEXT FILE [SECS]: until FILE has a line with TEXT
    _end=$(($(date +%s) + ${3:-120}))
    while ! grep -q "$1" "$2" 2>/dev/null && [ "$(date +%s)" -lt $_end ]; do
        sleep 0.1
    done
    grep -q "$1" "$2" 2>/dev/null
}

cluster_run_fails() { # cluster_run_fails WHAT PATTERN ARGS...: `lux run --address HEAD ARGS`
    # fails (check WHAT), says PATTERN, and within 60 s: three checks; its output in CL_OUT
    _what=$1 _pat=$2
    shift 2
    _start=$(date +%s)
    CL_OUT=$("$LUX" run --address "$CL_DIR/head" "$@" 2>&1)
    _rc=$?
    _took=$(($(date +%s) - _start))
    ok $([ $_rc -ne 0 ]; echo $?) "$_what" || diag "$CL_OUT"
    like "$CL_OUT" "$_pat" "... because: $_pat" || diag "$CL_OUT"
    ok $([ "$_took" -lt 60 ]; echo $?) "... within 60 s (${_took} s)"
}

cluster_head_beat() { # cluster_head_beat SINCE [MIN]
    _end=$(($(date +%s%3N) + 60000))
    while :; do
        _q=$(date +%s%3N)
        _l=$("$LUX" status --dir "$CL_DIR/head" --json 2>/dev/null | tr '{' '\n' |
            grep "\"dir\": \"$CL_DIR/head\"")
        _age=$(echo "$_l" | sed -n 's/.*"age_ms": \([0-9]*\).*/\1/p')
        _w=$(echo "$_l" | sed -n 's/.*"table_waits": \([0-9]*\).*/\1/p')
        _s=$(echo "$_l" | sed -n 's/.*"submitted": \([0-9]*\).*/\1/p')
        if [ -n "$_age" ] && [ -n "$_w" ] && [ -n "$_s" ] && [ $((_q - _age)) -ge "$1" ] &&
            [ "$_s" -ge "${2:-0}" ]; then
            echo "$_w $_s"
            return 0
        fi
        [ "$_q" -ge "$_end" ] && return 1
        sleep 0.1
    done
}

cluster_kill_node() { # cluster_kill_node I
    _pid=$(cluster_node_pid "$1")
    [ -n "$_pid" ] || return 1
    _w=$(pgrep -P "$_pid" 2>/dev/null)
    kill -9 "$_pid" || return 1
    # its workers: one may have died already (a test's own kills)
    for _p in $_w; do kill -9 "$_p" 2>/dev/null; done
    return 0
}

cluster_down() {
    # the nodes stop side by side: a node whose head is dead took 12-30 s
    # to stop (t/6058, t/6074 at load 24-35; 10 s of it its LEAVE, now cut
    # short when the head refuses connections: t/5022), one after the
    # other they took up to 46 s of a test's exit
    _pids=
    for _i in $CL_NODES; do
        if [ -d "$CL_DIR/n$_i" ]; then
            "$LUX" stop --dir "$CL_DIR/n$_i" >/dev/null 2>&1 &
            _pids="$_pids $!"
        fi
    done
    for _p in $_pids; do wait "$_p"; done
    CL_NODES=
    if [ -n "$CL_HEAD_UP" ]; then
        "$LUX" stop --dir "$CL_DIR/head" >/dev/null 2>&1
        CL_HEAD_UP=
    fi
    cluster_netns_down
}

# --- the namespace form ---------------------------------------------------------------

cluster_netns_why() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "needs root (ip netns)"
    elif ! command -v ip >/dev/null 2>&1; then
        echo "needs iproute2 (ip)"
    elif ! ip netns add "luxprobe$$" 2>/dev/null; then
        echo "ip netns add is refused here"
    else
        ip netns del "luxprobe$$"
    fi
}

cluster_netns_up() { # cluster_netns_up N: namespaces for a head and N nodes
    CL_NS="lux$$"
    CL_NET=$((($$ % 200) + 20))
    ip netns add "$CL_NS-hub" || return 1
    ip -n "$CL_NS-hub" link set lo up
    ip netns exec "$CL_NS-hub" sysctl -qw net.ipv4.ip_forward=1 || return 1
    _i=0
    while [ $_i -le "$1" ]; do
        _ns="$CL_NS-$_i"
        ip netns add "$_ns" || return 1
        ip -n "$_ns" link set lo up
        ip link add "lx$$h$_i" netns "$CL_NS-hub" type veth peer name eth0 netns "$_ns" ||
            return 1
        ip -n "$CL_NS-hub" addr add "10.$CL_NET.$_i.1/24" dev "lx$$h$_i"
        ip -n "$CL_NS-hub" link set "lx$$h$_i" up
        ip -n "$_ns" addr add "10.$CL_NET.$_i.2/24" dev eth0
        ip -n "$_ns" link set eth0 up
        ip -n "$_ns" route add default via "10.$CL_NET.$_i.1"
        _i=$((_i + 1))
    done
    CL_NS_N=$1
}

cluster_partition() { # cluster_partition FROM TO: packets from machine FROM to TO are dropped
    ip -n "$CL_NS-hub" rule add from "$(cl_ip "$1")" to "$(cl_ip "$2")" blackhole
}

cluster_heal() {
    ip -n "$CL_NS-hub" rule del from "$(cl_ip "$1")" to "$(cl_ip "$2")" blackhole
}

cluster_netns_down() {
    [ -n "$CL_NS" ] || return 0
    _i=0
    while [ $_i -le "${CL_NS_N:-0}" ]; do
        ip netns del "$CL_NS-$_i" 2>/dev/null
        _i=$((_i + 1))
    done
    ip netns del "$CL_NS-hub" 2>/dev/null
    CL_NS=
}

#!/bin/sh
# 6158-cluster-actor-restart-node: an actor held by a node that is not the
# head restarts when its process is killed -9, its calls after its
# checkpoint read from the log through the head's node (NODE_ACTOR_CALLS).
# A head and two nodes; a driver on node 2 makes four counters there (the
# holder is node 2), two without checkpoints, one with checkpoint_every 3,
# one with 7, and calls them in rounds (actormod "rounds": 100 adds, 3 ms
# each, and a pid on each counter, all submitted before any get, each
# answer checked against the sum so far). A first run without kills gives the final
# counts. A second run, the same calls, has its counters' processes killed
# -9 (by the PIDs they report, children of node 2's daemon): rounds drawn
# from the seed kill one or two counters at a moment drawn too, most while
# the round's calls are in flight, some between rounds. The final counts
# must equal the first run's, every answer on the way right, and the log
# must have one actor_restarted per kill.
# Before, every such restart failed: the log's files are on the head's
# machine only, and node 2 read them from its own directory ("restart 1:
# reading its calls from the log: reading the log: .../n2/shard-S/
# replica-0.db: unable to open database file"); the actor died and its
# calls failed with that.
# Last, the bound: the head made silent (LUX_TEST_ACTOR_CALLS_DROP=FILE
# while FILE exists), a killed counter's restart fails after
# LUX_TEST_ACTOR_CALLS_MS (8 s here) and its calls with it, naming the
# head's node.
# Usage: sh t/6158-cluster-actor-restart-node.sh [SEED] (default 6158).
. "${LUX_SRCDIR:-.}/t/lib/cluster_test.sh"
MOD=$(cluster_mod actormod)
SEED=${1:-6158}
N=4 K=12 B=100 EVERY=0,3,0,7
export LUX_TEST_ACTOR_CALLS_DROP="$TAP_TMP/drop" LUX_TEST_ACTOR_CALLS_MS=8000
echo "# seed $SEED"

cluster_up CPU=1 CPU=1 CPU=1

# The kills, drawn from the seed: "ROUND HOW COUNTER PAUSE" per round that
# kills (most, from round 2). HOW 0: before the round's calls, 1: while
# they are in flight (PAUSE ms after the round starts), 2: two counters
# so, 3: one so, and its new process again as soon as it appears (its
# replay, or its checkpoint's load, under way).
awk -v s="$SEED" -v k=$K -v n=$N 'BEGIN {
    srand(s)
    for (r = 2; r <= k; r++)
        if (rand() < 0.8)
            printf "%d %d %d %d\n", r, int(rand() * 4), int(rand() * n), int(rand() * 100)
}' >"$TAP_TMP/plan"

kids() { echo " $(pgrep -P "$(cluster_node_pid 2)" | tr '\n' ' ') "; }

# kill1 PID: kill -9 PID when node 2's daemon is its parent
kill1() {
    case "$(kids)" in
    *" $1 "*) kill -9 "$1" && KILLS=$((KILLS + 1)) && return 0 ;;
    esac
    return 1
}

# drive GO [PLAN]: run the rounds of driver $DRV with files GO.r; with PLAN, kill -9
# counters' processes as it says; KILLS says how many
drive() {
    KILLS=0 BAD=
    for r in $(seq 1 $K); do
        line=$([ -n "$2" ] && awk -v r="$r" '$1 == r' "$2")
        if [ -n "$line" ]; then
            set -- "$1" "$2" $line
            how=$4 j=$5
            [ "$how" -ne 0 ] && touch "$1.$r" && sleep "$(awk -v p="$6" 'BEGIN { print p / 1000 }')"
            before=$(kids)
            ndie=1
            [ "$how" -eq 2 ] && ndie=2
            for i in $(seq 1 $ndie); do
                pid=$(awk -v j="$j" '$1 == j { print $2 }' "$1.pids")
                if [ -z "$pid" ]; then
                    BAD="$BAD round $r: no pid of counter $j;"
                elif kill1 "$pid"; then
                    echo "# round $r: killed counter $j (pid $pid), how $how"
                    [ "$how" -ne 0 ] && echo "$r $j $pid" >>"$1.inflight"
                else
                    echo "# round $r: counter $j's pid $pid is gone already (killed in the round before)"
                fi
                j=$(((j + 1) % N))
            done
            if [ "$how" -eq 3 ]; then # its next process, as soon as it is there
                new=
                for i in $(seq 1 100); do
                    for p in $(kids); do
                        case "$before" in *" $p "*) ;; *) new=$p ;; esac
                    done
                    [ -n "$new" ] && break
                    sleep 0.05
                done
                if [ -n "$new" ] && kill1 "$new"; then
                    echo "# round $r: killed its new process (pid $new) too"
                fi
            fi
            set -- "$1" "$2"
        fi
        touch "$1.$r"
        i=0 # until the round is done (120 s), or its driver ($DRV) ended
        while [ ! -e "$1.done.$r" ] && kill -0 "$DRV" 2>/dev/null && [ $i -lt 1200 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        [ -e "$1.done.$r" ] || { BAD="$BAD round $r not done;"; return 1; }
        # a kill while the round's calls were in flight: its pid call, the
        # round's last, answers from another process
        awk -v r="$r" '$1 == r { print $2, $3 }' "$1.inflight" 2>/dev/null | while read -r j pid; do
            awk -v j="$j" -v p="$pid" '$1 == j && $2 != p' "$1.pids" | grep -q . && echo x
        done >>"$1.hits"
    done
}

"$LUX" run --address "$CL_DIR/n2" "$MOD" rounds $N $K $B $EVERY "$TAP_TMP/a" >"$TAP_TMP/a.out" 2>&1 &
d1=$! DRV=$!
CL_DRIVERS="$CL_DRIVERS $d1"
drive "$TAP_TMP/a"
wait $d1
ok $? "a driver on node 2: $N counters, $K rounds of $B calls each, no kills" ||
    diag "$(tail -n 5 "$TAP_TMP/a.out")"
want=$(grep '^counter' "$TAP_TMP/a.out")
is "$(echo "$want" | grep -c "$CL_DIR/n2\$")" $N "... all held by node 2"

"$LUX" run --address "$CL_DIR/n2" "$MOD" rounds $N $K $B $EVERY "$TAP_TMP/b" >"$TAP_TMP/b.out" 2>&1 &
d2=$! DRV=$!
CL_DRIVERS="$CL_DRIVERS $d2"
drive "$TAP_TMP/b" "$TAP_TMP/plan"
kills=$KILLS
ok $([ -z "$BAD" ] && [ "$kills" -ge 6 ]; echo $?) "the same with $kills counters' processes killed -9" ||
    diag "$BAD"
hits=$(cat "$TAP_TMP/b.hits" 2>/dev/null | wc -l)
ok $([ "$hits" -ge 3 ]; echo $?) "... $hits of them with the round's calls in flight"
wait $d2
ok $? "... the driver ends well, every answer right" || diag "$(tail -n 5 "$TAP_TMP/b.out")"
is "$(grep '^counter' "$TAP_TMP/b.out")" "$want" "... the final counts are those of the run without kills"
ok $(! grep -q "unable to open database file" "$CL_DIR/n2/log/node.log"; echo $?) \
    "... node 2 never tried the log's files" ||
    diag "$(grep "unable to open" "$CL_DIR/n2/log/node.log" | head -n 3)"
cluster_wait_value "SELECT count(*) FROM actor_restarts" "$kills" 30
ok $? "... the log has $kills actor_restarted, one a kill" || diag "$CL_SQL"
r=$("$LUX" sql --dir "$CL_DIR/head" --csv "SELECT sum(calls_replayed > 0 AND checkpoint_call = 0)
    || ' ' || sum(calls_replayed > 0 AND checkpoint_call > 0) FROM actor_restarts" | tail -n 1)
echo "# restarts with calls re-applied: from the constructor, from a checkpoint: $r"
ok $(echo "$r" | awk '{ exit !($1 > 0 && $2 > 0) }'; echo $?) \
    "... some re-applied calls after their constructor, some after a checkpoint ($r)"

# the bound: the head does not answer
"$LUX" run --address "$CL_DIR/n2" "$MOD" rounds 1 2 5 0 "$TAP_TMP/c" >"$TAP_TMP/c.out" 2>&1 &
d3=$!
CL_DRIVERS="$CL_DRIVERS $d3"
touch "$TAP_TMP/c.1"
cluster_wait_file "$TAP_TMP/c.done.1" 120
ok $? "a third counter on node 2 answers" || diag "$(cat "$TAP_TMP/c.out")"
touch "$TAP_TMP/drop"
pid=$(awk '{ print $2 }' "$TAP_TMP/c.pids")
kill1 "$pid"
ok $? "kill -9 its process (pid $pid), the head silent"
start=$(date +%s)
touch "$TAP_TMP/c.2"
wait $d3
rc=$?
took=$(($(date +%s) - start))
ok $([ $rc -ne 0 ]; echo $?) "... its next calls fail" || diag "$(cat "$TAP_TMP/c.out")"
like "$(cat "$TAP_TMP/c.out")" "reading its calls from the log: the head's node (tcp://" \
    "... saying the head's node" || diag "$(cat "$TAP_TMP/c.out")"
like "$(cat "$TAP_TMP/c.out")" "did not answer within 8000 ms" "... did not answer within the bound"
ok $([ "$took" -lt 60 ]; echo $?) "... within 60 s (${took} s)"
done_testing

#!/bin/sh
# 9154-replay-restart: lux replay --verify re-enacts a recorded actor
# restart (t/9154-restart-run: an Acc actor checkpointing every 5 calls,
# its process killed with SIGKILL by its pid after call 22 and restarted
# from its checkpoint, 18 calls after the restart; no call returns a pid):
#   - the replay kills the re-created actor's process after the same call,
#     the replay's log holds its actor_restarted event, from a checkpoint,
#     and every call (those after the restart too) and every checkpoint
#     matches: exit 0;
#   - a call after the restart with its recorded output altered: exit 1,
#     that call named as the one mismatch, the restart re-enacted still;
#   - the restart recorded after a call that never was (idx out of
#     range): exit 1, the restart named as not re-enacted with the reason.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/hist.sh"
hist_replay # the replays' clusters go under tmp, removed with it
sqlv() { # sqlv WHERE QUERY: one value (WHERE: OUT.db, or "--dir DIR")
    "$LUX" sql $1 --csv "$2" | sed -n 2p
}

LUX_BUILDDIR=$B timeout -s KILL 300 "$B/t/9154-restart-run" "$tmp/runs" \
    >"$tmp/run.out" 2>"$tmp/run.err"
ok $? "an actor's process killed with SIGKILL after call 22 restarted and took 18 more calls"
[ -s "$tmp/run.out" ] || sed 's/^/# /' "$tmp/run.err"
run=$(sed -n 1p "$tmp/run.out")
killed=$(sed -n 2p "$tmp/run.out")
ok "$([ "${killed:-0}" -gt 0 ]; echo $?)" "...its process killed by its pid ($killed)"
"$LUX" pull --dir "$run" "$tmp/run.db" >/dev/null
is "$(sqlv "$tmp/run.db" "SELECT count(*) FROM event WHERE kind = 14")" 1 "...one actor_restarted event recorded"
after=$(sqlv "$tmp/run.db" "SELECT idx + size FROM event WHERE kind = 14")
ckpt=$(sqlv "$tmp/run.db" "SELECT idx FROM event WHERE kind = 14")
ok "$([ "${ckpt:-0}" -gt 0 ]; echo $?)" "...it loaded the checkpoint of call $ckpt and replayed up to call $after"
calls=$(sqlv "$tmp/run.db" "SELECT count(*) FROM actor_calls")
is "$calls" 41 "...41 actor calls recorded"

timeout -s KILL 300 "$LUX" replay "$run" --verify >"$tmp/out" 2>"$tmp/err"
is $? 0 "lux replay RUN --verify: exit 0"
like "$(cat "$tmp/out")" "1 of 1 recorded actor restarts re-enacted" "...the restart re-enacted"
like "$(cat "$tmp/out")" "killed after call $after (recorded: restarted from the checkpoint of call $ckpt)" \
    "...the re-created actor's process killed after call $after"
like "$(cat "$tmp/out")" "($calls actor calls, 0 nested): $calls matched, 0 mismatched, 0 not deterministic, 0 not replayable" \
    "...every call matched, those after the restart too"
ck=$(sqlv "$tmp/run.db" "SELECT count(DISTINCT idx) FROM event WHERE kind = 13")
like "$(cat "$tmp/out")" "$ck of $ck checkpoints matched" "...and each of the $ck checkpoints"
newdir=$(sed -n "s/^the replay's log: //p" "$tmp/out")
is "$(sqlv "--dir $newdir" "SELECT count(*) FROM event WHERE kind = 14")" 1 \
    "...the replay's log holds the restart's actor_restarted event"
ok "$([ "$(sqlv "--dir $newdir" "SELECT count(*) FROM event WHERE kind = 14 AND idx > 0")" = 1 ]; echo $?)" \
    "...and it loaded a checkpoint there too"

late=$(sqlv "$tmp/run.db" "SELECT call_id FROM actor_calls WHERE method = 'add' ORDER BY seq LIMIT 1 OFFSET 30")
cp "$tmp/run.db" "$tmp/c.db"
sqlite3 "$tmp/c.db" "UPDATE event SET fp = zeroblob(16) WHERE kind = 5 AND lower(hex(task)) = '$late'"
timeout -s KILL 300 "$LUX" replay "$tmp/c.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a call after the restart with its recorded output altered: exit 1"
like "$(cat "$tmp/out")" "MISMATCH      $late add (call)" "...that call named"
like "$(cat "$tmp/out")" "$((calls - 1)) matched, 1 mismatched, 0 not deterministic" "...and only it"
like "$(cat "$tmp/out")" "1 of 1 recorded actor restarts re-enacted" "...the restart re-enacted in it"

cp "$tmp/run.db" "$tmp/r.db"
sqlite3 "$tmp/r.db" "UPDATE event SET size = 1000 WHERE kind = 14"
timeout -s KILL 300 "$LUX" replay "$tmp/r.db" --verify >"$tmp/out" 2>"$tmp/err"
is $? 1 "a restart recorded after a call the job never made: exit 1"
like "$(cat "$tmp/out")" "restart not re-enacted  actor" "...the restart named as not re-enacted"
like "$(cat "$tmp/out")" "was not replayed" "...with the reason"
like "$(cat "$tmp/out")" "0 of 1 recorded actor restarts re-enacted" "...and counted"

done_testing

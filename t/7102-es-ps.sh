#!/bin/sh
# 7102-es-ps: ES with the policy in a parameter-server actor (es.so --ps).
# The server holds the weights, Adam and the observation statistics;
# rollout tasks pull the weights from it and push their results; it
# updates once an iteration's results are in. Checked:
#   - it solves CartPole-v1 (the default settings, seed 2: 20 iterations),
#     with the weights of es_local and of the task variant;
#   - the same weights run to run, on 1 worker and on 2;
#   - with the server's process killed (kill -9, by the PID it reports) in
#     iterations 2, 4, 8 and 16: it still solves with the same weights, and
#     the log shows one restart per kill, each from a checkpoint;
#   - with --kill-workers (rollout workers and the server, at random): the
#     same weights, and the log shows tasks retried;
#   - Pendulum-v1 (a short run): the weights of es_local;
#   - the log holds every call to the server, in order (pull and push per
#     task, one update per iteration);
#   - --kill-server without --ps is bad usage.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
. "${LUX_SRCDIR:-.}/t/lib/es.sh"

server() { # server JSON: the run's EsServer actor
    sql "$(field log "$1")" "SELECT actor_id FROM actors WHERE job_id = '$(field job "$1")'
        AND class = 'EsServer'"
}

# --- CartPole, solved -----------------------------------------------------------------------
C="--env CartPole-v1 --seed 2"
ref=$(timeout -s KILL 120 "$LOCAL" $C --json --quiet | tail -n 1)
want=$(field weights_hash "$ref")
is_hash "$want" "es_local cartpole seed 2: a weights hash ($want)"

es $C --ps --workers 2
is "$rc" 0 "es.so --ps cartpole, 2 workers: solved (exit 0)"
is "$(field solved "$json")" true "...solved in the JSON"
ok "$(awk -v m="$(field mean_return "$json")" 'BEGIN { exit !(m >= 475) }'; echo $?)" \
    "...mean return $(field mean_return "$json") >= 475 over 100 episodes"
is "$(field ps "$json")" true "...with the policy in the parameter server"
is "$(field iterations "$json")" "$(field iterations "$ref")" \
    "...in es_local's $(field iterations "$ref") iterations"
is "$(field weights_hash "$json")" "$want" "...with es_local's weights (the task variant's)"
log=$(field log "$json")
job=$(field job "$json")
ps=$(server "$json")
iters=$(field iterations "$json")
tpi=$(field tasks_per_iteration "$json")
is "$(sql "$log" "SELECT count(*) FROM actor_calls WHERE actor_id = '$ps' AND method = 'update'")" \
    "$iters" "the log: the server took one update per iteration ($iters)"
is "$(sql "$log" "SELECT count(*) FROM tasks WHERE job_id = '$job' AND function = 'es_ps_rollouts'")" \
    "$((iters * tpi))" "the log: $tpi rollout tasks per iteration"
is "$(sql "$log" "SELECT count(*) FROM actor_calls WHERE actor_id = '$ps' AND method = 'pull'") \
$(sql "$log" "SELECT count(*) FROM actor_calls WHERE actor_id = '$ps' AND method = 'push'")" \
    "$((iters * tpi)) $((iters * tpi))" "the log: one pull and one push per rollout task"
is "$(sql "$log" "SELECT count(*) FROM actor_calls c WHERE actor_id = '$ps' AND method = 'update'
      AND (SELECT count(*) FROM actor_calls p WHERE p.actor_id = c.actor_id AND p.method = 'push'
           AND p.call_number < c.call_number) != $tpi * (SELECT count(*) FROM actor_calls u
           WHERE u.actor_id = c.actor_id AND u.method = 'update' AND u.call_number <= c.call_number)")" \
    0 "the log: each update came after all of its iteration's pushes"
is "$(sql "$log" "SELECT count(DISTINCT d.object_id) FROM task_deps d JOIN tasks t USING (task_id)
      WHERE t.job_id = '$job' AND t.function = 'es_ps_rollouts' AND d.position = 0")" 1 \
    "the log: every rollout task read the same noise table (one put object)"

es $C --ps --workers 2
is "$(field weights_hash "$json")" "$want" "es.so --ps, 2 workers, again: the same weights"
es $C --ps --workers 1
is "$(field weights_hash "$json")" "$want" "es.so --ps, 1 worker: the same weights"
is "$(field workers "$json")" 1 "...on 1 worker"

# --- the server killed ----------------------------------------------------------------------
es $C --ps --workers 2 --kill-server --checkpoint-every 4
is "$rc" 0 "es.so --ps --kill-server: solved (exit 0)"
is "$(field weights_hash "$json")" "$want" "...with the same weights"
kills=$(field server_kills "$json")
is "$kills" 4 "...the server's process killed in iterations 2, 4, 8 and 16"
ps=$(server "$json")
log=$(field log "$json")
is "$(sql "$log" "SELECT count(*) FROM actor_restarts WHERE actor_id = '$ps'")" "$kills" \
    "the log: one restart of the server per kill"
is "$(sql "$log" "SELECT count(*) FROM actor_restarts WHERE actor_id = '$ps'
      AND checkpoint_call > 0")" "$kills" "the log: each restart loaded a checkpoint"
is "$(sql "$log" "SELECT count(*) FROM actor_calls WHERE actor_id = '$ps' AND method = 'update'")" \
    "$(field iterations "$json")" "the log: still one update per iteration"

# --- workers killed -------------------------------------------------------------------------
K="--env cartpole --seed 3 --max-iters 60 --target 1000"
kref=$(timeout -s KILL 120 "$LOCAL" $K --json --quiet | tail -n 1)
kwant=$(field weights_hash "$kref")
is_hash "$kwant" "es_local cartpole seed 3, 60 iterations: a weights hash ($kwant)"
es_killed "$kwant" $K --ps --workers 2 --kill-workers
is "$(field weights_hash "$json")" "$kwant" \
    "es.so --ps --kill-workers: es_local's weights ($(field killed "$json") processes killed)"
ok "$([ "${retries:-0}" -gt 0 ]; echo $?)" "--kill-workers: the log shows $retries tasks retried"

# --- Pendulum -------------------------------------------------------------------------------
pendulum_ref
es $P --ps --workers 2 --kill-server
is "$(field weights_hash "$json")" "$pwant" \
    "es.so --ps --kill-server pendulum: es_local's weights ($(field server_kills "$json") kills)"

# --- usage ----------------------------------------------------------------------------------
mkdir -p "$tmp/none"
timeout -s KILL 60 "$LUX" run --dir "$tmp/none" "$ES" --env cartpole --kill-server \
    >/dev/null 2>"$tmp/err"
is "$?" 2 "--kill-server without --ps: exit status 2"
like "$(cat "$tmp/err")" "--ps" "...saying so"
timeout -s KILL 60 "$LUX" run --dir "$tmp/none" "$ES" --help >"$tmp/out" 2>&1
like "$(cat "$tmp/out")" "--kill-server" "--help describes --ps and --kill-server"
is "$(ls "$tmp/none" | wc -l)" 0 "bad usage and --help start no cluster"

done_testing

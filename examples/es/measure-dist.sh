#!/bin/sh
# measure-dist.sh - the figures of es.so (ES on Lux) in doc/notes/*-es.md and doc/benchmarks.md:
#
#   solve     wall time of `lux run es.so` to solved, CartPole-v1 and
#             Pendulum-v1, seeds 1-3, and of ./quickstart (CartPole seed 1)
#   rate      rollouts/s of fixed runs (a target no policy reaches, a fixed
#             number of iterations) on 1 and 2 workers, against es_local on
#             1 and 2 threads: scaling efficiency and Lux's overhead; and
#             how long the rollouts themselves took on each side (es.so's
#             tasks in its log against es_local's rollout_seconds)
#   ps        the parameter-server variant (es.so --ps) against the task
#             variant, alternating: rollouts/s and CPU time of the same
#             fixed runs on 1 and 2 workers, and the time to solve, seeds 1-3
#   timeline  Lux's own share of each iteration, read from the log with SQL:
#             a fixed CartPole run of 400 iterations on 2 workers; for each
#             iteration after the 20th, the time from its first task's start
#             to the next iteration's, less its longer task (results to the
#             driver, its update, the next tasks to the workers, a worker
#             starting late); its sum as a share of those iterations' time,
#             and its median, 90th and 99th percentiles; and how far apart
#             the iteration's two tasks started and ended (the worker that
#             ends first idles until the other does). Then the same of
#             es_local on 2 threads, which measures it itself (its JSON's
#             boundary_share and boundary_us: the update and its threads'
#             hand-off), one run after each of Lux's: what Lux adds to an
#             iteration is the difference.
#   pairs     Lux's overhead over many alternating pairs, for a figure
#             with its standard error: es_local and es.so alternating
#             (which goes first alternates too), CartPole on 2 workers,
#             fixed runs of ES_PAIRS_ITERS iterations (default 200); the
#             geometric mean of the pairs' ratios of training time with
#             its standard error, the median and the spread. -n is the
#             number of pairs here (100 gives a standard error of about
#             0.5% on this machine).
#   floor     what worker processes cost on this machine at all, and what
#             Lux adds: es_local (threads), es_procs (forked worker
#             processes and socketpairs, no runtime: examples/es/es_procs.c)
#             with its rollouts split before each iteration as es.so's
#             tasks are, es_procs sharing them through a counter
#             (ES_PROCS_SHARE=1), es.so and es.so --no-board, in rotating
#             order, CartPole on 2 workers, fixed runs of ES_PAIRS_ITERS
#             iterations without evaluations; the geometric means of the
#             ratios of training time with their standard errors. -n is
#             the number of rounds.
#
#   lease     what a driver handing tasks to leased workers itself might
#             cost (doc/DESIGN.md): es_procs sharing rollouts, as in
#             floor, and the same with a thread standing for a node
#             manager told of each hand-off beside it and working
#             ES_SHADOW_US microseconds (default 20) on each message
#             (ES_PROCS_SHADOW, examples/es/es_procs.c), rotating with
#             es_local and es.so; -n is the number of rounds.
#
#   examples/es/measure-dist.sh [-n REPS] [solve] [rate] [ps] [timeline] [pairs] [floor] [lease]
#                               (from the build tree; default: solve rate)
#
# ES_RATE_OPTS adds settings to both drivers' runs in `rate`, e.g.
# ES_RATE_OPTS="--pop 128" to see how the overhead falls as iterations grow.
#
# The machine is shared and noisy: every figure is the median of REPS runs
# (default 5), Lux and es_local alternating, and each line prints the
# spread. Overheads of es.so over es_local: the median of the ratios of
# each alternating pair's training time (inside the drivers: no cluster
# start, no noise table); the ratio of the median wall times of the whole
# commands; and the median ratio of CPU times (user + system, with the
# workers) of the iterations alone: a run's minus that of a one-iteration
# run, so that neither start counts. CPU time moves least with the load.
# Each run's log goes under $ES_MEASURE_DIR (default a temporary
# directory, removed at the end).
set -eu
cd "$(dirname "$0")/../.."
reps=5
if [ "${1:-}" = "-n" ]; then reps=$2; shift 2; fi
what=${*:-solve rate}
D=${ES_MEASURE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/es-measure-XXXXXX")}
[ -n "${ES_MEASURE_DIR:-}" ] || trap 'rm -rf "$D"' EXIT
mkdir -p "$D"

field() { # field NAME JSON
    printf '%s\n' "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}
now() { date +%s.%N; }
sub() { echo "$1 $2" | awk '{printf "%.4f", $1 - $2}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
spread() { printf '%s\n' "$@" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
ratio() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }
share() { echo "$1 $2 $3" | awk '{printf "%.3f", $1 / ($2 * $3)}'; } # share BUSY SECONDS THREADS

# CPU seconds (user + system) of a command and every process it waited
# for: lux run's workers are its children, reaped by its node manager, so
# they count.
cpu_of() { # cpu_of FILE: the CPU seconds /usr/bin/time wrote
    awk 'END {printf "%.3f", $1 + $2}' "$1"
}
lux_es() { # lux_es ARGS: the JSON of one lux run in $j, its wall time in $wall, CPU in $cpu
    t0=$(now)
    j=$(/usr/bin/time -f "%U %S" -o "$D/time" timeout -s KILL 600 \
        ./lux run --dir "$D/runs" examples/es/es.so --json --no-report "$@" | tail -n 1) || true
    wall=$(sub "$(now)" "$t0")
    cpu=$(cpu_of "$D/time")
}
local_es() { # local_es ARGS: the JSON of one es_local run in $j, its wall time in $wall, CPU in $cpu
    t0=$(now)
    j=$(/usr/bin/time -f "%U %S" -o "$D/time" timeout -s KILL 600 \
        examples/es/es_local --json --quiet "$@" | tail -n 1) || true
    wall=$(sub "$(now)" "$t0")
    cpu=$(cpu_of "$D/time")
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $reps runs each${ES_RATE_OPTS:+, rate with $ES_RATE_OPTS}"

case " $what " in *" solve "*)
    for env in cartpole pendulum; do
        for seed in 1 2 3; do
            walls="" secs=""
            for i in $(seq "$reps"); do
                lux_es --env "$env" --seed "$seed"
                walls="$walls $wall"
                secs="$secs $(field seconds "$j")"
                [ "$(field solved "$j")" = true ] || echo "  (not solved: $j)"
            done
            echo "solve $env seed $seed: $(field iterations "$j") iterations," \
                "lux run wall $(median $walls) s ($(spread $walls))," \
                "of which training $(median $secs) s; weights $(field weights_hash "$j")"
        done
    done
    walls=""
    for i in $(seq "$reps"); do
        t0=$(now)
        LUX_QUICKSTART_DIR=$D/qs ./quickstart >/dev/null 2>&1 || echo "  (quickstart failed)"
        walls="$walls $(sub "$(now)" "$t0")"
    done
    echo "solve ./quickstart (built tree, CartPole seed 1, report and audit included):" \
        "$(median $walls) s ($(spread $walls))"
    ;;
esac

case " $what " in *" rate "*)
    # fixed runs: the same work for every configuration; and the same with
    # one iteration and one evaluation episode, whose CPU time is the fixed
    # cost (start, noise table, put, workers' start) taken off the CPU figure
    for env in cartpole pendulum; do
        if [ "$env" = cartpole ]; then
            B="--env cartpole --seed 1 --target 1000 --eval-every 1000" iters=200
        else
            B="--env pendulum --seed 1 --target 0 --eval-every 1000" iters=60
        fi
        B="$B ${ES_RATE_OPTS:-}"
        R="$B --max-iters $iters" R1="$B --max-iters 1 --eval-episodes 1"
        pop=$(echo "$B" | sed -n 's/.*--pop \([0-9]*\).*/\1/p')
        for n in 1 2; do
            lr="" xr="" lw="" xw="" lt="" xt="" lc="" xc="" pt="" pc="" kt="" ku="" lu=""
            for i in $(seq "$reps"); do
                local_es $R --threads "$n"
                tr=$(sub "$(field seconds "$j")" "$(field noise_seconds "$j")")
                lt="$lt $tr"
                lr="$lr $(echo "$(field iterations "$j") $tr" | awk -v p="${pop:-32}" '{printf "%.0f", p * $1 / $2}')"
                lw="$lw $wall"
                lh=$(field weights_hash "$j")
                lro=$(field rollout_seconds "$j")
                lu="$lu $(share "$lro" "$tr" "$n")"
                c=$cpu
                local_es $R1 --threads "$n"
                lcpu=$(sub "$c" "$cpu")
                lc="$lc $lcpu"
                lux_es $R --workers "$n"
                xt="$xt $(field train_seconds "$j")"
                xr="$xr $(field rollouts_per_second "$j")"
                xw="$xw $wall"
                xh=$(field weights_hash "$j")
                pt="$pt $(ratio "$(field train_seconds "$j")" "$tr")"
                # the rollout tasks' time, from the log, against es_local's in rollouts
                xro=$(./lux sql --dir "$(field log "$j")" --csv "SELECT sum(t_end - t_start) / 1e9
                      FROM tasks WHERE function = 'es_rollouts' AND job_id = '$(field job "$j")'" |
                      tail -n 1)
                kt="$kt $(ratio "$xro" "$lro")"
                ku="$ku $(share "$xro" "$(field train_seconds "$j")" "$n")"
                c=$cpu
                lux_es $R1 --workers "$n"
                xcpu=$(sub "$c" "$cpu")
                xc="$xc $xcpu"
                pc="$pc $(ratio "$xcpu" "$lcpu")"
            done
            [ "$lh" = "$xh" ] && same="same weights" || same="WEIGHTS DIFFER $lh $xh"
            echo "rate $env $n: es_local $(median $lr) rollouts/s ($(spread $lr)), training" \
                "$(median $lt) s, wall $(median $lw) s | es.so $(median $xr) rollouts/s" \
                "($(spread $xr)), training $(median $xt) s, wall $(median $xw) s; $same"
            echo "overhead $env $n: training $(median $pt)x ($(spread $pt)), wall" \
                "$(ratio "$(median $xw)" "$(median $lw)")x; CPU of $((iters - 1)) iterations" \
                "$(median $pc)x ($(spread $pc); es.so $(median $xc) s, es_local $(median $lc) s)"
            echo "tasks $env $n: es.so's rollout tasks (the log's times) against es_local's time" \
                "in rollouts $(median $kt)x ($(spread $kt)); share of training in them per" \
                "worker: es.so $(median $ku) ($(spread $ku)), es_local $(median $lu) ($(spread $lu))"
            eval "r_${env}_$n=$(median $xr) l_${env}_$n=$(median $lr)"
        done
        eval "x1=\$r_${env}_1 x2=\$r_${env}_2 l1=\$l_${env}_1 l2=\$l_${env}_2"
        echo "scaling $env 1 -> 2: es.so $(ratio "$x2" "$(echo "$x1" | awk '{print 2 * $1}')")," \
            "es_local $(ratio "$l2" "$(echo "$l1" | awk '{print 2 * $1}')") (1.0 = twice the rate)"
    done
    ;;
esac

case " $what " in *" ps "*)
    # the same fixed runs as `rate`, es.so with and without --ps alternating;
    # the ratio is taken within each pair
    for env in cartpole pendulum; do
        if [ "$env" = cartpole ]; then
            R="--env cartpole --seed 1 --target 1000 --eval-every 1000 --max-iters 200"
        else
            R="--env pendulum --seed 1 --target 0 --eval-every 1000 --max-iters 60"
        fi
        R="$R ${ES_RATE_OPTS:-}"
        R1=$(echo "$R" | sed 's/--max-iters [0-9]*/--max-iters 1 --eval-episodes 1/g')
        for n in 1 2; do
            tr="" pr="" q="" tc="" pc="" qc=""
            for i in $(seq "$reps"); do
                lux_es $R --workers "$n"
                a=$(field rollouts_per_second "$j") th=$(field weights_hash "$j") c=$cpu
                lux_es $R1 --workers "$n"
                ca=$(sub "$c" "$cpu")
                lux_es $R --workers "$n" --ps
                b=$(field rollouts_per_second "$j") ph=$(field weights_hash "$j") c=$cpu
                lux_es $R1 --workers "$n" --ps
                cb=$(sub "$c" "$cpu")
                tr="$tr $a" pr="$pr $b" q="$q $(ratio "$b" "$a")"
                tc="$tc $ca" pc="$pc $cb" qc="$qc $(ratio "$cb" "$ca")"
            done
            [ "$th" = "$ph" ] && same="same weights" || same="WEIGHTS DIFFER $th $ph"
            echo "ps rate $env $n: tasks $(median $tr) rollouts/s ($(spread $tr)) | --ps" \
                "$(median $pr) rollouts/s ($(spread $pr)); --ps / tasks $(median $q)x" \
                "($(spread $q)); $same"
            echo "ps cpu $env $n: CPU of the iterations after the first: tasks $(median $tc) s" \
                "($(spread $tc)) | --ps $(median $pc) s ($(spread $pc)); --ps / tasks" \
                "$(median $qc)x ($(spread $qc))"
        done
    done
    for env in cartpole pendulum; do
        for seed in 1 2 3; do
            tw="" pw="" q=""
            for i in $(seq "$reps"); do
                lux_es --env "$env" --seed "$seed"
                tw="$tw $wall" th=$(field weights_hash "$j")
                [ "$(field solved "$j")" = true ] || echo "  (not solved: $j)"
                lux_es --env "$env" --seed "$seed" --ps
                pw="$pw $wall" ph=$(field weights_hash "$j")
                [ "$(field solved "$j")" = true ] || echo "  (--ps not solved: $j)"
                q="$q $(ratio "$(echo "$pw" | awk '{print $NF}')" "$(echo "$tw" | awk '{print $NF}')")"
            done
            [ "$th" = "$ph" ] && same="same weights" || same="WEIGHTS DIFFER $th $ph"
            echo "ps solve $env seed $seed: $(field iterations "$j") iterations, lux run wall:" \
                "tasks $(median $tw) s ($(spread $tw)) | --ps $(median $pw) s ($(spread $pw));" \
                "--ps / tasks $(median $q)x; $same $ph"
        done
    done
    ;;
esac

case " $what " in *" timeline "*)
    shares="" meds="" p99s="" lshares="" lmeds=""
    for i in $(seq "$reps"); do
        lux_es --env cartpole --seed 1 --target 1000 --eval-every 1000 --max-iters 400 --workers 2
        run=$(ls -d "$D"/runs/*/ | tail -n 1)
        ./lux sql --dir "$run" --csv "select t_start, t_end from tasks where function = 'es_rollouts' order by t_start" |
            tail -n +2 | awk -F, '
            function abs(x) { return x < 0 ? -x : x }
            NR % 2 == 1 { s1 = $1; e1 = $2; next }
            { s = ($1 < s1) ? $1 : s1; d = (e1 - s1 > $2 - $1) ? e1 - s1 : $2 - $1; n++
              if (n > 20 && ps) print s - ps, s - ps - pd, pk, pi
              ps = s; pd = d; pk = abs($1 - s1); pi = abs($2 - e1) }' > "$D/timeline"
        share=$(awk '{t += $1; o += $2} END {printf "%.2f", 100 * o / t}' "$D/timeline")
        # how far apart the two tasks started, and ended (a worker idle
        # while the other computes), as means in us
        apart=$(awk '{k += $3; e += $4; n++} END {printf "started %.0f us apart and ended %.0f us apart",
            k / n / 1000, e / n / 1000}' "$D/timeline")
        # the median, 90th and 99th percentiles of the overhead, in us
        set -- $(awk '{print $2 / 1000}' "$D/timeline" | sort -g | awk '{a[NR] = $1}
            function q(f) { i = int(NR * f); return a[i < 1 ? 1 : i] }
            END {printf "%.0f %.0f %.0f", q(0.5), q(0.9), q(0.99)}')
        echo "timeline run $i: Lux's share of iterations 21-400 $share%, per iteration median $1 us," \
            "p90 $2 us, p99 $3 us; the two tasks $apart (means); training" \
            "$(field train_seconds "$j") s"
        shares="$shares $share" meds="$meds $1" p99s="$p99s $3"
        rm -rf "$D/runs"
        # the same measure of es_local's threads (it takes it itself)
        local_es --env cartpole --seed 1 --target 1000 --eval-every 1000 --max-iters 400 --threads 2
        echo "timeline run $i: es_local's share $(field boundary_share "$j")%, per iteration median" \
            "$(field boundary_us "$j") us"
        lshares="$lshares $(field boundary_share "$j")" lmeds="$lmeds $(field boundary_us "$j")"
    done
    echo "timeline: Lux's share $(median $shares)% ($(spread $shares)), per iteration median" \
        "$(median $meds) us, p99 $(median $p99s) us ($(spread $p99s)); es_local's share" \
        "$(median $lshares)% ($(spread $lshares)), median $(median $lmeds) us"
    ;;
esac

# the fixed runs of pairs and floor, each leaving its training time and weights
pair_runs() { R="--env cartpole --seed 1 --target 1000 --eval-every $1 --max-iters ${ES_PAIRS_ITERS:-200}"; }
run_local() { local_es $R --threads 2; lt=$(sub "$(field seconds "$j")" "$(field noise_seconds "$j")"); lh=$(field weights_hash "$j"); }
procs_es() { j=$(ES_PROCS_SHARE=$1 ES_PROCS_SHADOW=${2:-} timeout -s KILL 600 examples/es/es_procs $R --threads 2 | tail -n 1) || true; }
run_procs() { procs_es 0; pt=$(field train_seconds "$j") ph=$(field weights_hash "$j"); }
run_share() { procs_es 1; st=$(field train_seconds "$j") sh=$(field weights_hash "$j"); }
run_shadow() { procs_es 1 "${ES_SHADOW_US:-20}"; wt=$(field train_seconds "$j") wh=$(field weights_hash "$j"); }
run_lux() { lux_es $R --workers 2; xt=$(field train_seconds "$j") xh=$(field weights_hash "$j"); }
run_lux_own() { lux_es $R --workers 2 --no-board; ot=$(field train_seconds "$j") oh=$(field weights_hash "$j"); }
# rotate ROUND PROG...: run the programs, the list rotated by ROUND - 1 so
# that each goes first in turn
rotate() {
    r=$1
    shift
    for k in $(seq $(((r - 1) % $#))); do p=$1; shift; set -- "$@" "$p"; done
    for p in "$@"; do $p; done
}
# gm_se FILE NUM DEN: the geometric mean of column NUM over column DEN, and its standard error
gm_se() {
    awk -v a="$2" -v b="$3" '{ r = log($a / $b); s += r; ss += r * r; n++ }
        END { m = s / n; sd = n > 1 ? sqrt((ss / n - m * m) * n / (n - 1)) : 0
              printf "%.4f +- %.4f", exp(m), exp(m) * sd / sqrt(n) }' "$1"
}

case " $what " in *" pairs "*)
    pair_runs 1000
    : > "$D/pairs"
    for i in $(seq "$reps"); do
        if [ $((i % 2)) = 1 ]; then run_lux; run_local; else run_local; run_lux; fi
        [ "$xh" = "$lh" ] || echo "  (pair $i: WEIGHTS DIFFER $xh $lh)"
        echo "$lt $xt" >> "$D/pairs"
    done
    echo "pairs cartpole 2 workers, ${ES_PAIRS_ITERS:-200} iterations: es.so / es_local" \
        "$(gm_se "$D/pairs" 2 1) (geometric mean and standard error of $reps pairs);" \
        "mean training $(awk '{a += $1; b += $2} END {printf "es_local %.3f s, es.so %.3f s", a / NR, b / NR}' "$D/pairs")"
    set -- $(awk '{print $2 / $1}' "$D/pairs" | sort -g | awk '{a[NR] = $1}
        END {printf "%.4f %.3f %.3f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, a[1], a[NR]}')
    echo "pairs: median $1, pairs $2-$3"
    ;;
esac

case " $what " in *" floor "*)
    pair_runs 1000000 # no evaluations: es_procs makes none
    : > "$D/floor"
    for i in $(seq "$reps"); do
        rotate "$i" run_local run_procs run_share run_lux run_lux_own
        [ "$lh" = "$ph" ] && [ "$lh" = "$sh" ] && [ "$lh" = "$xh" ] && [ "$lh" = "$oh" ] ||
            echo "  (round $i: WEIGHTS DIFFER $lh $ph $sh $xh $oh)"
        echo "$lt $pt $st $xt $ot" >> "$D/floor"
    done
    echo "floor cartpole 2 workers, ${ES_PAIRS_ITERS:-200} iterations, $reps rounds (geometric mean and standard error):"
    echo "  es_procs / es_local                  $(gm_se "$D/floor" 2 1)"
    echo "  es_procs, sharing / es_local         $(gm_se "$D/floor" 3 1)"
    echo "  es.so / es_local                     $(gm_se "$D/floor" 4 1)"
    echo "  es.so --no-board / es_local          $(gm_se "$D/floor" 5 1)"
    echo "  es.so / es_procs, sharing            $(gm_se "$D/floor" 4 3)"
    echo "  es.so --no-board / es_procs          $(gm_se "$D/floor" 5 2)"
    echo "  es.so / es.so --no-board             $(gm_se "$D/floor" 4 5)"
    awk '{a += $1; b += $2; c += $3; d += $4; e += $5} END {printf "  mean training: es_local %.3f s, es_procs %.3f s, sharing %.3f s, es.so %.3f s, --no-board %.3f s\n", a / NR, b / NR, c / NR, d / NR, e / NR}' "$D/floor"
    ;;
esac

case " $what " in *" lease "*)
    pair_runs 1000000
    : > "$D/lease"
    for i in $(seq "$reps"); do
        rotate "$i" run_local run_share run_shadow run_lux
        [ "$lh" = "$sh" ] && [ "$lh" = "$wh" ] && [ "$lh" = "$xh" ] ||
            echo "  (round $i: WEIGHTS DIFFER $lh $sh $wh $xh)"
        echo "$lt $st $wt $xt" >> "$D/lease"
    done
    echo "lease cartpole 2 workers, ${ES_PAIRS_ITERS:-200} iterations, $reps rounds, a node beside" \
        "the hand-offs working ${ES_SHADOW_US:-20} us a message (geometric mean and standard error):"
    echo "  es_procs, sharing / es_local         $(gm_se "$D/lease" 2 1)"
    echo "  ...and the node beside / es_local    $(gm_se "$D/lease" 3 1)"
    echo "  es.so / es_local                     $(gm_se "$D/lease" 4 1)"
    echo "  the node beside / sharing alone      $(gm_se "$D/lease" 3 2)"
    ;;
esac

echo "# done $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

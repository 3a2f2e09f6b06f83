#!/bin/sh
# measure.sh - the figures of es_local in doc/notes/2026-11-22-es.md: time to solve for seeds
# 1, 2 and 3 (median), and the determinism check (each seed run again, and
# once more on 2 threads, must end with the same weights_hash).
#
#   examples/es/measure.sh [ES_LOCAL] [ENV...]
#
# ES_LOCAL defaults to the es_local built next to this script; ENV to
# "cartpole pendulum". Prints one line per run and a summary per env.
set -eu
here=$(dirname "$0")
bin=${1:-$here/es_local}
[ $# -gt 0 ] && shift
envs=${*:-cartpole pendulum}

field() { # field NAME JSON
    printf '%s\n' "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

for env in $envs; do
    times=""
    same=yes
    for seed in 1 2 3; do
        a=$("$bin" --env "$env" --seed "$seed" --json --quiet || true)
        b=$("$bin" --env "$env" --seed "$seed" --json --quiet || true)
        c=$("$bin" --env "$env" --seed "$seed" --json --quiet --threads 2 || true)
        echo "$a"
        ha=$(field weights_hash "$a")
        hb=$(field weights_hash "$b")
        hc=$(field weights_hash "$c")
        [ "$ha" = "$hb" ] && [ "$ha" = "$hc" ] || same=no
        echo "  seed $seed: solved $(field solved "$a") in $(field seconds "$a") s," \
            "$(field iterations "$a") iterations; again $(field seconds "$b") s," \
            "2 threads $(field seconds "$c") s; hashes $ha $hb $hc"
        times="$times $(field seconds "$a")"
    done
    median=$(printf '%s\n' $times | sort -n | sed -n 2p)
    echo "$env: median $median s over seeds 1-3 (1 thread); same hash on rerun and 2 threads: $same"
done

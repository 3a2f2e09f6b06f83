#!/bin/sh
# xfer-sweep.sh - the bulk path's tuning settings against each other (issue
# 28, doc/benchmarks.md stop 44): object_transfer_gigabytes with and
# without integrity only, and its CPU per GiB per thread, under each
# setting, the settings run in turn (round 1 of each, then round 2, ...),
# so that a change in the machine's load falls on all of them alike.
#
#   tools/bench/xfer-sweep.sh [--quick] [--rounds N] [--keep DIR] TREE [SETTING ...]
#
# TREE is a built lux tree (its ./lux runs `lux bench`); nothing is built
# or written there. A SETTING is "default" or a comma list of VAR=VALUE
# put in the environment of the bench, hence of its head and nodes (e.g.
# "LUX_BULK_LOOP=gmac" or "LUX_XFER_CHUNK=262144,LUX_XFER_WINDOW=16");
# without any, the list below (SETTINGS). Each run is
#
#   env SETTING LUX_XFER_PROFILE=1 TREE/lux bench --json [--quick] \
#       object_transfer_gigabytes tcp_stream_gigabytes
#
# which pulls 1 GiB (64 MiB with --quick) three times sealed (the default
# cipher) and three times integrity only (LUX_BULK_CIPHER=gmac at both
# nodes), each against a plain TCP stream of the same bytes. A 1 GiB run
# should take well under a minute on a quiet 2-vCPU machine (not timed
# quiet yet: at load 24-35 a --quick run took 33-62 s), so the 9 settings
# below should fit in about 8 minutes a round; start with --quick.
#
# It prints one table, a row per setting and mode, each figure the median
# over the rounds of the run's own figure (the bench's median of its three
# pulls): GB/s, of_stream (the pull against the stream of the same run),
# and ms of CPU per GiB of the threads of the pull, from the profile lines
# of the nodes' logs (the median of the three pulls of a run): the
# source's loop (src_loop) and pool threads (src_pool), the puller's loop
# (pul_loop) and pool threads (pul_pool), and their sum (all). CPU per GiB
# is the steadier figure on a shared machine: GB/s there says how much of
# the CPUs the pull was given. Each run's raw output is kept in the temp
# directory (--keep DIR: there, and not removed).
#
# LUX_XFER_LOCATE_MS is raised to 30000 unless set: on a loaded machine a
# fresh put's event may take over the default 2 s to reach the log, and
# the pull then failed "never created" before any byte moved.
#
# Needs only sh, awk, sort and the tree. Exits 1 when a run fails (its
# stderr is shown) but goes on with the others.
set -u

SETTINGS="default
LUX_BULK_LOOP=gmac
LUX_BULK_LOOP=gmac-open
LUX_BULK_LOOP=open
LUX_BULK_THREADS=0
LUX_XFER_CHUNK=262144
LUX_XFER_CHUNK=4194304,LUX_XFER_WINDOW=4
LUX_XFER_WINDOW=16
LUX_BULK_SNDBUF=4194304,LUX_BULK_RCVBUF=4194304"

quick=
rounds=1
keep=
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=--quick; shift ;;
    --rounds) rounds=${2:-}; shift 2 ;;
    --keep) keep=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
    -*) echo "xfer-sweep.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 1 ]; then
    echo "usage: xfer-sweep.sh [--quick] [--rounds N] [--keep DIR] TREE [SETTING ...]" >&2
    exit 2
fi
tree=$1
shift
case $rounds in ''|*[!0-9]*|0) echo "xfer-sweep.sh: --rounds wants a number from 1" >&2; exit 2 ;; esac
if [ ! -x "$tree/lux" ]; then
    echo "xfer-sweep.sh: $tree/lux is not there or not executable (build the tree first)" >&2
    exit 2
fi
if [ $# -gt 0 ]; then
    SETTINGS=$(for s in "$@"; do echo "$s"; done)
fi
for s in $SETTINGS; do
    case $s in
    default) ;;
    *=*) ;;
    *) echo "xfer-sweep.sh: setting '$s' is not 'default' or VAR=VALUE[,VAR=VALUE...]" >&2; exit 2 ;;
    esac
done

: "${LUX_XFER_LOCATE_MS:=30000}"
export LUX_XFER_LOCATE_MS

if [ -n "$keep" ]; then
    mkdir -p "$keep" || exit 2
    dir=$keep
else
    dir=$(mktemp -d "${TMPDIR:-/tmp}/xfer-sweep.XXXXXX") || exit 2
    trap 'rm -rf "$dir"' EXIT
    trap 'exit 130' INT TERM
fi

# one run: "setting", round -> $dir/N.out (json), $dir/N.err (profile lines)
status=0
n=0
echo "xfer-sweep: $(echo "$SETTINGS" | wc -l) settings, $rounds round(s), ${quick:-1 GiB}, in $dir" >&2
r=1
while [ "$r" -le "$rounds" ]; do
    i=0
    for s in $SETTINGS; do
        i=$((i + 1))
        n=$((n + 1))
        envs=
        [ "$s" = default ] || envs=$(echo "$s" | tr ',' ' ')
        echo "$s" >"$dir/$n.setting"
        echo "$i" >"$dir/$n.index"
        printf 'xfer-sweep: round %d, %s (load %s) ... ' "$r" "$s" \
            "$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)" >&2
        t0=$(date +%s)
        # shellcheck disable=SC2086
        if env $envs LUX_XFER_PROFILE=1 "$tree/lux" bench --json $quick \
            object_transfer_gigabytes tcp_stream_gigabytes >"$dir/$n.out" 2>"$dir/$n.err"; then
            echo "$(($(date +%s) - t0)) s" >&2
        else
            echo "failed" >&2
            tail -20 "$dir/$n.err" >&2
            status=1
        fi
    done
    r=$((r + 1))
done

# the figures of each run: "index mode gbs of src_loop src_pool pul_loop pul_pool"
k=1
: >"$dir/rows"
while [ "$k" -le "$n" ]; do
    idx=$(cat "$dir/$k.index")
    awk -v idx="$idx" '
    function num(s, key,    i, t) {   # the number after "key": in a json line
        i = index(s, "\"" key "\": ")
        if (!i) return ""
        t = substr(s, i + length(key) + 4)
        sub(/[,}].*/, "", t)
        return t + 0
    }
    function med(a, m,    i, j, t, b) {
        for (i = 1; i <= m; i++) b[i] = a[i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
        if (m == 0) return -1
        return m % 2 ? b[(m + 1) / 2] : (b[m / 2] + b[m / 2 + 1]) / 2
    }
    FILENAME ~ /\.out$/ && /"name": "object_transfer_gigabytes"/ {
        g[1] = num($0, "value"); o[1] = num($0, "of_tcp_stream")
        g[2] = num($0, "integrity_only_gigabytes"); o[2] = num($0, "integrity_only_of_tcp_stream")
    }
    # the profile lines: A logs "to", B "from", sealed phase first, three runs each
    FILENAME ~ /\.err$/ && /bulk profile: (to|from) / {
        side = / profile: to / ? "s" : "p"
        b = $0; sub(/.*bulk profile: (to|from) [^,]*, [0-9]+ of /, "", b); sub(/ bytes.*/, "", b)
        loop = $0; sub(/.*loop thread: /, "", loop); sub(/ ms of CPU.*/, "", loop)
        pool = 0
        if ($0 ~ /ms of their CPU/) { pool = $0; sub(/.*thread[s]?: /, "", pool); sub(/ ms of their CPU.*/, "", pool) }
        c = ++cnt[side]; mode = c <= 3 ? 1 : 2; k2 = c <= 3 ? c : c - 3
        if (c > 6 || b + 0 <= 0) next
        f = 1073741824 / b
        L[side, mode, k2] = loop * f; P[side, mode, k2] = pool * f; nn[side, mode] = k2
    }
    END {
        for (m = 1; m <= 2; m++) {
            row = idx " " (m == 1 ? "sealed" : "gmac") " " (g[m] == "" ? -1 : g[m]) " " (o[m] == "" ? -1 : o[m])
            for (s = 1; s <= 2; s++) {
                side = s == 1 ? "s" : "p"
                delete a; delete q; kk = nn[side, m] + 0
                for (i = 1; i <= kk; i++) { a[i] = L[side, m, i]; q[i] = P[side, m, i] }
                row = row " " med(a, kk) " " med(q, kk)
            }
            print row
        }
    }' "$dir/$k.out" "$dir/$k.err" >>"$dir/rows"
    k=$((k + 1))
done

# medians over the rounds, a row per setting and mode, in the settings' order
printf '%-44s %-6s %7s %9s %8s %8s %8s %8s %8s\n' setting mode GB/s of_stream src_loop \
    src_pool pul_loop pul_pool all
i=0
for s in $SETTINGS; do
    i=$((i + 1))
    for mode in sealed gmac; do
        awk -v idx="$i" -v mode="$mode" -v name="$s" '
        function med(a, m,    i, j, t, b) {
            for (i = 1; i <= m; i++) b[i] = a[i]
            for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
            return m % 2 ? b[(m + 1) / 2] : (b[m / 2] + b[m / 2 + 1]) / 2
        }
        $1 == idx && $2 == mode && $3 >= 0 { m++; for (c = 3; c <= 8; c++) v[c, m] = $c }
        END {
            if (!m) { printf "%-44s %-6s %7s\n", name, mode, "failed"; exit }
            for (c = 3; c <= 8; c++) { delete a; for (i = 1; i <= m; i++) a[i] = v[c, i]; r[c] = med(a, m) }
            all = (r[5] >= 0 ? r[5] + r[6] + r[7] + r[8] : -1)
            printf "%-44s %-6s %7.3f %9.2f %8.0f %8.0f %8.0f %8.0f %8.0f\n", name, mode, r[3], r[4], r[5], r[6], r[7], r[8], all
        }' "$dir/rows"
    done
done
echo "(GB/s and of_stream: the bench's medians of 3 pulls; CPU: ms per GiB, median of the 3 pulls;" \
    "each the median over $rounds round(s); load at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
exit $status

#!/bin/sh
# 9501-bench-compare: the Dask twins of lux bench (tools/bench/dask_twins.py)
# and tools/bench/compare, on --quick work: output shapes, not speeds.
# compare runs against a stand-in lux that knows one twin's name, so its
# table is tested before Lux has the benchmark, and against the real lux
# on a benchmark both know once there is one. Skips without Dask.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
BENCH=${LUX_SRCDIR:-.}/tools/bench
TWINS=$BENCH/dask_twins.py
COMPARE=$BENCH/compare
# the twins re-run themselves under Debian's /usr/bin/python3 when the
# python3 on PATH (pyenv, a venv) cannot import distributed
python3 "$TWINS" --version >/dev/null 2>&1 ||
    skip_all "Dask distributed is not installed (Debian: python3-distributed python3-numpy)"
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

# json_check PYTHON-EXPR: evaluated with d = the JSON document on stdin
# (or l = the list of JSON lines with -l); prints "ok" or what was wrong
json_check() {
    python3 -c '
import json, sys
mode, expr = sys.argv[1], sys.argv[2]
text = sys.stdin.read()
try:
    if mode == "-l":
        l = [json.loads(x) for x in text.splitlines() if x.strip()]
    else:
        d = json.loads(text)
    print("ok" if eval(expr) else "no: " + text[:300])
except Exception as e:
    print("error: %r: %s" % (e, text[:300]))
' "$@"
}

run python3 "$TWINS" --list
is "$rc" 0 "dask_twins --list"
is "$(echo "$out" | grep -c '^  [a-z0-9_]')" 15 "lists 15 twins"
for n in embedded_start_ms single_client_tasks_async single_client_put_gigabytes \
    n_n_actor_calls_async dag_tree_10000; do
    like "$out" "  $n " "  $n"
done
run python3 "$TWINS" no_such_bench
is "$rc" 2 "an unknown twin exits 2"

FAST=single_client_tasks_sync
run python3 "$TWINS" --json --quick "$FAST"
is "$rc" 0 "dask_twins --json --quick $FAST"
is "$(echo "$out" | json_check -l 'len(l) == 1 and l[0]["name"] == "'$FAST'" and l[0]["unit"] == "tasks/s"')" ok \
    "prints one JSON line: name, unit"
is "$(echo "$out" | json_check -l 'l[0]["value"] > 0 and l[0]["min"] <= l[0]["value"] <= l[0]["max"] and l[0]["repeats"] == 2')" ok \
    "the median of 2 repeats, within min-max"
is "$(echo "$out" | json_check -l '50 < l[0]["peak_rss_mb"] < 4000')" ok \
    "and the peak RSS of the process tree in MiB"

# a stand-in lux: knows $FAST and log_append, and prints an extra name
# first, as lux bench does when one run measures several
cat >"$tmp/fakelux" <<EOF
#!/bin/sh
case "\$1" in
--version) echo "lux 0.0-fake" ;;
bench)
    shift
    for a; do
        case "\$a" in
        --list) printf 'benchmarks:\n  $FAST   stand-in\n  log_append   stand-in\n'; exit 0 ;;
        -*) ;;
        *) name=\$a ;;
        esac
    done
    echo '{"name": "log_append", "value": 1, "unit": "events/s"}'
    echo "{\"name\": \"\$name\", \"value\": 1000, \"unit\": \"tasks/s\"}"
    ;;
*) exit 2 ;;
esac
EOF
chmod +x "$tmp/fakelux"

run python3 "$COMPARE" --no-install --quick --rounds 1 --timeout 50 --lux "$tmp/fakelux" --json \
    "$FAST" log_append
is "$rc" 0 "compare --json --quick --rounds 1 with a stand-in lux"
is "$(echo "$out" | json_check - 'd["machine"]["cores"] >= 1 and d["machine"]["mem_gib"] > 0 and len(d["machine"]["load_after"]) == 3')" ok \
    "machine: cores, memory, load"
is "$(echo "$out" | json_check - 'd["machine"]["lux_version"] == "lux 0.0-fake" and "distributed" in d["machine"]["dask_version"]')" ok \
    "both versions"
is "$(echo "$out" | json_check - '[r["name"] for r in d["results"]] == ["'$FAST'"] and d["results"][0]["lux"]["values"] == [1000]')" ok \
    "one result; the Lux line picked by name among two"
is "$(echo "$out" | json_check - 'd["results"][0]["dask"]["median"] > 0 and abs(d["results"][0]["ratio"] - 1000 / d["results"][0]["dask"]["median"]) < 1e-6')" ok \
    "ratio = Lux/Dask for a rate"
is "$(echo "$out" | json_check - 'd["results"][0]["better"] == "higher" and d["results"][0]["lux"]["rss_by"] == "compare"')" ok \
    "higher is better; Lux's RSS measured by compare when it reports none"
is "$(echo "$out" | json_check - '[s["name"] for s in d["skipped"]] == ["log_append"]')" ok \
    "a benchmark without a twin is skipped"

# the table, against the real lux: every twin it does not know yet is
# skipped; one that both know (if any yet) runs
run "$LUX" bench --list
both=
for n in $FAST embedded_start_ms single_client_get_calls single_client_put_calls; do
    case "$out" in *"  $n "*) both=$n; break ;; esac
done
if [ -z "$both" ]; then
    run python3 "$COMPARE" --no-install --lux "$LUX" $FAST dag_chain_2000
    is "$rc" 0 "compare (table), no benchmark in common with lux yet"
    like "$out" "cores" "header: the machine"
    like "$out" "Dask: dask" "header: Dask's version"
    like "$out" "xLux = how many times better Lux is" "header: the ratio's direction"
    like "$out" "# skipped $FAST: lux bench --list does not know it yet" "skip note"
    like "$out" "# skipped dag_chain_2000: lux bench --list does not know it yet" "and another"
else
    # the quick form's own default timeout (240 s): at load 30 (stop 44's
    # CI) a side took longer than 50 s
    run python3 "$COMPARE" --no-install --quick --rounds 1 --lux "$LUX" "$both"
    is "$rc" 0 "compare --quick --rounds 1 $both against lux" || diag "$err"
    like "$out" "xLux = how many times better Lux is" "header: the ratio's direction"
    like "$out" "Lux min-max" "column titles"
    row=$(echo "$out" | grep "^$both ")
    is "$(echo "$row" | awk '{print NF}')" 9 "one row of 9 columns for $both"
fi

done_testing

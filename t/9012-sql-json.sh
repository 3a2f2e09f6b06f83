#!/bin/sh
# 9012-sql-json: lux sql --json writes what a JSON parser reads back as the
# values the query returned: strings with quotes, backslashes, newlines and
# control characters, NULL, integers beyond 2^53, reals (infinities
# included, which printf's "inf" is not), BLOBs as lower-case hex, rows
# wider than one SQL function call takes (70 columns, NULL among them), and
# several statements' rows in one array.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
command -v python3 >/dev/null || skip_all "python3 is needed to parse the JSON"
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

LUX_RUN_QUIET=1 "$LUX" run --dir "$tmp/runs" --workers 1 --shards 1 \
    "${LUX_BUILDDIR:-.}/examples/hello/hello.so" 3 >/dev/null 2>"$tmp/err"
ok $? "a small run to query ($(cat "$tmp/err"))"
R=$(ls -d "$tmp"/runs/*/ | head -1)

check() { # check DESCRIPTION QUERY PYTHON-EXPRESSION-OVER-rows
    "$LUX" sql --dir "$R" --json "$2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    got=$(python3 -c '
import json, math, sys
rows = json.load(open(sys.argv[1]))
print("yes" if ('"$3"') else "no: %r" % (rows,))' "$tmp/out" 2>&1)
    is "$rc/$got" "0/yes" "$1"
    [ "$rc/$got" = "0/yes" ] || { cat "$tmp/out" "$tmp/err" | sed 's/^/# /'; }
}

check "strings, NULL, integers, reals" \
    "SELECT 'a\"b\\c' AS s, 'l1' || char(10) || 'l2' || char(1) || char(9) AS ctl, NULL AS n,
            9007199254740993 AS big, -3 AS neg, 1.5 AS r" \
    'rows == [{"s": "a\"b\\c", "ctl": "l1\nl2\u0001\t", "n": None, "big": 9007199254740993,
               "neg": -3, "r": 1.5}]'
check "infinities are numbers JSON can read" \
    "SELECT 1e999 AS inf, -1e999 AS minf" \
    'rows[0]["inf"] == math.inf and rows[0]["minf"] == -math.inf'
check "BLOBs as lower-case hex" \
    "SELECT x'00ff10ab' AS b, zeroblob(0) AS e" \
    'rows == [{"b": "00ff10ab", "e": ""}]'
cols=$(python3 -c 'print(", ".join(("NULL" if i == 65 else str(i)) + " AS c%d" % i for i in range(1, 71)))')
check "a row of 70 columns, in order, NULL kept" "SELECT $cols" \
    'list(rows[0].keys()) == ["c%d" % i for i in range(1, 71)] and rows[0]["c65"] is None and rows[0]["c70"] == 70'
check "several statements' rows in one array, and the log's own rows" \
    "SELECT 1 AS one; SELECT count(*) AS tasks FROM tasks" \
    'rows == [{"one": 1}, {"tasks": 5}]'
check "no rows: an empty array" "SELECT 1 WHERE 0" 'rows == []'

done_testing

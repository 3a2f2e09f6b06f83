#!/bin/sh
# 7201-hello: the README's first remote function works as a user would try
# it, and so does examples/hello. Checked:
#   - the C code of the README's "Your first remote function" section,
#     copied out of the README into a new file and built as the README
#     says (cc -shared -fPIC, lux.h's directory on the include path), runs
#     with `lux run` and prints the README's output line;
#   - its log holds the three tasks (two squares and an add), with the add
#     depending on both squares (task_deps);
#   - examples/hello/hello.so sums the squares of 1..100 (338350) in a tree
#     of 100 square and 99 add tasks;
#   - a bad argument is refused with exit 2 before any cluster starts.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
LUX=${LUX_BIN:-./lux}
SRC=${LUX_SRCDIR:-.}
export LUX_HOME="$TAP_TMP/home"
trap 'tap_cleanup' EXIT

# The README's code block: from its "#include <lux.h>" to LUX_MAIN, less
# the four spaces of indentation.
awk '/^    #include <lux.h>/ { on = 1 } on { sub(/^    /, ""); print }
     on && /^LUX_MAIN/ { exit }' "$SRC/README" > "$TAP_TMP/hello.c"
lines=$(wc -l < "$TAP_TMP/hello.c")
ok "$([ "$lines" -gt 30 ]; echo $?)" "the README's example copied out ($lines lines)"
cc -Wall -shared -fPIC -o "$TAP_TMP/hello.so" "$TAP_TMP/hello.c" -I "$SRC/src" \
    > "$TAP_TMP/cc.out" 2>&1
ok $? "built as the README says (cc -shared -fPIC)"
[ -s "$TAP_TMP/cc.out" ] && sed 's/^/# /' "$TAP_TMP/cc.out"

out=$(timeout -s KILL 120 "$LUX" run "$TAP_TMP/hello.so" 2>&1)
ok $? "lux run hello.so exits 0"
like "$out" "3^2 + 4^2 = 25" "...and prints the README's line"
dir=$(printf '%s\n' "$out" | sed -n 's/^log: //p')
ok "$([ -d "$dir" ]; echo $?)" "...and names its log ($dir)"
is "$("$LUX" sql --csv --dir "$dir" "SELECT function, count(*) FROM tasks
        GROUP BY function ORDER BY function" | tail -n +2 | tr '\n' ' ')" \
    "add,1 square,2 " "the log holds two squares and an add"
is "$("$LUX" sql --csv --dir "$dir" "SELECT count(*) FROM task_deps d
        JOIN tasks t ON t.task_id = d.task_id WHERE t.function = 'add'" | tail -n 1)" \
    2 "...and the add depends on both squares"
"$LUX" audit --dir "$dir" > /dev/null 2>&1
ok $? "...and its hash chains verify"

out=$(timeout -s KILL 120 "$LUX" run "$LUX_BUILDDIR/examples/hello/hello.so" 100 2>&1)
ok $? "examples/hello/hello.so 100 exits 0"
like "$out" "sum of squares 1..100 = 338350" "...with the right sum"
dir=$(printf '%s\n' "$out" | sed -n 's/^log: lux sql --dir \([^ ]*\) .*/\1/p')
is "$("$LUX" sql --csv --dir "$dir" "SELECT function, count(*) FROM tasks
        GROUP BY function ORDER BY function" | tail -n +2 | tr '\n' ' ')" \
    "add,99 square,100 " "...in 100 square and 99 add tasks"

before=$(ls "$LUX_HOME/runs" | wc -l)
timeout -s KILL 60 "$LUX" run "$LUX_BUILDDIR/examples/hello/hello.so" 0 > /dev/null 2>&1
is $? 2 "hello.so 0 is bad usage (exit 2)"
is "$(ls "$LUX_HOME/runs" | wc -l)" "$before" "...refused before a cluster started"
done_testing

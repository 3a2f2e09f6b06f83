#!/bin/sh
# 3151-structure: the source tree keeps the shape issue 27 gave it
# (tools/check-includes.sh): no circle among the #include lines of the
# src/exec files, and no source file over 1,200 lines but those the script
# lists with a reason. Also checks that the script finds a planted circle
# and a planted long file, so that a broken script cannot pass.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

SRC=${LUX_SRCDIR:-.}
tap_tmpdir
tmp=$TAP_TMP
trap 'tap_cleanup' EXIT

run sh "$SRC/tools/check-includes.sh" "$SRC"
is "$rc" 0 "the tree passes check-includes.sh"
[ "$rc" -eq 0 ] || printf '# %s\n' "$out"

# a planted circle: a.c includes b.h, b.c includes a.h
mkdir -p "$tmp/src/exec"
printf '#include "b.h"\n' >"$tmp/src/exec/a.c"
printf '#include "a.h"\n' >"$tmp/src/exec/b.c"
: >"$tmp/src/exec/a.h"
: >"$tmp/src/exec/b.h"
run sh "$SRC/tools/check-includes.sh" "$tmp"
is "$rc" 1 "a planted circle of includes fails the check"
like "$out" "form a circle" "and is named"

# a planted long file
rm -f "$tmp/src/exec/b.c"
i=0
while [ $i -lt 1201 ]; do echo "/* $i */"; i=$((i + 1)); done >"$tmp/src/exec/long.c"
run sh "$SRC/tools/check-includes.sh" "$tmp"
is "$rc" 1 "a file of 1,201 lines fails the check"
like "$out" "src/exec/long.c: 1201 lines" "and is named"
done_testing

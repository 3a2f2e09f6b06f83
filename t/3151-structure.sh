#!/bin/sh
# 3151-structure: the source tree keeps the shape issue 27 gave it
# (tools/check-includes.sh): a header of src/exec declares only its own
# part's functions, no circle among the #include lines of the src/exec
# files (no arrow may point back up), and no
# source file over 1,200 lines but those the script lists with a reason.
# Also checks that the script finds a planted circle, a circle hidden
# behind a header that declares two parts' functions (how the node
# manager's parts called each other through exec_node_int.h before issue
# 27's split) and a planted long file, so that a broken script cannot
# pass.
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

# a circle hidden behind a shared header: a.c and b.c call each other,
# and both include only common.h, which declares both
rm -f "$tmp/src/exec/a.c" "$tmp/src/exec/b.c" "$tmp/src/exec/a.h" "$tmp/src/exec/b.h"
printf '#include "common.h"\nvoid\na_run(void)\n{\n    b_run();\n}\n' >"$tmp/src/exec/a.c"
printf '#include "common.h"\nvoid\nb_run(void)\n{\n    a_run();\n}\n' >"$tmp/src/exec/b.c"
printf '/* both */\nvoid a_run(void);\nvoid b_run(void);\n' >"$tmp/src/exec/common.h"
run sh "$SRC/tools/check-includes.sh" "$tmp"
is "$rc" 1 "a header declaring another part's functions fails the check"
like "$out" "src/exec/common.h declares a_run, which a.c defines: declare it in a.h" "and names the function and its part"
# declared where they belong, the includes show the circle
printf 'void a_run(void);\n' >"$tmp/src/exec/a.h"
printf 'void b_run(void);\n' >"$tmp/src/exec/b.h"
sed -i 's/common.h/b.h/' "$tmp/src/exec/a.c"
sed -i 's/common.h/a.h/' "$tmp/src/exec/b.c"
rm -f "$tmp/src/exec/common.h"
run sh "$SRC/tools/check-includes.sh" "$tmp"
is "$rc" 1 "... and, declared in their own headers, the circle fails the check"
like "$out" "form a circle" "and is named"

# no arrow is let point up any more: the last one the script listed
# (exec_node_actor -> exec_ractor, an actor living on another node) drawn
# again in a tree with the node manager's parts fails the check
rm -f "$tmp/src/exec/a.c" "$tmp/src/exec/b.c" "$tmp/src/exec/a.h" "$tmp/src/exec/b.h"
: >"$tmp/src/exec/exec_node_int.h"
printf '#include "exec_node_int.h"\n' >"$tmp/src/exec/exec_node_actor.h"
printf '#include "exec_node_int.h"\n' >"$tmp/src/exec/exec_ractor.h"
printf '#include "exec_node_actor.h"\n#include "exec_ractor.h"\n' >"$tmp/src/exec/exec_node_actor.c"
printf '#include "exec_ractor.h"\n#include "exec_node_actor.h"\n' >"$tmp/src/exec/exec_ractor.c"
run sh "$SRC/tools/check-includes.sh" "$tmp"
is "$rc" 1 "a back arrow (exec_node_actor -> exec_ractor -> exec_node_actor) fails the check"
like "$out" "form a circle" "and is named"
rm -f "$tmp"/src/exec/exec_*

# a planted long file
i=0
while [ $i -lt 1201 ]; do echo "/* $i */"; i=$((i + 1)); done >"$tmp/src/exec/long.c"
run sh "$SRC/tools/check-includes.sh" "$tmp"
is "$rc" 1 "a file of 1,201 lines fails the check"
like "$out" "src/exec/long.c: 1201 lines" "and is named"
done_testing

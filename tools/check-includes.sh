#!/bin/sh
# check-includes.sh [SRCDIR] - the structure rules of issue 27, checked
# by make check (t/3151-structure.sh):
#   1. a header of src/exec declares only functions its own part defines:
#      a function defined in X.c is declared in X.h, nowhere else, so that
#      the #include lines say which part calls which (a header that
#      declared every part's functions would hide their circles);
#   2. the #include "..." lines among src/exec files form no circle. A
#      file's part is its name without .c/.h (exec_arena.c and
#      exec_arena.h are one part), so "A.c includes B.h and B.c includes
#      A.h" is a circle even though no header includes itself. No arrow
#      may point back up: the list of those let through while the node
#      manager was split (BACK) is gone with its last arrow (issue 27);
#   3. no source file (src/, tools/, t/ .c and .h) is over 1,200 lines,
#      but for those listed in LONG below, each with its reason.
# Prints what is wrong and exits 1; exits 0 when all is well.
top=${1:-.}
status=0
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# --- 1. each function declared in its own part's header -----------------
# "name file" of every function defined in src/exec/*.c (the name at the
# start of a line, before its parenthesis: this project's style)
for f in "$top"/src/exec/*.c; do
    [ -e "$f" ] || continue
    part=$(basename "$f" .c)
    sed -n 's/^\([a-z_][a-z0-9_]*\)(.*/\1/p' "$f" | sed "s/\$/ $part/"
done | sort -u >"$tmp/defs"
for h in "$top"/src/exec/*.h; do
    [ -e "$h" ] || continue
    part=$(basename "$h" .h)
    # declarations start a line with their type; comments, continuation
    # lines and preprocessor lines do not
    grep '^[a-z]' "$h" | sed -n 's/^[^(]*[^a-z0-9_]\([a-z_][a-z0-9_]*\)(.*/\1/p' | sort -u |
    while read -r fn; do
        owner=$(awk -v f="$fn" '$1 == f { print $2; exit }' "$tmp/defs")
        [ -n "$owner" ] && [ "$owner" != "$part" ] || continue
        echo "src/exec/$part.h declares $fn, which $owner.c defines: declare it in $owner.h"
    done
done >"$tmp/misplaced"
if [ -s "$tmp/misplaced" ]; then
    cat "$tmp/misplaced"
    status=1
fi

# --- 2. includes among src/exec files ---------------------------------
edges=$tmp/edges
for f in "$top"/src/exec/*.c "$top"/src/exec/*.h; do
    [ -e "$f" ] || continue
    from=$(basename "$f"); from=${from%.*}
    echo "$from $from" >>"$edges" # every part appears, even alone
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while read -r inc; do
        case $inc in */*) continue ;; esac # another folder's file
        [ -e "$top/src/exec/$inc" ] || continue
        to=${inc%.*}
        [ "$to" = "$from" ] || echo "$from $to" >>"$edges"
    done
done
sort -u "$edges" >"$edges.dag"
if ! tsort "$edges.dag" >/dev/null 2>"$edges.err"; then
    echo "src/exec: the #include lines form a circle (part -> part it includes):"
    sed -e 's/^tsort: //' -e 's/^[^ ]*: input contains a loop:/  a circle:/' "$edges.err"
    status=1
fi

# --- 3. file sizes ---------------------------------------------------
MAX=1200
# Files allowed over MAX for now, each with its reason; remove a line once
# its file is split.
LONG="
"
for f in "$top"/src/*/*.[ch] "$top"/tools/*.[ch] "$top"/t/*.[ch]; do
    [ -e "$f" ] || continue
    rel=${f#"$top"/}
    n=$(wc -l <"$f")
    [ "$n" -gt "$MAX" ] || continue
    if printf '%s\n' "$LONG" | grep -q "^$rel "; then
        continue
    fi
    echo "$rel: $n lines, over $MAX: split it by concern"
    status=1
done
exit $status

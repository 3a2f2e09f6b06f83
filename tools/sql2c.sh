#!/bin/sh
# sql2c.sh OUT FILE... - compile SQL files into C strings.
# Each FILE (sql/NAME.sql) becomes `const char db_sql_NAME[]` in OUT, so
# that the text in sql/ is the one home of the schema and an installed
# binary cannot lose it.
set -e
out=$1
shift
tmp=$out.tmp
{
    echo "/* Generated from sql/ by tools/sql2c.sh: do not edit. */"
    for f in "$@"; do
        name=$(basename "$f" .sql)
        echo "const char db_sql_${name}[] ="
        sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$f"
        echo "    ;"
    done
} > "$tmp"
mv "$tmp" "$out"

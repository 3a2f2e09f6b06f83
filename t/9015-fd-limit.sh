#!/bin/sh
# 9015-fd-limit: a low open-files limit gives a clear error or is raised,
# never an abort inside ZeroMQ (czmq's zsock_new_checked assertion, when a
# socket finds no descriptor: `ulimit -n 20` made lux bench, lux run and
# every program linked with liblux die with SIGABRT).
#   - a soft limit of 20 under a higher hard one: lux raises it and runs
#     (lux run of the README's first remote function; lux start/stop);
#   - a hard limit of 100: lux start refuses at once, naming the limit
#     and the fix, leaving no cluster directory behind.
# lux_init under the same limits: t/9016-fd-limit-init.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"

LUX=${LUX_BIN:-./lux}
tap_tmpdir
tmp=$TAP_TMP
D=$tmp/c
trap '"$LUX" stop --dir "$D" >/dev/null 2>&1; "$LUX" stop --dir "$tmp/c2" >/dev/null 2>&1; tap_cleanup' EXIT
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge 1024 ] || skip_all "the hard open-files limit here is $hard"

out=$( (ulimit -Sn 20 && exec "$LUX" run --dir "$tmp/runs" "${LUX_BUILDDIR:-.}/examples/hello/hello.so") 2>&1)
rc=$?
is "$rc" 0 "soft limit 20: lux run of examples/hello raises it and runs" || diag "$out"
like "$out" "sum of squares 1..10 = 385" "... and prints its answer"

out=$( (ulimit -Sn 20 && exec "$LUX" start --head --dir "$D") 2>&1)
is "$?" 0 "soft limit 20: lux start --head starts" || diag "$out"
"$LUX" stop --dir "$D" >/dev/null 2>&1

out=$( (ulimit -n 100 && exec "$LUX" start --head --dir "$tmp/c2") 2>&1)
is "$?" 1 "hard limit 100: lux start exits 1"
like "$out" "open-files limit (ulimit -n) is 100" "... naming the limit: $out"
like "$out" "ulimit -n 1024" "... and what to do"
ok "$([ ! -e "$tmp/c2" ]; echo $?)" "... and makes no cluster directory"

done_testing

#!/bin/sh
# 6096-views-nodes-state: the nodes view's state and why come from a
# node's latest death or leaving event, as its `ended` column does. A node
# the membership monitor declared dead (node_died) that comes back and then
# leaves with `lux stop` (node_left), or is declared dead twice (a restarted
# head's monitor), has several such events; before, state and why took the
# first one (ORDER BY seq, LIMIT 1) while ended took the latest: a node
# shown 'dead' with the reason of long ago next to the time it left.
# The views are loaded into a plain sqlite3 file, as sql/views.sql says
# they can be, with the events written by hand.
. "${LUX_SRCDIR:-.}/t/lib/tap.sh"
tap_tmpdir
command -v sqlite3 >/dev/null 2>&1 || skip_all "no sqlite3 command here"
S=${LUX_SRCDIR:-.}/sql
db=$TAP_TMP/v.db
sqlite3 "$db" <"$S/schema.sql" && sqlite3 "$db" <"$S/views.sql"
ok $? "schema and views load into a plain sqlite3 file"

# node aa: joined, declared dead, then left; node bb: joined, declared dead
# twice; node cc: joined only
sqlite3 "$db" "INSERT INTO event (seq, ts, kind, node, name, idx, info, size, hash) VALUES
    (1, 1000, 16, x'aa', '127.0.0.2', 7000, 'CPU=1', 33554432, x'00'),
    (2, 1100, 16, x'bb', '127.0.0.3', 7000, 'CPU=1', 33554432, x'00'),
    (3, 1200, 16, x'cc', '127.0.0.4', 7000, 'CPU=1', 33554432, x'00'),
    (4, 2000, 17, x'aa', NULL, NULL, 'no heartbeat for 5000 ms', NULL, x'00'),
    (5, 2100, 17, x'bb', NULL, NULL, 'no heartbeat for 5000 ms', NULL, x'00'),
    (6, 3000, 24, x'aa', NULL, NULL, 'lux stop', NULL, x'00'),
    (7, 3100, 17, x'bb', NULL, NULL, 'declared again after a head restart', NULL, x'00')"
ok $? "events of three nodes written"
q() { sqlite3 -separator '|' "$db" "SELECT state, why, ended FROM nodes WHERE node_id = '$1'"; }
is "$(q aa)" "left|lux stop|3000" "a node declared dead that then left shows as left, why and when"
is "$(q bb)" "dead|declared again after a head restart|3100" \
    "a node declared dead twice shows the latest reason"
is "$(q cc)" "alive||" "a node with no such event is alive"
done_testing

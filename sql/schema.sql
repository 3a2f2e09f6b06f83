-- Lux log shard schema, version 1.
--
-- One SQLite file holds one replica of one shard of the log. Everything a
-- person would filter or group by is a column of `event`; `body` and `hash`
-- are for replay and audit. The record these columns encode, byte by byte,
-- is documented in src/db/db_event.c; the views are in sql/views.sql.
--
-- IDs are 16-byte BLOBs; the views show them as 32 lower-case hex digits.
-- An object is (task, idx): its ID is the task ID followed by the return
-- index as 4 big-endian bytes, 40 hex digits.
--
-- The tables meta and event_kind, which a pulled file has too, are in
-- sql/base.sql: src/db runs it before this file.

CREATE TABLE IF NOT EXISTS event (
    seq     INTEGER PRIMARY KEY,  -- dense per shard from 1, assigned at the head
    ts      INTEGER NOT NULL,     -- ns since the Unix epoch, assigned at the head
    kind    INTEGER NOT NULL,     -- event_kind.code
    client  BLOB,                 -- who appended it; (client, cseq) is the event ID
    cseq    INTEGER,
    job     BLOB,
    task    BLOB,                 -- task (or, for object events, the creating task)
    parent  BLOB,                 -- the task that submitted this one
    actor   BLOB,
    node    BLOB,
    idx     INTEGER,              -- return index / number of returns / call number
    worker  INTEGER,              -- worker process id
    attempt INTEGER,              -- 1 for the first try
    status  INTEGER,              -- 0 ok, or a negative LUX_E* code
    t_start INTEGER,              -- ns, when the work started
    t_end   INTEGER,              -- ns, when it ended
    size    INTEGER,              -- bytes (outputs, object, module)
    name    TEXT,                 -- function, method, class, module or address
    info    TEXT,                 -- human text: error message, retry reason, resources
    fp      BLOB,                 -- content fingerprint (BLAKE2b-128) or module hash
    deps    BLOB,                 -- object IDs this task reads, 20 bytes each
    body    BLOB,                 -- bytes only replay needs (arguments, module code)
    hash    BLOB NOT NULL         -- chain hash, see src/db/db_event.c
);

-- Task and object events are found by task: lineage walks, the tasks view.
-- Children of one parent have IDs that sort in submission order
-- (src/util/util_id.h), so this index grows at its end, not at random.
CREATE INDEX IF NOT EXISTS event_task ON event(task) WHERE task IS NOT NULL;
CREATE INDEX IF NOT EXISTS event_actor ON event(actor, seq) WHERE actor IS NOT NULL;
-- Rare kinds (jobs, modules, actor restarts and deaths, nodes, notes)
-- without scanning the log. A range, not an IN list: SQLite evaluates an
-- IN list in a partial index with an ephemeral table on every insert,
-- which measured 30% of the insert cost.
CREATE INDEX IF NOT EXISTS event_rare ON event(kind) WHERE kind < 4 OR kind > 13;

-- The newest event ID seen from each client, kept in the same transaction
-- as the events, so that an append resent after a failure is not applied
-- twice. When a replica truncates an unacknowledged suffix, the rows of
-- the clients it cuts are set back to their event before the cut.
CREATE TABLE IF NOT EXISTS client_seen (
    client BLOB PRIMARY KEY,
    cseq   INTEGER NOT NULL,
    seq    INTEGER NOT NULL
) WITHOUT ROWID;

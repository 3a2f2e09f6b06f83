-- A pulled log, version 1: every shard of a cluster's log in one SQLite
-- file, written by `lux pull` (tools/lux_pull.c) and read by `lux sql`,
-- `lux audit`, `lux timeline`, `lux lineage` and a plain sqlite3.
--
-- `event` holds the columns of a replica's event table (sql/schema.sql),
-- with `shard` in front and `prev`, the chain hash of the event before it
-- in its shard, so that each row can be checked on its own: its hash is
-- BLAKE2b-128(prev || seq || its record) (doc/protocol.md section 7), and
-- a row's prev is the hash of the row before it in the shard. The views
-- are not here: `lux pull` creates those of sql/views.sql over this
-- table, with the `shard` column in front (as `lux sql --dir` shows
-- them), so that the file and a cluster answer every query alike; nor
-- are meta and event_kind, which are sql/base.sql's (run before this).
--
-- meta keys: format (lux-pull-1), cluster (its ID, 32 hex digits), shards,
-- source (where it was pulled from, last), job (a --job pull: the job's
-- ID; its file holds that job's events only, each verified in its chain on
-- the way in). shard_state: per shard, where the copy starts (first_seq,
-- and anchor, the hash before it: the genesis when first_seq is 1) and
-- the last event verified (last_seq, last_hash), from which the next pull
-- continues. checkpoint: the signed checkpoints (doc/DESIGN.md section 9)
-- the pull verified against the events it copied, with their signatures,
-- so that the file carries the proof of its own (`lux audit OUT.db
-- --public-key K` checks them again).

CREATE TABLE IF NOT EXISTS shard_state (
    shard     INTEGER PRIMARY KEY,
    genesis   BLOB NOT NULL,
    first_seq INTEGER NOT NULL,
    anchor    BLOB NOT NULL,
    last_seq  INTEGER NOT NULL,
    last_hash BLOB NOT NULL
);

CREATE TABLE IF NOT EXISTS checkpoint (
    shard INTEGER NOT NULL,
    seq   INTEGER NOT NULL,
    hash  BLOB NOT NULL,
    ts    INTEGER NOT NULL,
    sig   BLOB NOT NULL,
    PRIMARY KEY (shard, seq)
);

CREATE TABLE IF NOT EXISTS event (
    shard   INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    ts      INTEGER NOT NULL,
    kind    INTEGER NOT NULL,
    client  BLOB,
    cseq    INTEGER,
    job     BLOB,
    task    BLOB,
    parent  BLOB,
    actor   BLOB,
    node    BLOB,
    idx     INTEGER,
    worker  INTEGER,
    attempt INTEGER,
    status  INTEGER,
    t_start INTEGER,
    t_end   INTEGER,
    size    INTEGER,
    name    TEXT,
    info    TEXT,
    fp      BLOB,
    deps    BLOB,
    body    BLOB,
    hash    BLOB NOT NULL,
    prev    BLOB NOT NULL,
    PRIMARY KEY (shard, seq)
);
CREATE INDEX IF NOT EXISTS event_task ON event(task) WHERE task IS NOT NULL;
CREATE INDEX IF NOT EXISTS event_actor ON event(actor, shard, seq) WHERE actor IS NOT NULL;
CREATE INDEX IF NOT EXISTS event_rare ON event(kind) WHERE kind < 4 OR kind > 13;

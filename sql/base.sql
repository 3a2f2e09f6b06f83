-- The tables every Lux SQLite file has, version 1: a replica of a shard
-- (sql/schema.sql) and a file `lux pull` wrote (sql/pull.sql). Run before
-- either.
--
-- meta: key/value facts about the file (each file's keys are listed in its
-- own schema). event_kind: the names of event codes, for the views.

PRAGMA foreign_keys = OFF;

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS event_kind (
    code INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);


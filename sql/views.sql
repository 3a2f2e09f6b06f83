-- Lux log views, version 1: what people query. Loaded by src/db at every
-- open of a replica file (views are derived, so they are replaced rather
-- than migrated) and readable by a plain `sqlite3 replica-0.db`.
--
-- `lux sql` attaches every shard and defines a view of the same name that
-- spans all shards (with a `shard` column in front), plus the table-valued
-- function lineage(object_id).
--
-- The same text defines the views of a file whose `event` table holds
-- every shard with a `shard` column (a file `lux pull` wrote, the union
-- of archive and live files): there each comment /*shard,A*/ becomes
-- `A.shard, ` (`shard, ` without A) and /*same shard A B*/ becomes
-- `A.shard = B.shard AND ` (db_query_shardify in src/db/db_query.c).
-- Here they are comments, which a plain sqlite3 ignores.
--
-- `lux sql` over live shards makes `events` that way too, over the union
-- of every shard's raw `event` rows, not as a union of the per-shard
-- `events` views: SQLite (3.40) computes every column of a compound
-- subquery, so counting the rows of such a union converts every ID to hex
-- (3.4 s for a million events, measured); over the raw rows it computes
-- only the columns a query uses (0.7 s). The views that join events on
-- seq (tasks, jobs...) stay unions of the per-shard views there: seq is
-- unique only within a shard.

DROP VIEW IF EXISTS events;
DROP VIEW IF EXISTS tasks;
DROP VIEW IF EXISTS retries;
DROP VIEW IF EXISTS objects;
DROP VIEW IF EXISTS task_deps;
DROP VIEW IF EXISTS actors;
DROP VIEW IF EXISTS actor_calls;
DROP VIEW IF EXISTS actor_restarts;
DROP VIEW IF EXISTS nodes;
DROP VIEW IF EXISTS jobs;
DROP VIEW IF EXISTS object_locations;

-- Every event, with names instead of codes and hex instead of bytes. A kind
-- this version does not know (appended by a newer one) shows as 'kind#N'.
CREATE VIEW events AS
SELECT /*shard,e*/e.seq, e.ts,
       strftime('%Y-%m-%d %H:%M:%f', e.ts / 1e9, 'unixepoch') AS time,
       coalesce(k.name, 'kind#' || e.kind) AS kind,
       nullif(lower(hex(e.job)), '') AS job_id,
       nullif(lower(hex(e.task)), '') AS task_id,
       nullif(lower(hex(e.parent)), '') AS parent_id,
       nullif(lower(hex(e.actor)), '') AS actor_id,
       nullif(lower(hex(e.node)), '') AS node_id,
       e.idx, e.worker, e.attempt, e.status, e.t_start, e.t_end, e.size, e.name, e.info,
       nullif(lower(hex(e.fp)), '') AS fp,
       length(e.deps) / 20 AS num_deps,
       nullif(lower(hex(e.client)), '') AS client_id, e.cseq
FROM event e LEFT JOIN event_kind k ON k.code = e.kind;

-- One row per task: its first submission and its latest outcome. A task
-- can be submitted twice: a nested task submitted by its parent's attempt
-- that was then killed, and again by the parent's retry, has two
-- task_submitted events with the same ID and spec (the ID is derived from
-- the parent's and the call's index, not from the attempt). The first one
-- wins: it is when the task entered the log, and what ran, ran under that
-- ID. task_deps and object_locations read the same first submission.
CREATE VIEW tasks AS
SELECT /*shard,s*/nullif(lower(hex(s.task)), '') AS task_id,
       nullif(lower(hex(s.job)), '') AS job_id,
       nullif(lower(hex(s.parent)), '') AS parent_id,
       s.name AS function,
       s.idx AS num_returns,
       length(s.deps) / 20 AS num_deps,
       s.ts AS submitted,
       CASE f.kind WHEN 5 THEN 'finished' WHEN 6 THEN 'failed' WHEN 19 THEN 'cancelled'
                   ELSE 'pending' END AS status,
       f.attempt AS attempts,
       nullif(lower(hex(f.node)), '') AS node_id,
       f.worker,
       f.t_start, f.t_end,
       (f.t_end - f.t_start) / 1e6 AS duration_ms,
       f.size AS output_bytes,
       (SELECT count(*) FROM event r WHERE r.task = s.task AND r.kind = 7) AS retries,
       CASE WHEN f.kind IN (6, 19) THEN f.info END AS error,
       s.seq
FROM event s
LEFT JOIN event f
       ON /*same shard f s*/f.seq = (SELECT max(x.seq) FROM event x WHERE x.task = s.task AND x.kind IN (5, 6, 19))
WHERE s.kind = 4
  AND s.seq = (SELECT min(x.seq) FROM event x WHERE /*same shard x s*/x.task = s.task AND x.kind = 4);

-- Every retry of a task, with its reason.
CREATE VIEW retries AS
SELECT /*shard,r*/nullif(lower(hex(r.task)), '') AS task_id,
       (SELECT s.name FROM event s WHERE s.task = r.task AND s.kind = 4) AS function,
       r.attempt, r.info AS reason,
       nullif(lower(hex(r.node)), '') AS node_id, r.worker, r.ts, r.seq
FROM event r WHERE r.kind = 7;

-- Object events: objects put, lost (evicted or on a dead node), spilled.
CREATE VIEW objects AS
SELECT /*shard,o*/nullif(lower(hex(o.task)), '') || printf('%08x', o.idx) AS object_id,
       k.name AS event, o.size, nullif(lower(hex(o.fp)), '') AS fp,
       nullif(lower(hex(o.node)), '') AS node_id, o.info, o.ts, o.seq
FROM event o JOIN event_kind k ON k.code = o.kind
WHERE o.kind IN (8, 9, 10);

-- The dependency edges of tasks: task_id reads object_id, made by dep_task_id.
CREATE VIEW task_deps AS
WITH RECURSIVE d(/*shard,*/seq, task, deps, i) AS (
    SELECT /*shard,s*/s.seq, s.task, s.deps, 0 FROM event s WHERE s.kind = 4 AND length(s.deps) >= 20
    AND s.seq = (SELECT min(x.seq) FROM event x WHERE /*same shard x s*/x.task = s.task AND x.kind = 4)
    UNION ALL
    SELECT /*shard,*/seq, task, deps, i + 1 FROM d WHERE 20 * (i + 2) <= length(deps)
)
SELECT /*shard,*/nullif(lower(hex(task)), '') AS task_id, i AS position,
       lower(hex(substr(deps, 20 * i + 1, 20))) AS object_id,
       lower(hex(substr(deps, 20 * i + 1, 16))) AS dep_task_id,
       seq
FROM d;

CREATE VIEW actors AS
SELECT /*shard,a*/nullif(lower(hex(a.actor)), '') AS actor_id, a.name AS class,
       nullif(lower(hex(a.job)), '') AS job_id,
       nullif(lower(hex(a.node)), '') AS node_id, a.ts AS created,
       (SELECT count(*) FROM event c WHERE c.actor = a.actor AND c.kind = 12) AS calls,
       (SELECT count(*) FROM event c WHERE c.actor = a.actor AND c.kind = 13) AS checkpoints,
       (SELECT count(*) FROM event c WHERE c.actor = a.actor AND c.kind = 14) AS restarts,
       CASE WHEN EXISTS (SELECT 1 FROM event c WHERE c.actor = a.actor AND c.kind = 15)
            THEN 'dead' ELSE 'alive' END AS state,
       a.seq
FROM event a WHERE a.kind = 11;

-- Every method call of every actor, in the order the actor applied them.
CREATE VIEW actor_calls AS
SELECT /*shard,c*/nullif(lower(hex(c.actor)), '') AS actor_id, c.seq,
       nullif(lower(hex(c.task)), '') AS call_id, c.name AS method, c.idx AS call_number,
       length(c.deps) / 20 AS num_deps, c.ts
FROM event c WHERE c.kind = 12;

-- Every restart of an actor: the checkpoint it loaded (the call it
-- covers; 0: none, the constructor ran again) and how many calls it
-- re-applied from the log after it.
CREATE VIEW actor_restarts AS
SELECT /*shard,r*/nullif(lower(hex(r.actor)), '') AS actor_id, r.seq, r.ts, r.attempt AS restart,
       r.idx AS checkpoint_call, r.size AS calls_replayed,
       nullif(lower(hex(r.task)), '') AS checkpoint_task_id, r.info
FROM event r WHERE r.kind = 14;

-- Every node that joined: its address and the port of its node manager's
-- tcp endpoint (objects and tasks between nodes; NULL on an ipc cluster).
-- One row per node_joined. ended, state and why come from the node's
-- latest node_died (17) or node_left (24): a node declared dead that came
-- back and left, or was declared dead again, shows its last word.
CREATE VIEW nodes AS
SELECT /*shard,n*/nullif(lower(hex(n.node)), '') AS node_id, n.name AS address,
       n.idx AS port, n.info AS resources,
       n.ts AS joined,
       n.size AS store_bytes,
       (SELECT max(d.ts) FROM event d WHERE d.kind IN (17, 24) AND d.node = n.node) AS ended,
       CASE (SELECT d.kind FROM event d WHERE d.kind IN (17, 24) AND d.node = n.node
             ORDER BY d.ts DESC, d.seq DESC LIMIT 1)
            WHEN 17 THEN 'dead' WHEN 24 THEN 'left' ELSE 'alive' END AS state,
       (SELECT d.info FROM event d WHERE d.kind IN (17, 24) AND d.node = n.node
        ORDER BY d.ts DESC, d.seq DESC LIMIT 1) AS why,
       n.seq
FROM event n WHERE n.kind = 16;

CREATE VIEW jobs AS
SELECT /*shard,j*/nullif(lower(hex(j.job)), '') AS job_id, j.name AS entry, j.info AS args,
       j.ts AS started,
       f.ts AS finished,
       (f.ts - j.ts) / 1e9 AS seconds,
       CASE WHEN f.seq IS NULL THEN 'running' WHEN f.status = 0 THEN 'ok' ELSE 'failed' END AS state,
       f.info AS result,
       j.seq
FROM event j
LEFT JOIN event f ON f.kind = 2 AND f.job = j.job
WHERE j.kind = 1;

-- Where every object lives: one row per copy of an object on a node, as
-- the log records them: the node that made it (a task's output, one row
-- per return; an actor call's, whose task_finished says how many in idx,
-- as it has no task_submitted), put it, or pulled a copy of it from another node
-- (object_copied, issue 28), unless that node lost it since (evicted and
-- dropped: object_lost) or the node has died or left since it joined
-- (node_died, node_left: its store went with it; a node's ID is new at
-- every start). An object's events are all on its task's shard, a node's
-- on its ID's: the test for deaths spans every shard in `lux sql` and in
-- a pulled file, while a plain `sqlite3 replica-N.db` sees only the
-- deaths its own shard holds.
-- On a tcp cluster a node logs the going of every copy listed here
-- (object_lost: evicted, freed by its owner or its owner gone, a pulled
-- copy let go, a spilled task's output sent to the node that spilled it,
-- which logs object_copied for it); on one machine (ipc) a freed put or
-- output goes without an event, so its row can outlive it. A node asked
-- for a copy it no longer has says so, and the pull asks the next source.
CREATE VIEW object_locations AS
WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 255),
made(/*shard,*/task, idx, node, how, size, fp, ts, seq) AS (
    SELECT /*shard,*/e.task, e.idx, e.node,
           CASE e.kind WHEN 8 THEN 'put' ELSE 'copy' END, e.size, e.fp, e.ts, e.seq
    FROM event e WHERE e.kind IN (8, 25)
    UNION ALL
    SELECT /*shard,f*/f.task, r.i, f.node, 'made', CASE WHEN s.idx = 1 THEN f.size END,
           NULL, f.ts, f.seq
    FROM event f JOIN event s ON /*same shard s f*/s.task = f.task AND s.kind = 4
         AND s.seq = (SELECT min(x.seq) FROM event x WHERE /*same shard x s*/x.task = s.task AND x.kind = 4)
    JOIN r ON r.i < s.idx
    WHERE f.kind = 5
    UNION ALL
    SELECT /*shard,f*/f.task, r.i, f.node, 'made', CASE WHEN f.idx = 1 THEN f.size END,
           NULL, f.ts, f.seq
    FROM event f JOIN r ON r.i < f.idx
    WHERE f.kind = 5 AND f.idx IS NOT NULL
)
SELECT /*shard,m*/lower(hex(m.task)) || printf('%08x', m.idx) AS object_id,
       nullif(lower(hex(m.node)), '') AS node_id, m.how, m.size,
       nullif(lower(hex(m.fp)), '') AS fp, m.ts, m.seq
FROM made m
WHERE NOT EXISTS (SELECT 1 FROM event l WHERE /*same shard l m*/l.kind = 9 AND l.task = m.task
                  AND l.idx = m.idx AND l.node = m.node AND l.seq > m.seq)
  AND (m.node IS NULL
       OR m.node NOT IN (SELECT d.node FROM event d WHERE d.kind IN (17, 24) AND d.node IS NOT NULL));

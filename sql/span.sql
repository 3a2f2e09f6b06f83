-- Views `lux sql` defines over all shards where a UNION ALL of the
-- per-shard views of sql/views.sql would be slow. SQLite (3.40) computes
-- every column of a compound subquery, so counting rows of a union of
-- per-shard `events` views would convert every ID to hex (3.4 s for a
-- million events, measured); this definition over the spanning raw `event`
-- lets it compute only the columns a query uses (0.7 s).
--
-- Here `event` is the union of every shard's event table, with a `shard`
-- column in front, and `event_kind` is shard 0's. Views that join events
-- on seq (tasks, jobs...) stay unions of the per-shard views: seq is only
-- unique within a shard.

CREATE TEMP VIEW events AS
SELECT e.shard, e.seq, e.ts,
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

-- The lineage of one object: every task it depends on, transitively, with
-- the shortest distance. Works with a plain sqlite3 on one shard file
-- (dependencies made in other shards are then not followed).
--
-- Replace the X'...' literal by the first 32 hex digits of the object ID
-- (its task). In `lux sql`, which attaches every shard, use the function
-- instead:  SELECT * FROM lineage('<40 hex digits>');
--
-- The recursion has two steps: move to the next dependency of a task, and
-- move to the task that created a dependency. UNION drops repeated rows.

WITH RECURSIVE walk(task, deps, i, depth) AS (
    SELECT e.task, e.deps, 0, 0 FROM event e
    WHERE e.task = X'00000000000000000000000000000000' AND e.kind = 4
    UNION
    SELECT w.task, w.deps, w.i + 1, w.depth FROM walk w
    WHERE 20 * (w.i + 2) <= length(w.deps)
    UNION
    SELECT e.task, e.deps, 0, w.depth + 1 FROM walk w
    JOIN event e ON e.task = substr(w.deps, 20 * w.i + 1, 16) AND e.kind = 4
)
SELECT lower(hex(w.task)) AS task_id, min(w.depth) AS depth, e.name AS function
FROM walk w JOIN event e ON e.task = w.task AND e.kind = 4
GROUP BY w.task ORDER BY depth, task_id;

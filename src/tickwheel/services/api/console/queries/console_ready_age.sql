-- console_ready_age: per priority, the executions waiting for a worker and the oldest wait
--
-- A request is ready while its attempt has no `leased` (or `failed`, `skipped`) event and its
-- execution has no terminal outcome (succeeded, cancelled, dead_lettered), counting only what
-- happened by `as_of`. Columns: priority, waiting, oldest_requested_at, oldest_execution_id,
-- oldest_job_id. The age is what the overview shows (age, never depth, decides an alert).
--
-- @param as_of  the instant to judge at (ISO 8601)
--
-- Correct with duplicate rows: FINAL on both tables; DISTINCT sets.
WITH
    parseDateTime64BestEffort({as_of:String}, 3, 'UTC') AS judged_at,
    ended AS
    (
        SELECT DISTINCT execution_id FROM execution_events FINAL
        WHERE event_type IN ('succeeded', 'cancelled', 'dead_lettered') AND event_time <= judged_at
    ),
    taken AS
    (
        SELECT DISTINCT execution_id, attempt FROM execution_events FINAL
        WHERE event_type IN ('leased', 'failed', 'skipped') AND event_time <= judged_at
    )
SELECT
    priority,
    count() AS waiting,
    min(event_time) AS oldest_requested_at,
    argMin(execution_id, event_time) AS oldest_execution_id,
    argMin(job_id, event_time) AS oldest_job_id
FROM execution_requests FINAL
WHERE event_time <= judged_at
  AND execution_id NOT IN (SELECT execution_id FROM ended)
  AND (execution_id, attempt) NOT IN (SELECT execution_id, attempt FROM taken)
GROUP BY priority
ORDER BY priority;

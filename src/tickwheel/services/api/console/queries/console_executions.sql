-- console_executions: one job's newest executions, for the console's job page
--
-- Columns: execution_id, scheduled_time, attempts (highest attempt seen), last_event (type
-- of the newest event), last_event_time; newest slot first, at most `limit` rows.
--
-- @param job_id  the job
-- @param limit   how many rows at most
SELECT
    execution_id,
    min(scheduled_time) AS scheduled_time,
    max(attempt) AS attempts,
    argMax(event_type, (event_time, event_id)) AS last_event,
    max(event_time) AS last_event_time
FROM execution_events FINAL
WHERE job_id = {job_id:String} AND event_type != 'skipped'
GROUP BY execution_id
ORDER BY scheduled_time DESC, execution_id
LIMIT {limit:UInt32};

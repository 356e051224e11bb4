-- console_executions: one job's most recently active executions, for the console's job page
--
-- Columns: execution_id, scheduled_time, attempts (highest attempt seen), last_event (type
-- of the newest event), last_event_time; the `limit` executions with the newest events
-- (a backfilled or retried old slot counts as recent), newest slot first.
--
-- The inner query walks the job's events newest first along the table's order
-- (job_id, event_time) and stops after `limit` executions, so the page reads the tail of
-- the job's history instead of grouping every execution it ever had (a month of a
-- per-minute job is 43,200). No FINAL: min, max and argMax over (event_time, event_id) are
-- the same with a duplicated row.
--
-- @param job_id  the job
-- @param limit   how many rows at most
SELECT
    execution_id,
    min(scheduled_time) AS scheduled_time,
    max(attempt) AS attempts,
    argMax(event_type, (event_time, event_id)) AS last_event,
    max(event_time) AS last_event_time
FROM execution_events
WHERE job_id = {job_id:String} AND event_type != 'skipped'
  AND execution_id IN (
      SELECT execution_id
      FROM execution_events
      WHERE job_id = {job_id:String} AND event_type != 'skipped'
      ORDER BY event_time DESC
      LIMIT 1 BY execution_id
      LIMIT {limit:UInt32}
  )
GROUP BY execution_id
ORDER BY scheduled_time DESC, execution_id
LIMIT {limit:UInt32};

-- console_job_outcome: one job's last outcome and last success, for the console's job page
--
-- The columns of console_job_outcomes, for the job `job_id` alone (zero or one row): the job
-- page reads its own job's events (the table is ordered by job_id first) rather than every
-- job's outcome (decision 0137). A fenced attempt's outcome is not accepted, as there: a
-- change to that rule is made in both files.
--
-- @param job_id  the job
WITH fenced AS
(
    SELECT DISTINCT execution_id, attempt
    FROM execution_events FINAL
    WHERE job_id = {job_id:String} AND event_type = 'fenced'
)
SELECT
    job_id,
    argMax(event_type, (event_time, event_id)) AS last_outcome,
    max(event_time) AS last_outcome_time,
    maxIf(event_time, event_type = 'succeeded') AS last_success_time,
    countIf(event_type = 'succeeded') AS successes
FROM execution_events FINAL
WHERE job_id = {job_id:String}
  AND event_type IN ('succeeded', 'failed', 'cancelled', 'dead_lettered')
  AND (execution_id, attempt) NOT IN (SELECT execution_id, attempt FROM fenced)
GROUP BY job_id;

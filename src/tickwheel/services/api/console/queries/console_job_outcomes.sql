-- console_job_outcomes: each job's last outcome and last success, for the console's jobs page
--
-- One row per job with an outcome in the history: last_outcome (succeeded, failed,
-- cancelled, dead_lettered), last_outcome_time, last_success_time (NULL if none). A fenced
-- attempt's outcome is not accepted, so it is left out (as the timeline leaves it out).
--
-- Correct with duplicate rows: FINAL, and max/argMax do not count. The job page's one-job
-- twin is console_job_outcome.sql: a change to the fenced rule is made in both files.
WITH fenced AS
(
    SELECT DISTINCT execution_id, attempt
    FROM execution_events FINAL
    WHERE event_type = 'fenced'
)
SELECT
    job_id,
    argMax(event_type, (event_time, event_id)) AS last_outcome,
    max(event_time) AS last_outcome_time,
    maxIf(event_time, event_type = 'succeeded') AS last_success_time,
    countIf(event_type = 'succeeded') AS successes
FROM execution_events FINAL
WHERE event_type IN ('succeeded', 'failed', 'cancelled', 'dead_lettered')
  AND (execution_id, attempt) NOT IN (SELECT execution_id, attempt FROM fenced)
GROUP BY job_id
ORDER BY job_id;

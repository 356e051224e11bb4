-- workflow_step_stats: step duration and failure rate by definition version
--
-- For the steps (of every kind: task, sleep, approval) first started in the window, per
-- definition_id, definition_version and step_id:
--   instances           instances that ran the step
--   attempts            task attempts scheduled (distinct instance, attempt)
--   failed_attempts     attempts that failed (step_failed, final or retried)
--   attempt_failure_rate = failed_attempts / attempts
--   succeeded, failed, skipped   steps whose end was that (failed: for good)
--   duration_p50_ms, duration_p95_ms, duration_max_ms   first start to success, over the
--                       steps that succeeded (0 when none did)
-- Compensations are not counted here (see workflow_compensations). Rates are rounded to 4
-- decimals; 0 when the denominator is 0.
--
-- @param since  window start, inclusive, on the step's first start (ISO 8601)
-- @param until  window end, exclusive
--
-- Correct with duplicate rows: FINAL, then flags and minimums per step.
WITH
    per_step AS
    (
        SELECT
            definition_id, definition_version, step_id, workflow_id,
            minIf(event_time, event_type IN ('step_scheduled', 'sleep_started', 'approval_requested'))
                AS started,
            uniqExactIf(attempt, event_type = 'step_scheduled') AS n_attempts,
            uniqExactIf(attempt, event_type = 'step_failed') AS n_failed,
            argMaxIf(event_type, seq,
                     event_type IN ('step_succeeded', 'step_skipped', 'step_cancelled')
                     OR (event_type = 'step_failed' AND JSONExtractBool(details, 'final')))
                AS ended_as,
            minIf(event_time, event_type = 'step_succeeded') AS succeeded_at
        FROM workflow_events FINAL
        WHERE step_id IS NOT NULL AND NOT startsWith(event_type, 'compensation_')
        GROUP BY definition_id, definition_version, step_id, workflow_id
        HAVING countIf(event_type IN ('step_scheduled', 'sleep_started', 'approval_requested')) > 0
           AND started >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
           AND started < parseDateTime64BestEffort({until:String}, 3, 'UTC')
    )
SELECT
    definition_id, definition_version, step_id,
    count() AS instances,
    sum(n_attempts) AS attempts,
    sum(n_failed) AS failed_attempts,
    round(if(attempts = 0, 0, failed_attempts / attempts), 4) AS attempt_failure_rate,
    countIf(ended_as = 'step_succeeded') AS succeeded,
    countIf(ended_as = 'step_failed') AS failed,
    countIf(ended_as = 'step_skipped') AS skipped,
    toInt64(quantileExactIf(0.5)(toUnixTimestamp64Milli(succeeded_at) - toUnixTimestamp64Milli(started),
                                 ended_as = 'step_succeeded')) AS duration_p50_ms,
    toInt64(quantileExactIf(0.95)(toUnixTimestamp64Milli(succeeded_at) - toUnixTimestamp64Milli(started),
                                  ended_as = 'step_succeeded')) AS duration_p95_ms,
    maxIf(toUnixTimestamp64Milli(succeeded_at) - toUnixTimestamp64Milli(started),
          ended_as = 'step_succeeded') AS duration_max_ms
FROM per_step
GROUP BY definition_id, definition_version, step_id
ORDER BY definition_id, definition_version, step_id;

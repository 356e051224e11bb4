-- failure_rates: failure and retry rates by job type
--
-- For the executions whose first request falls in the window, per job type:
--   executions          distinct executions
--   attempts            distinct (execution, attempt) that were requested
--   finished_attempts   attempts with an accepted outcome (succeeded, failed or cancelled,
--                       and not fenced: a fenced outcome came from a stale attempt)
--   failed_attempts     attempts whose accepted outcome is failed
--   attempt_failure_rate = failed_attempts / finished_attempts
--   retried             executions with more than one attempt (retry or expired lease)
--   retry_rate          = retried / executions
--   succeeded           executions with an accepted success
--   dead_lettered       executions dead-lettered (permanent error or attempts exhausted)
--   dead_letter_rate    = dead_lettered / executions
-- Rates are rounded to 4 decimals; 0 when the denominator is 0.
--
-- @param since  window start, inclusive, on the first request's event_time (ISO 8601)
-- @param until  window end, exclusive
--
-- Correct with duplicate rows: FINAL plus per-(execution, attempt) flags (a copy of an
-- event can only set a flag that is already set).
WITH
    in_window AS
    (
        SELECT execution_id
        FROM execution_events
        WHERE event_type = 'requested'
        GROUP BY execution_id
        HAVING min(event_time) >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
           AND min(event_time) < parseDateTime64BestEffort({until:String}, 3, 'UTC')
    ),
    per_attempt AS
    (
        SELECT
            execution_id,
            attempt,
            any(job_type) AS attempt_kind,
            countIf(event_type = 'requested') > 0 AS requested,
            countIf(event_type = 'fenced') > 0 AS fenced,
            countIf(event_type IN ('succeeded', 'failed', 'cancelled')) > 0 AS finished,
            countIf(event_type = 'failed') > 0 AS failed,
            countIf(event_type = 'succeeded') > 0 AS succeeded,
            countIf(event_type = 'dead_lettered') > 0 AS dead_lettered
        FROM execution_events FINAL
        WHERE execution_id IN (SELECT execution_id FROM in_window)
        GROUP BY execution_id, attempt
    ),
    per_execution AS
    (
        SELECT
            execution_id,
            any(attempt_kind) AS kind,
            countIf(requested AND attempt >= 1) AS n_attempts,
            countIf(finished AND NOT fenced) AS n_finished,
            countIf(failed AND NOT fenced) AS n_failed,
            max(requested AND attempt > 1) AS was_retried,
            max(succeeded AND NOT fenced) AS has_success,
            max(dead_lettered) AS was_dead_lettered
        FROM per_attempt
        GROUP BY execution_id
    )
SELECT
    kind AS job_type,
    count() AS executions,
    sum(n_attempts) AS attempts,
    sum(n_finished) AS finished_attempts,
    sum(n_failed) AS failed_attempts,
    round(if(finished_attempts = 0, 0, failed_attempts / finished_attempts), 4) AS attempt_failure_rate,
    toUInt64(sum(was_retried)) AS retried,
    round(retried / executions, 4) AS retry_rate,
    toUInt64(sum(has_success)) AS succeeded,
    toUInt64(sum(was_dead_lettered)) AS dead_lettered,
    round(dead_lettered / executions, 4) AS dead_letter_rate
FROM per_execution
GROUP BY kind
ORDER BY kind;

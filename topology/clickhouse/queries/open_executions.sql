-- open_executions: executions still without a terminal outcome
--
-- Every execution requested by `as_of` that, counting only events up to `as_of`, has no
-- terminal outcome: no accepted success or cancellation (an outcome of an attempt that was
-- fenced is not accepted) and no dead letter. Columns: execution_id, job_id, job_type,
-- tenant_id, scheduled_time, attempts (highest attempt requested), last_event (type),
-- last_event_time, open_for_s (since the first request), quiet_for_s (since the last event).
--
-- @param as_of  the instant to judge at (ISO 8601); pass the current time for "now"
--
-- Correct with duplicate rows: FINAL, then flags per (execution, attempt); ties between
-- events at the same instant are broken by the life-cycle order, then event_id.
WITH
    parseDateTime64BestEffort({as_of:String}, 3, 'UTC') AS judged_at,
    per_attempt AS
    (
        SELECT
            execution_id,
            attempt,
            any(job_id) AS attempt_job,
            any(job_type) AS attempt_type,
            any(tenant_id) AS attempt_tenant,
            min(scheduled_time) AS attempt_slot,
            countIf(event_type = 'requested') > 0 AS requested,
            minIf(event_time, event_type = 'requested') AS requested_at,
            countIf(event_type IN ('succeeded', 'cancelled')) > 0 AS ended,
            countIf(event_type = 'fenced') > 0 AS fenced,
            countIf(event_type = 'dead_lettered') > 0 AS dead_lettered,
            max((
                event_time,
                indexOf(['requested', 'leased', 'heartbeat', 'failed', 'succeeded', 'cancelled',
                         'fenced', 'retry_scheduled', 'dead_lettered'], event_type),
                event_id,
                event_type
            )) AS last_event_key
        FROM execution_events FINAL
        WHERE event_time <= judged_at AND event_type != 'skipped'
        GROUP BY execution_id, attempt
    )
SELECT
    execution_id,
    any(attempt_job) AS job_id,
    any(attempt_type) AS job_type,
    any(attempt_tenant) AS tenant_id,
    min(attempt_slot) AS scheduled_time,
    maxIf(attempt, requested) AS attempts,
    max(last_event_key).4 AS last_event,
    max(last_event_key).1 AS last_event_time,
    intDiv(toUnixTimestamp64Milli(judged_at) - toUnixTimestamp64Milli(minIf(requested_at, requested)), 1000) AS open_for_s,
    intDiv(toUnixTimestamp64Milli(judged_at) - toUnixTimestamp64Milli(last_event_time), 1000) AS quiet_for_s
FROM per_attempt
GROUP BY execution_id
HAVING max(requested) AND NOT max(dead_lettered) AND NOT max(ended AND NOT fenced)
ORDER BY scheduled_time, execution_id;

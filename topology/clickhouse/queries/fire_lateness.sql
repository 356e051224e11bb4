-- fire_lateness: fire lateness p50/p99 by job type and hour
--
-- Fire lateness of an occurrence = when its first request was emitted (the `requested`
-- event of attempt 1) minus its fire_time (the slot plus jitter): how late the timer fired
-- it. Only occurrences fired from the schedule count (trigger `scheduled` or `catch_up`; a
-- manual trigger or a backfill has no lateness). Hours are UTC hours of fire_time.
-- Columns: job_type, hour, occurrences, late (flagged late by the timer: fired after a
-- miss), p50_ms, p99_ms, max_ms. Percentiles are exact (quantileExact).
--
-- @param since  window start, inclusive, on fire_time (any ISO 8601 instant, e.g. 2026-03-01T00:00:00Z)
-- @param until  window end, exclusive
--
-- Correct with duplicate rows: FINAL collapses copies of an event, and each occurrence is
-- reduced to one row per execution_id before the percentiles.
SELECT
    type_of_job AS job_type,
    toStartOfHour(fired_for) AS hour,
    count() AS occurrences,
    countIf(flagged_late) AS late,
    toInt64(quantileExact(0.5)(lateness_ms)) AS p50_ms,
    toInt64(quantileExact(0.99)(lateness_ms)) AS p99_ms,
    max(lateness_ms) AS max_ms
FROM
(
    SELECT
        execution_id,
        any(job_type) AS type_of_job,
        assumeNotNull(any(fire_time)) AS fired_for,
        min(toUnixTimestamp64Milli(event_time)) - toUnixTimestamp64Milli(fired_for) AS lateness_ms,
        -- the timer writes reason = trigger, with ':late' appended when it fired after a miss
        splitByChar(':', ifNull(any(reason), ''))[1] AS trigger,
        endsWith(ifNull(any(reason), ''), ':late') AS flagged_late
    FROM execution_events FINAL
    WHERE event_type = 'requested'
      AND attempt = 1
      AND fire_time IS NOT NULL
      AND fire_time >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
      AND fire_time < parseDateTime64BestEffort({until:String}, 3, 'UTC')
    GROUP BY execution_id
)
WHERE trigger IN ('scheduled', 'catch_up')
GROUP BY type_of_job, hour
ORDER BY type_of_job, hour;

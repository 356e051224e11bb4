-- schedule_audit: expected versus actual occurrences of one recurring job
--
-- One row per expected occurrence (the slots the schedule says the job owed, computed by
-- the scheduling core and passed in as epoch milliseconds; `tickwheel history audit JOB
-- --from ... --to ...` computes them from the job's definitions and runs this query) with
-- what became of it:
--   status        fired (a request was emitted for the slot), skipped (the timer recorded
--                 it as skipped by policy, one by one or inside a skipped range), or missing
--                 (nothing recorded: the promise "every occurrence fires" was broken)
--   execution_id, trigger (scheduled, catch_up, backfill, ...), fire_time, requested_at,
--   lateness_ms (requested_at - fire_time), outcome (succeeded, dead_lettered, cancelled,
--   or '' while none is accepted), skip_reason.
--
-- @param job_id    the job
-- @param expected  the expected slots, Array(Int64) of epoch milliseconds, e.g. [1767225600000,1767225660000]
--
-- Correct with duplicate rows: FINAL, one row per slot from each side, outcomes per
-- execution from attempt sets.
WITH
    {expected:Array(Int64)} AS expected_slots,
    fromUnixTimestamp64Milli(toInt64(arrayMin(expected_slots)), 'UTC') AS first_slot,
    fromUnixTimestamp64Milli(toInt64(arrayMax(expected_slots)), 'UTC') AS last_slot,
    -- Ranges of slots the timer skipped as one summary event (details: after, through).
    (
        SELECT groupArray((
            JSONExtractInt(details, 'after'),
            JSONExtractInt(details, 'through'),
            ifNull(reason, '')))
        FROM execution_events FINAL
        WHERE job_id = {job_id:String}
          AND event_type = 'skipped'
          AND endsWith(ifNull(reason, ''), ':range')
    ) AS skip_ranges,
    arrayFirst(r -> slot_ms > r.1 AND slot_ms <= r.2, skip_ranges).3 AS range_reason
SELECT
    fromUnixTimestamp64Milli(slot_ms, 'UTC') AS scheduled_time,
    multiIf(
        fired_execution != '', 'fired',
        single_skip_reason != '' OR range_reason != '', 'skipped',
        'missing') AS status,
    if(fired_execution != '', fired_execution, skipped_execution) AS execution_id,
    if(fired_execution != '', fired_trigger, '') AS trigger,
    if(fired_execution != '', toNullable(fired_for), NULL) AS fire_time,
    if(fired_execution != '', toNullable(first_requested), NULL) AS requested_at,
    if(fired_execution != '',
       toNullable(toUnixTimestamp64Milli(first_requested) - toUnixTimestamp64Milli(fired_for)),
       NULL) AS lateness_ms,
    if(fired_execution != '', outcome, '') AS outcome,
    multiIf(fired_execution != '', '', single_skip_reason != '', single_skip_reason, range_reason) AS skip_reason
FROM (SELECT arrayJoin(expected_slots) AS slot_ms) AS expected
LEFT JOIN
(
    SELECT
        toUnixTimestamp64Milli(scheduled_time) AS slot_ms,
        argMin(execution_id, (event_time, event_id)) AS fired_execution,
        min(event_time) AS first_requested,
        assumeNotNull(argMin(fire_time, (event_time, event_id))) AS fired_for,
        splitByChar(':', ifNull(argMin(reason, (event_time, event_id)), ''))[1] AS fired_trigger
    FROM execution_events FINAL
    WHERE job_id = {job_id:String}
      AND event_type = 'requested'
      AND attempt = 1
      AND scheduled_time >= first_slot AND scheduled_time <= last_slot
    GROUP BY slot_ms
) AS fired USING (slot_ms)
LEFT JOIN
(
    SELECT
        toUnixTimestamp64Milli(scheduled_time) AS slot_ms,
        min(execution_id) AS skipped_execution,
        min(ifNull(reason, '')) AS single_skip_reason
    FROM execution_events FINAL
    WHERE job_id = {job_id:String}
      AND event_type = 'skipped'
      AND NOT endsWith(ifNull(reason, ''), ':range')
      AND scheduled_time >= first_slot AND scheduled_time <= last_slot
    GROUP BY slot_ms
) AS skipped USING (slot_ms)
LEFT JOIN
(
    SELECT
        execution_id AS fired_execution,
        groupUniqArrayIf(attempt, event_type = 'succeeded') AS succeeded_attempts,
        groupUniqArrayIf(attempt, event_type = 'cancelled') AS cancelled_attempts,
        groupUniqArrayIf(attempt, event_type = 'fenced') AS fenced_attempts,
        multiIf(
            countIf(event_type = 'dead_lettered') > 0, 'dead_lettered',
            notEmpty(arrayFilter(a -> NOT has(fenced_attempts, a), succeeded_attempts)), 'succeeded',
            notEmpty(arrayFilter(a -> NOT has(fenced_attempts, a), cancelled_attempts)), 'cancelled',
            '') AS outcome
    FROM execution_events FINAL
    WHERE job_id = {job_id:String}
      AND scheduled_time >= first_slot AND scheduled_time <= last_slot
    GROUP BY execution_id
) AS outcomes USING (fired_execution)
ORDER BY slot_ms;

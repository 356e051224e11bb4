-- workflow_open_steps: steps still running or waiting, stuck ones first
--
-- Every step, counting only events up to `as_of`, whose last life-cycle event left it running
-- (a task attempt out), waiting (a sleep, an approval) or cancelling, in an instance that is
-- not finished. Columns: workflow_id, definition_id, definition_version, step_id, status,
-- attempt, running_since (when the step started, after its last end if an operator retried
-- it), running_for_s (seconds, to the millisecond), expected_duration_s (its
-- expectedDuration, when the definition gives one: read from the overdue timer the
-- orchestrator started with the step), overdue_at, stuck (running past expectedDuration, or
-- the orchestrator has recorded step_overdue).
-- Stuck steps first, then the longest-running.
--
-- @param as_of  the instant to judge at (ISO 8601); pass the current time for "now"
--
-- Correct with duplicate rows: FINAL; every aggregate is a max/min/any over a step's events.
WITH
    parseDateTime64BestEffort({as_of:String}, 3, 'UTC') AS judged_at,
    events AS
    (
        SELECT
            workflow_id, definition_id, definition_version, step_id, seq, event_time,
            event_type, attempt, status, details,
            multiIf(event_type = 'step_scheduled', 'running',
                    event_type IN ('sleep_started', 'approval_requested'), 'waiting',
                    event_type = 'step_cancelling', 'cancelling',
                    event_type = 'step_succeeded', 'succeeded',
                    event_type = 'step_failed' AND JSONExtractBool(details, 'final'), 'failed',
                    event_type = 'step_skipped', 'skipped',
                    event_type = 'step_cancelled', 'cancelled',
                    '') AS step_status
        FROM workflow_events FINAL
        WHERE event_time <= judged_at
    ),
    instances AS
    (
        SELECT workflow_id, argMax(status, seq) AS instance_status
        FROM events
        GROUP BY workflow_id
    ),
    step_events AS
    (
        -- Each step event, with the seq of the step's last end (0: never ended): what came
        -- before an end belongs to a run an operator has since retried.
        SELECT *, max(if(step_status IN ('succeeded', 'failed', 'skipped', 'cancelled'), seq, 0))
                      OVER (PARTITION BY workflow_id, step_id) AS ended_seq
        FROM events
        WHERE step_id IS NOT NULL AND NOT startsWith(event_type, 'compensation_')
    ),
    steps AS
    (
        SELECT
            workflow_id,
            any(definition_id) AS definition_id,
            any(definition_version) AS definition_version,
            step_id,
            argMaxIf(step_status, seq, step_status != '') AS status,
            max(attempt) AS attempt,
            minIf(event_time, step_status IN ('running', 'waiting') AND seq > ended_seq)
                AS running_since,
            -- The overdue timer the step started with: start_timers is [[id, fire_at_ms], ...].
            maxIf(
                arrayMax(arrayMap(t -> JSONExtractInt(t, 2), arrayFilter(
                    t -> JSONExtractString(t, 1) = concat('overdue:', step_id),
                    JSONExtractArrayRaw(details, 'start_timers')))),
                seq > ended_seq AND arrayExists(
                    t -> JSONExtractString(t, 1) = concat('overdue:', step_id),
                    JSONExtractArrayRaw(details, 'start_timers'))
            ) AS overdue_at_ms,
            countIf(event_type = 'step_overdue' AND seq > ended_seq) > 0 AS overdue_recorded
        FROM step_events
        GROUP BY workflow_id, step_id
    )
SELECT
    workflow_id, definition_id, definition_version, step_id, status, attempt, running_since,
    round((toUnixTimestamp64Milli(judged_at) - toUnixTimestamp64Milli(running_since)) / 1000, 3)
        AS running_for_s,
    if(overdue_at_ms > 0,
       round((overdue_at_ms - toUnixTimestamp64Milli(running_since)) / 1000, 3), NULL)
        AS expected_duration_s,
    if(overdue_at_ms > 0, fromUnixTimestamp64Milli(overdue_at_ms, 'UTC'), NULL) AS overdue_at,
    toBool(overdue_recorded
           OR (overdue_at_ms > 0 AND toUnixTimestamp64Milli(judged_at) > overdue_at_ms)) AS stuck
FROM steps
INNER JOIN instances USING (workflow_id)
WHERE status IN ('running', 'waiting', 'cancelling')
  AND coalesce(instance_status, '') NOT IN ('succeeded', 'failed', 'cancelled', 'compensated')
ORDER BY stuck DESC, running_for_s DESC, workflow_id, step_id;

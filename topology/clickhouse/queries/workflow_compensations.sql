-- workflow_compensations: compensations per definition
--
-- For the instances started in the window, per definition_id and definition_version:
--   instances            instances started
--   compensating         instances that ran at least one compensation
--   compensations        steps compensated (distinct instance, step)
--   comp_attempts        compensation attempts scheduled
--   comp_succeeded, comp_failed, comp_skipped   how those compensations ended (failed: for
--                        good, dead-lettered; skipped: by an operator)
--   blocked              instances ever blocked on a failed compensation
--   ended_succeeded, ended_compensated, ended_failed, ended_cancelled   instances whose
--                        last end was that (an operator may reopen a failed instance)
--
-- @param since  window start, inclusive, on workflow_started (ISO 8601)
-- @param until  window end, exclusive
--
-- Correct with duplicate rows: FINAL, then flags per (instance, step).
WITH
    started AS
    (
        SELECT workflow_id
        FROM workflow_events FINAL
        WHERE event_type = 'workflow_started'
          AND event_time >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
          AND event_time < parseDateTime64BestEffort({until:String}, 3, 'UTC')
    ),
    per_step AS
    (
        SELECT
            workflow_id, step_id,
            uniqExactIf(attempt, event_type = 'compensation_scheduled') AS n_attempts,
            countIf(event_type = 'compensation_succeeded') > 0 AS succeeded,
            countIf(event_type = 'compensation_failed' AND JSONExtractBool(details, 'final')) > 0
                AS failed,
            countIf(event_type = 'compensation_skipped') > 0 AS skipped
        FROM workflow_events FINAL
        WHERE workflow_id IN (SELECT workflow_id FROM started)
          AND startsWith(event_type, 'compensation_') AND step_id IS NOT NULL
        GROUP BY workflow_id, step_id
    ),
    per_instance AS
    (
        SELECT
            workflow_id, any(definition_id) AS definition_id,
            any(definition_version) AS definition_version,
            countIf(event_type = 'workflow_blocked') > 0 AS was_blocked,
            argMaxIf(event_type, seq, event_type IN ('workflow_succeeded', 'workflow_failed',
                     'workflow_cancelled', 'workflow_compensated')) AS ended_as
        FROM workflow_events FINAL
        WHERE workflow_id IN (SELECT workflow_id FROM started)
        GROUP BY workflow_id
    ),
    comp_per_instance AS
    (
        SELECT workflow_id, count() AS n_steps, sum(n_attempts) AS n_attempts,
               countIf(succeeded) AS n_succeeded, countIf(failed AND NOT succeeded) AS n_failed,
               countIf(skipped) AS n_skipped
        FROM per_step
        GROUP BY workflow_id
    )
SELECT
    definition_id, definition_version,
    count() AS instances,
    countIf(n_steps > 0) AS compensating,
    sum(n_steps) AS compensations,
    sum(n_attempts) AS comp_attempts,
    sum(n_succeeded) AS comp_succeeded,
    sum(n_failed) AS comp_failed,
    sum(n_skipped) AS comp_skipped,
    countIf(was_blocked) AS blocked,
    countIf(ended_as = 'workflow_succeeded') AS ended_succeeded,
    countIf(ended_as = 'workflow_compensated') AS ended_compensated,
    countIf(ended_as = 'workflow_failed') AS ended_failed,
    countIf(ended_as = 'workflow_cancelled') AS ended_cancelled
FROM per_instance
LEFT JOIN comp_per_instance USING (workflow_id)
GROUP BY definition_id, definition_version
ORDER BY definition_id, definition_version;

-- execution_outcomes: one row per requested execution, with its accepted outcome.
--
-- Why a view: the worker's event and the timer's verdict on it are two rows of
-- execution_events that arrive apart. A stale attempt's `succeeded` is stored as the worker
-- sent it, and the timer later records `fenced` with event_id `timer:fenced:<that event's id>`
-- (services/timer/executions.py). Counting event_type = 'succeeded' counts such an execution
-- twice; this view drops every event a `fenced` row names, so nobody has to know the rule.
-- Matching on the event id, not the attempt, keeps the accepted outcome of an attempt that a
-- second worker also ran (a redelivery: only the second worker's events are fenced).
--
-- Correct with duplicate rows: FINAL, then one group per execution (decision 0030). Read at
-- query time, so it needs no backfill and is never out of step with execution_events.
--
-- outcome: succeeded | cancelled | dead_lettered (terminal, the first accepted one), or open.
-- Until the timer's `fenced` row lands (the next batch, usually well under a second), a stale
-- outcome shows as accepted.
CREATE VIEW IF NOT EXISTS execution_outcomes AS
SELECT
    execution_id,
    any(job_id) AS job_id,
    any(job_type) AS job_type,
    any(tenant_id) AS tenant_id,
    min(scheduled_time) AS scheduled_time,
    minIf(event_time, event_type = 'requested') AS requested_at,
    maxIf(attempt, event_type = 'requested') AS attempts,
    countIf(accepted AND event_type IN ('succeeded', 'cancelled', 'dead_lettered')) > 0 AS finished,
    if(finished,
       argMinIf(event_type, (event_time, event_id),
                accepted AND event_type IN ('succeeded', 'cancelled', 'dead_lettered')),
       'open') AS outcome,
    if(finished,
       minIf(event_time, accepted AND event_type IN ('succeeded', 'cancelled', 'dead_lettered')),
       NULL) AS outcome_time,
    argMinIf(attempt, (event_time, event_id),
             accepted AND event_type IN ('succeeded', 'cancelled', 'dead_lettered')) AS outcome_attempt,
    argMinIf(worker_id, (event_time, event_id),
             accepted AND event_type IN ('succeeded', 'cancelled')) AS outcome_worker_id,
    argMaxIf(error, (event_time, event_id), accepted AND event_type IN ('failed', 'dead_lettered'))
        AS last_error,
    uniqExactIf(attempt, accepted AND event_type = 'failed') AS failed_attempts,
    countIf(event_type = 'fenced') AS fenced_writes
FROM
(
    SELECT
        execution_id, job_id, job_type, tenant_id, scheduled_time, event_time, event_type,
        event_id, attempt, worker_id, error,
        event_type != 'fenced'
            AND event_id NOT IN (
                SELECT substring(event_id, length('timer:fenced:') + 1)
                FROM execution_events
                WHERE event_type = 'fenced' AND startsWith(event_id, 'timer:fenced:')
            ) AS accepted
    FROM execution_events FINAL
    WHERE event_type != 'skipped'
)
GROUP BY execution_id
HAVING countIf(event_type = 'requested') > 0;

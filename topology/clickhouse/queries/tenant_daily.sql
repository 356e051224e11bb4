-- tenant_daily: executions and dead letters per tenant per day
--
-- Per UTC day and tenant: executions (distinct executions, dated by their first request),
-- succeeded (of those, how many have an accepted success), and dead_letters (distinct dead
-- letters, dated when they were dead-lettered). A dead letter's tenant is its execution's;
-- a dead letter of an undecodable record has no execution and shows tenant ''.
--
-- @param since  window start, inclusive (ISO 8601 instant; days are UTC)
-- @param until  window end, exclusive
--
-- Correct with duplicate rows: executions and dead letters are reduced to one row per
-- execution_id / event_id before counting.
WITH
    parseDateTime64BestEffort({since:String}, 3, 'UTC') AS window_start,
    parseDateTime64BestEffort({until:String}, 3, 'UTC') AS window_end
SELECT
    day,
    tenant_id,
    sum(executions) AS executions,
    sum(succeeded) AS succeeded,
    sum(dead_letters) AS dead_letters
FROM
(
    SELECT
        toDate(first_requested) AS day,
        tenant_id,
        count() AS executions,
        countIf(succeeded) AS succeeded,
        toUInt64(0) AS dead_letters
    FROM
    (
        SELECT
            execution_id,
            any(tenant_id) AS tenant_id,
            minIf(event_time, event_type = 'requested') AS first_requested,
            countIf(event_type = 'requested') > 0 AS requested,
            groupUniqArrayIf(attempt, event_type = 'succeeded') AS succeeded_attempts,
            groupUniqArrayIf(attempt, event_type = 'fenced') AS fenced_attempts,
            -- an accepted success: some attempt succeeded and was not fenced
            notEmpty(arrayFilter(a -> NOT has(fenced_attempts, a), succeeded_attempts)) AS succeeded
        FROM execution_events
        GROUP BY execution_id
        HAVING requested
    )
    WHERE first_requested >= window_start AND first_requested < window_end
    GROUP BY day, tenant_id

    UNION ALL

    SELECT
        toDate(dead_lettered_at) AS day,
        if(execution_tenant != '', execution_tenant, letter_tenant) AS tenant_id,
        toUInt64(0) AS executions,
        toUInt64(0) AS succeeded,
        count() AS dead_letters
    FROM
    (
        SELECT
            event_id,
            min(event_time) AS dead_lettered_at,
            any(execution_id) AS execution_id,
            any(tenant_id) AS letter_tenant
        FROM dead_letters
        GROUP BY event_id
    ) AS letters
    LEFT JOIN
    (
        SELECT execution_id, any(tenant_id) AS execution_tenant
        FROM execution_events
        WHERE execution_id IN (SELECT execution_id FROM dead_letters WHERE execution_id != '')
        GROUP BY execution_id
    ) AS executions USING (execution_id)
    WHERE dead_lettered_at >= window_start AND dead_lettered_at < window_end
    GROUP BY day, tenant_id
)
GROUP BY day, tenant_id
ORDER BY day, tenant_id;

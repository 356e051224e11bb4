-- console_dead_letters: the newest dead letters, for the console's dead-letters page
--
-- Columns: event_time, job_id, job_type, tenant_id, execution_id, attempt, scheduled_time,
-- reason, error_kind, error, source_topic; newest first, at most `limit` rows.
--
-- @param limit  how many rows at most
--
-- Correct with duplicate rows: FINAL keeps one row per event_id.
SELECT
    event_time, job_id, job_type, tenant_id, execution_id, attempt, scheduled_time,
    reason, error_kind, error, source_topic
FROM dead_letters FINAL
ORDER BY event_time DESC, event_id
LIMIT {limit:UInt32};

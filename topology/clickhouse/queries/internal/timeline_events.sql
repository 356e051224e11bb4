-- timeline_events: every event of one execution (read by tickwheel.history.execution_timeline)
--
-- @param execution_id  the execution
SELECT
    event_id, event_time, event_type, job_id, job_type, tenant_id, attempt, scheduled_time,
    fire_time, worker_id, lease_deadline, error_kind, error, reason, details
FROM execution_events FINAL
WHERE execution_id = {execution_id:String}
ORDER BY event_time, event_id;

-- timeline_requests: the execution requests of one execution, one per attempt
-- (read by tickwheel.history.execution_timeline)
--
-- @param execution_id  the execution
SELECT
    attempt, event_time AS requested_at, job_version, priority, trigger, late,
    scheduled_time, fire_time, period_start, period_end, max_attempts, lease_seconds,
    heartbeat_seconds
FROM execution_requests FINAL
WHERE execution_id = {execution_id:String}
ORDER BY attempt, requested_at, event_id;

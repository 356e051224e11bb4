-- job_definition_versions: every recorded change of one job's definition, oldest first
-- (read by tickwheel.history.schedule_audit to know which schedule was in force when)
--
-- @param job_id  the job
SELECT
    event_time, version, deleted, enabled, schedule_kind, cron, timezone, run_at, definition
FROM job_definitions FINAL
WHERE job_id = {job_id:String}
ORDER BY event_time, version, event_id;

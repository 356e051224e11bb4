-- workflow_timeline: every event of one workflow instance, in order
--
-- The instance's history as the orchestrator recorded it, one row per event in `seq` order:
-- seq, event_time, event_type, step_id, attempt, actor (who approved, rejected, retried,
-- completed, skipped or cancelled), execution_id (a task or compensation step's execution,
-- stable across attempts), error, status (the instance's status right after the event),
-- and data (the event's JSON: a step's output, an approval's round and note, ...).
--
-- @param workflow_id  the instance
--
-- Correct with duplicate rows: FINAL (a redelivered event has the same sorting key).
SELECT
    seq, event_time, event_type, step_id, attempt, actor, execution_id, error, status,
    definition_id, definition_version, details AS data
FROM workflow_events FINAL
WHERE workflow_id = {workflow_id:String}
ORDER BY seq, event_time, event_id;

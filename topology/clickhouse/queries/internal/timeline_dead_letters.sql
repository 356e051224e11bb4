-- timeline_dead_letters: the dead letters of one execution, one row per dead letter
-- (read by tickwheel.history.execution_timeline)
--
-- @param execution_id  the execution
SELECT
    event_id,
    min(event_time) AS dead_lettered_at,
    any(reason) AS reason,
    any(attempt) AS attempt,
    any(error) AS error
FROM dead_letters
WHERE execution_id = {execution_id:String}
GROUP BY event_id
ORDER BY dead_lettered_at, event_id;

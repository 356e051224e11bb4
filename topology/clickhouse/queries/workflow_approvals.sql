-- workflow_approvals: approval latency and decisions per actor
--
-- For the approval decisions made in the window, per definition_id, step_id and actor:
--   approved, rejected   decisions applied (approval_approved, approval_rejected)
--   fenced               decisions refused as late or for an old round (approval_fenced)
--   applied              approved + rejected
--   latency_p50_s, latency_max_s   from the round's approval_requested to the applied
--                        decision, in seconds (milliseconds kept as a fraction); NULL when
--                        the actor has no applied decision
--   last_decision_at, last_note   the actor's latest applied decision and its note
--
-- @param since  window start, inclusive, on the decision's event_time (ISO 8601)
-- @param until  window end, exclusive
--
-- Correct with duplicate rows: FINAL; a round's request time is its earliest one.
WITH
    requested AS
    (
        SELECT workflow_id, step_id, JSONExtractInt(details, 'round') AS approval_round,
               min(event_time) AS requested_at
        FROM workflow_events FINAL
        WHERE event_type = 'approval_requested'
        GROUP BY workflow_id, step_id, approval_round
    ),
    decisions AS
    (
        SELECT workflow_id, definition_id, step_id, coalesce(actor, '') AS actor, event_type,
               event_time, seq, JSONExtractInt(details, 'round') AS approval_round,
               JSONExtractString(details, 'note') AS note
        FROM workflow_events FINAL
        WHERE event_type IN ('approval_approved', 'approval_rejected', 'approval_fenced')
          AND event_time >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
          AND event_time < parseDateTime64BestEffort({until:String}, 3, 'UTC')
    )
SELECT
    definition_id, step_id, actor,
    countIf(event_type = 'approval_approved') AS approved,
    countIf(event_type = 'approval_rejected') AS rejected,
    countIf(event_type = 'approval_fenced') AS fenced,
    countIf(event_type != 'approval_fenced') AS applied,
    if(applied = 0, NULL, round(quantileExactIf(0.5)(
        (toUnixTimestamp64Milli(event_time) - toUnixTimestamp64Milli(requested_at)) / 1000,
        event_type != 'approval_fenced'), 3)) AS latency_p50_s,
    if(applied = 0, NULL, round(maxIf(
        (toUnixTimestamp64Milli(event_time) - toUnixTimestamp64Milli(requested_at)) / 1000,
        event_type != 'approval_fenced'), 3)) AS latency_max_s,
    if(applied = 0, NULL, maxIf(event_time, event_type != 'approval_fenced')) AS last_decision_at,
    argMaxIf(note, (event_time, seq), event_type != 'approval_fenced') AS last_note
FROM decisions
LEFT JOIN requested USING (workflow_id, step_id, approval_round)
GROUP BY definition_id, step_id, actor
ORDER BY definition_id, step_id, actor;

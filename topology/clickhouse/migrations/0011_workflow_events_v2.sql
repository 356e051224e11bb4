-- WorkflowEvent v2's fields as columns (issue 11 item 10): the per-instance counter `seq`
-- ((workflow_id, seq) is unique; event_id is wf:<workflow_id>:<seq>), the input the event was
-- decided from, and the instance's status right after it. actor, tenant_id, execution_id and
-- error already had columns (migration 0003), filled from `details` until v2 carried them.
-- Rows written before keep the defaults (seq 0 is what a v1 record says).
-- Dedup is unchanged: the sorting key ends with the deterministic event_id (decision 0030).
-- Re-runnable: ADD COLUMN IF NOT EXISTS.
ALTER TABLE workflow_events ADD COLUMN IF NOT EXISTS seq UInt64 DEFAULT 0 AFTER definition_version;
ALTER TABLE workflow_events ADD COLUMN IF NOT EXISTS cause_input_id Nullable(String) AFTER error;
ALTER TABLE workflow_events ADD COLUMN IF NOT EXISTS status LowCardinality(Nullable(String)) AFTER cause_input_id;

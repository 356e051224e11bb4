-- The alert lifecycle as columns (Alert v2, issue 12): which incident a transition belongs
-- to, what kind of transition it is, what the alert is about, when its incident opened and
-- resolved, who acknowledged it, and which parent explains it. Until now these lived only in
-- `details` (JSON). Rows written before keep the defaults; `details` still holds them.
-- Re-runnable: ADD COLUMN IF NOT EXISTS.
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS incident_id String DEFAULT '' AFTER details;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS fingerprint String DEFAULT '' AFTER incident_id;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS transition LowCardinality(String) DEFAULT '' AFTER fingerprint;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS subject String DEFAULT '' AFTER transition;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS opened_at Nullable(DateTime64(3, 'UTC')) AFTER subject;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS resolved_at Nullable(DateTime64(3, 'UTC')) AFTER opened_at;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS acknowledged_by Nullable(String) AFTER resolved_at;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS suppressed_by Nullable(String) AFTER acknowledged_by;

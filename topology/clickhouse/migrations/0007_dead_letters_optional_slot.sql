-- A DeadLetter record carries no scheduled time (and an undecodable record has none at all):
-- NULL says "unknown" where a 1970 placeholder would read as a real instant. The column is
-- outside the sorting key, so this is a metadata change plus a rewrite of existing parts.
-- Re-runnable: modifying a column to the type it already has is a no-op.
ALTER TABLE dead_letters MODIFY COLUMN scheduled_time Nullable(DateTime64(3, 'UTC'));

-- Where the dead-lettered record itself was: its topic, partition and offset, from the
-- DeadLetter record's source_* fields. The table's own source_* columns are, as in every
-- table, where the sink read the dead letter (executions.dlq), so until now the bad record's
-- origin survived only inside event_id (undecodable:<topic>/<partition>/<offset>).
--
-- NULL partition / offset: not known (the timer dead-letters an execution, not a record, and
-- writes -1). Rows stored before this migration keep '' / NULL: nothing is rewritten.
-- Re-runnable: ADD COLUMN IF NOT EXISTS.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS record_topic LowCardinality(String) DEFAULT '' AFTER payload;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS record_partition Nullable(Int32) AFTER record_topic;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS record_offset Nullable(Int64) AFTER record_partition;

-- calendar_events: one row per record of the `calendars` topic, its history (issue 15 §4: "a
-- changed calendar ... is recorded in history"). A put is a row with the calendar's whole
-- content at that version (dates, weekend, description); a delete (a tombstone) is a row with
-- deleted = true and no dates. What each version added and removed is computed at query time
-- against the version before it (queries/calendar_versions.sql), so the sink keeps no state.
-- The topic has one partition, so source_offset orders the versions as the timer applied
-- them. event_id is derived from the record's offset (decision 0110): a redelivered record
-- collapses into one row, two puts racing to one version number stay two rows.
CREATE TABLE IF NOT EXISTS calendar_events
(
    event_id         String,
    event_time       DateTime64(3, 'UTC'),
    name             String,
    version          UInt64 DEFAULT 0,
    deleted          Bool DEFAULT false,
    dates            Array(String),
    weekend          Array(UInt8),
    description      Nullable(String),
    source_topic     LowCardinality(String) DEFAULT '',
    source_partition Int32 DEFAULT -1,
    source_offset    Int64 DEFAULT -1,
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (name, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.calendar_events }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

-- job_definitions: one row per definition change, including the tombstone of a deletion
-- (deleted = true, definition = ''). The compacted topic jobs.definitions holds the current
-- state; this table is its history. event_id for a tombstone is derived by the sink from
-- topic/partition/offset, since a tombstone carries no value.
CREATE TABLE IF NOT EXISTS job_definitions
(
    event_id         String,
    event_time       DateTime64(3, 'UTC'),
    job_id           String,
    version          UInt64 DEFAULT 0,
    deleted          Bool DEFAULT false,
    job_type         LowCardinality(String) DEFAULT '',
    tenant_id        LowCardinality(String) DEFAULT '',
    schedule_kind    LowCardinality(String) DEFAULT '',  -- 'cron', 'once', or '' for a tombstone
    cron             Nullable(String),
    timezone         Nullable(String),
    run_at           Nullable(DateTime64(3, 'UTC')),
    priority         LowCardinality(String) DEFAULT '',
    enabled          Bool DEFAULT true,
    definition       String DEFAULT '',  -- the full definition as JSON
    source_topic     LowCardinality(String) DEFAULT '',
    source_partition Int32 DEFAULT -1,
    source_offset    Int64 DEFAULT -1,
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (job_id, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.job_definitions }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

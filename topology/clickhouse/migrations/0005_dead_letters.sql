-- dead_letters: one row per execution sent to executions.dlq; reason is
-- 'permanent_error' or 'max_attempts_exhausted'. payload is the request's payload as JSON.
CREATE TABLE IF NOT EXISTS dead_letters
(
    event_id         String,
    event_time       DateTime64(3, 'UTC'),
    job_id           String,
    job_type         LowCardinality(String),
    tenant_id        LowCardinality(String),
    execution_id     String,
    attempt          UInt32,
    scheduled_time   DateTime64(3, 'UTC'),
    reason           LowCardinality(String),
    error_kind       LowCardinality(Nullable(String)),
    error            Nullable(String),
    payload          String DEFAULT '',
    source_topic     LowCardinality(String) DEFAULT '',
    source_partition Int32 DEFAULT -1,
    source_offset    Int64 DEFAULT -1,
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC'),
    INDEX idx_execution_id execution_id TYPE bloom_filter(0.001) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (job_id, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.dead_letters }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

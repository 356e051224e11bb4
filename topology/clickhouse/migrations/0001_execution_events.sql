-- execution_events: one row per event of an execution's life (DESIGN §13).
-- event_type: requested, skipped, leased, heartbeat, succeeded, failed, retry_scheduled,
--             dead_lettered, fenced, cancelled.
--
-- Idempotence (docs/decisions/0030): ReplacingMergeTree whose sorting key ends with event_id,
-- so a redelivered event collapses into one row; documented queries read FINAL (or count
-- uniqExact(event_id)) and are right before any merge. Inserts also carry a deduplication
-- token, kept for the last non_replicated_deduplication_window blocks.
--
-- Every statement must be re-runnable (IF NOT EXISTS): ClickHouse DDL is not transactional,
-- and a migration interrupted half-way runs again from its first statement.
CREATE TABLE IF NOT EXISTS execution_events
(
    event_id         String,
    event_time       DateTime64(3, 'UTC'),
    event_type       LowCardinality(String),
    job_id           String,
    job_type         LowCardinality(String),
    tenant_id        LowCardinality(String),
    execution_id     String,
    attempt          UInt32,
    -- the slot on the schedule's grid; fire_time is the slot plus jitter
    scheduled_time   DateTime64(3, 'UTC'),
    fire_time        Nullable(DateTime64(3, 'UTC')),
    worker_id        Nullable(String),
    lease_deadline   Nullable(DateTime64(3, 'UTC')),
    error_kind       LowCardinality(Nullable(String)),
    error            Nullable(String),
    reason           LowCardinality(Nullable(String)),
    details          String DEFAULT '{}',
    -- where the sink read the event (ingestion metadata)
    source_topic     LowCardinality(String) DEFAULT '',
    source_partition Int32 DEFAULT -1,
    source_offset    Int64 DEFAULT -1,
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC'),
    INDEX idx_execution_id execution_id TYPE bloom_filter(0.001) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (job_id, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.execution_events }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

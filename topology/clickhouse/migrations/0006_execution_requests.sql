-- execution_requests: one row per ExecutionRequest the timer emitted to executions.<priority>
-- (one per attempt). It holds what the events do not: the job version the occurrence was
-- computed from, priority, trigger (scheduled, manual, backfill, retry, lease_expired,
-- catch_up), the late flag, the period and the rendered payload. The execution timeline and
-- the reconciliation read it; the analyst queries need only execution_events.
--
-- event_id is request:<execution_id>:<attempt>, the identity the timer gives the matching
-- `requested` event, so a redelivered request collapses like every other event (decision 0030).
-- Retention follows execution_events: a request is part of its execution's history.
CREATE TABLE IF NOT EXISTS execution_requests
(
    event_id          String,
    event_time        DateTime64(3, 'UTC'),  -- requested_at: when the timer emitted it
    execution_id      String,
    job_id            String,
    job_version       UInt64,
    job_type          LowCardinality(String),
    tenant_id         LowCardinality(String),
    priority          LowCardinality(String),
    attempt           UInt32,
    trigger           LowCardinality(String),
    late              Bool DEFAULT false,
    scheduled_time    DateTime64(3, 'UTC'),
    fire_time         DateTime64(3, 'UTC'),
    period_start      DateTime64(3, 'UTC'),
    period_end        Nullable(DateTime64(3, 'UTC')),
    max_attempts      UInt32,
    lease_seconds     UInt32,
    heartbeat_seconds UInt32,
    payload           String DEFAULT '{}',
    source_topic      LowCardinality(String) DEFAULT '',
    source_partition  Int32 DEFAULT -1,
    source_offset     Int64 DEFAULT -1,
    inserted_at       DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC'),
    INDEX idx_execution_id execution_id TYPE bloom_filter(0.001) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (job_id, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.execution_events }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

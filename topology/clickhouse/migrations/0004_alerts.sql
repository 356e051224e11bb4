-- alerts: one row per alert raised or resolved by the watchdog (DESIGN §9): missed_interval,
-- broken_chain, dead_letter_age, oldest_ready_age, workflow_stuck, job_disabled, ...
CREATE TABLE IF NOT EXISTS alerts
(
    event_id         String,
    event_time       DateTime64(3, 'UTC'),
    alert_type       LowCardinality(String),
    state            LowCardinality(String) DEFAULT 'firing',  -- 'firing' or 'resolved'
    severity         LowCardinality(String) DEFAULT 'warning',
    tenant_id        LowCardinality(String) DEFAULT '',
    job_id           Nullable(String),
    workflow_id      Nullable(String),
    message          String,
    details          String DEFAULT '{}',
    source_topic     LowCardinality(String) DEFAULT '',
    source_partition Int32 DEFAULT -1,
    source_offset    Int64 DEFAULT -1,
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (alert_type, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.alerts }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

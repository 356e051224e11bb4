-- workflow_events: one row per event of a workflow instance (started, step_scheduled,
-- step_succeeded, step_failed, step_skipped, compensation_started, approval_requested,
-- approved, rejected, completed, failed, cancelled, ...). actor is who approved or acted.
CREATE TABLE IF NOT EXISTS workflow_events
(
    event_id           String,
    event_time         DateTime64(3, 'UTC'),
    event_type         LowCardinality(String),
    workflow_id        String,
    definition_id      String,
    definition_version UInt32,
    tenant_id          LowCardinality(String) DEFAULT '',
    step_id            Nullable(String),
    attempt            UInt32 DEFAULT 0,
    execution_id       Nullable(String),
    actor              Nullable(String),
    error              Nullable(String),
    details            String DEFAULT '{}',
    source_topic       LowCardinality(String) DEFAULT '',
    source_partition   Int32 DEFAULT -1,
    source_offset      Int64 DEFAULT -1,
    inserted_at        DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(event_time)
ORDER BY (workflow_id, event_time, event_id)
TTL toDateTime(event_time) + INTERVAL {{ retention_days.workflow_events }} DAY
SETTINGS non_replicated_deduplication_window = 1000, ttl_only_drop_parts = 1;

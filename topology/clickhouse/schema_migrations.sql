-- Bookkeeping for the migration runner (tickwheel.adapters.clickhouse): one row per applied
-- migration. Created before any migration runs; not itself a migration.
-- ReplacingMergeTree on version: two runners racing on a server record a version twice at
-- worst, and the runner reads it with FINAL.
CREATE TABLE IF NOT EXISTS schema_migrations
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY version;

"""The history service: every event topic into ClickHouse, idempotently, and (embedded mode)
the read-only query endpoint of the store it owns. See docs/history.md."""

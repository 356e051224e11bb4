"""Adapters: the only code that talks to Kafka, Avro and ClickHouse."""

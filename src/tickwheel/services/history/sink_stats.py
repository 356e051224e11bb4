"""What the history sink has done since it started: the counters `HistorySink` and its batch
writes (batch_writes.py) keep, which the service's status and progress log and the Prometheus
metrics (metrics.py) read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SinkStats:
    records: int = 0
    rows: int = 0
    batches: int = 0
    dead_lettered: int = 0
    commits_failed: int = 0
    last_batch_rows: int = 0
    # The lag, after each batch: records on the sink's partitions not yet written (from the
    # consumer's cached high watermarks, no broker round trip), and how old the newest record
    # written was when its batch was committed (Kafka's timestamp to the commit).
    lag_records: int = 0
    lag_ms: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

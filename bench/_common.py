"""What every broker-backed benchmark shares: a throwaway local broker, percentiles, and a
report that prints each figure as it comes and lands in bench/reports/."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from tickwheel.stack.broker import BrokerConfig, LocalKafka, free_port

REPORTS = Path(__file__).resolve().parent / "reports"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@contextmanager
def bench_broker(data_dir: Path | None = None) -> Iterator[LocalKafka]:
    """A real local Kafka broker on free loopback ports, stopped afterwards."""
    directory = data_dir or Path(tempfile.mkdtemp(prefix="tickwheel-bench-kafka-"))
    broker = LocalKafka(
        BrokerConfig(data_dir=directory, port=free_port(), controller_port=free_port(), heap="1g")
    )
    broker.start(timeout=120)
    try:
        yield broker
    finally:
        broker.stop()


class Report:
    def __init__(self, title: str) -> None:
        when = datetime.now(tz=UTC).isoformat(timespec="seconds")
        self.lines = [
            f"# {title}",
            "",
            f"Run {when}, {os.cpu_count()} cores, broker on the same machine.",
            "",
        ]

    def add(self, line: str) -> None:
        print(line, flush=True)
        self.lines.append(line)

    def write(self, name: str) -> Path:
        path = REPORTS / name
        path.write_text("\n".join(self.lines) + "\n")
        print(f"report: {path}")
        return path

"""The history benchmark's insert section: 10,000-row batches of `execution_events` into chDB
five ways, interleaved round by round in one process so the machine's load falls on all
alike (bench/bench_history.py prints and reports them):

- raw: the same rows as a Native buffer ClickHouse itself produced beforehand, inserted bare.
  A cheaper input than any sink has (its records arrive as Avro bodies): the engine's limit.
- ceiling: the fast path's own statement (decode, checks, SELECT list) over a frame spooled
  beforehand, no Python per record: the limit that applies to a sink of Avro records.
- fast: the sink's fast path as it is (decision 0149: the frame built record by record).
- baseline: the fast path of decision 0123 (its framing, structure and SELECT), loaded from
  git at `BASELINE_COMMIT`: the A/B of this work, in the same run.
- rows: the row path (decode in Python, row dicts, columnar insert).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import types
from functools import partial
from pathlib import Path
from typing import Any

import clickhouse_connect

from tickwheel.adapters.avro import decode_as, encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.clickhouse._writes import encoded_statement
from tickwheel.records import ExecutionEvent
from tickwheel.services.history.columnar import Frame, encoded_kinds
from tickwheel.services.history.rows import Source, execution_event_row

#: The commit before this work on the fast path (the sink of decision 0123).
BASELINE_COMMIT = "36e8122"
BASE_MS = 4_076_000_000_000  # 2099: no retention expires it
PATHS = ("raw", "ceiling", "fast", "baseline", "rows")


def event(n: int, kind: str = "succeeded", at: int | None = None) -> dict[str, Any]:
    execution = f"bench-exec-{n}"
    return {
        "event_id": f"{kind}:{execution}:1:bench-worker:{n}", "event_time": at or BASE_MS + n,
        "event_type": kind, "job_id": f"bench-job-{n % 500}", "job_type": "noop",
        "tenant_id": f"tenant-{n % 7}", "execution_id": execution, "attempt": 1,
        "scheduled_time": BASE_MS + n - 1000, "fire_time": BASE_MS + n - 900,
        "worker_id": "bench-worker", "lease_deadline": None, "error": None, "error_kind": None,
        "reason": None, "details": None,
    }  # fmt: skip


class Read:
    """A consumed message as the sink reads it (topic, partition, offset, value)."""

    def __init__(self, topic: str, offset: int, value: bytes) -> None:
        self._topic, self._offset, self._value = topic, offset, value

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value


def baseline_columnar() -> types.ModuleType | None:
    """`services/history/columnar.py` as of `BASELINE_COMMIT` (bench/_revisions.py), or None
    without git."""
    from bench._revisions import modules_at

    try:
        (module,) = modules_at(BASELINE_COMMIT, "tickwheel.services.history.columnar")
    except (OSError, subprocess.CalledProcessError):
        return None
    return module


def insert_rates(store: ChdbHistoryStore, batch_rows: int, rounds: int) -> dict[str, Any]:
    """Rows/s and CPU µs/row of each path in `PATHS` over the same `batch_rows` events."""
    kind = encoded_kinds()["ExecutionEvent"]
    target = kind.tables[0]
    baseline = baseline_columnar()
    old_kind = baseline.encoded_kinds()["ExecutionEvent"] if baseline is not None else None
    payloads = [encode("ExecutionEvent", event(n, "leased" if n % 2 else "succeeded"))
                for n in range(batch_rows)]  # fmt: skip
    raw = clickhouse_connect.get_client(interface="chdb", path=store.directory)
    columns = list(target.columns)
    spool = Path(tempfile.mkdtemp(prefix="tickwheel-bench-ceiling-"))
    totals = {name: [0.0, 0.0] for name in PATHS}

    def timed(name: str, run: Any) -> None:
        started, cpu = time.perf_counter(), time.process_time()
        run()
        totals[name][0] += time.perf_counter() - started
        totals[name][1] += time.process_time() - cpu

    def fast(topic: str, r: int) -> None:
        frame = Frame(kind)
        for m in [Read(topic, i, p) for i, p in enumerate(payloads)]:
            frame.add(m, m.value(), m.topic(), m.partition(), m.offset())
        store.insert_encoded(target.table, target.columns, target.select, kind.structure,
                             frame.data(), dedup_token=f"bench-fast-{r}")  # fmt: skip

    def old(topic: str, r: int) -> None:
        # As the store ran it then and runs it now: a spooled file read with file().
        assert old_kind is not None
        table = old_kind.tables[0]
        path = spool / f"baseline-{r}.avro"
        path.write_bytes(old_kind.frame([Read(topic, i, p) for i, p in enumerate(payloads)]))
        source = f"file('{path}', 'Avro', '{old_kind.structure}')"
        statement = encoded_statement(table.table, table.columns, table.select, source,
                                      f"bench-old-{r}")  # fmt: skip
        raw.command(statement)
        path.unlink()

    def rows(topic: str, r: int) -> None:
        made = [execution_event_row(decode_as(ExecutionEvent, p), Source(topic, 0, i, 0))
                for i, p in enumerate(payloads)]  # fmt: skip
        store.insert("execution_events", made, dedup_token=f"bench-rows-{r}")

    def ceiling(statement: str) -> None:
        raw.command(statement)

    def native(topic: str, r: int) -> None:
        # The raw limit: the same rows already in ClickHouse's own format, inserted bare.
        data = raw.raw_query(f"SELECT {', '.join(columns)} FROM execution_events "
                             f"WHERE source_topic = '{topic}' FORMAT Native")  # fmt: skip
        settings = {"async_insert": 0, "insert_deduplication_token": f"bench-raw-{r}"}
        timed("raw", partial(raw.raw_insert, "execution_events", columns, data, fmt="Native",
                             settings=settings))  # fmt: skip

    try:
        for r in range(rounds):
            topic = f"bench-insert-{r}"
            # What the ceiling reads: this round's frame, spooled before the clock starts.
            framed = spool / f"ceiling-{r}.avro"
            framed.write_bytes(kind.frame([Read(f"ceiling-{topic}", i, p)
                                           for i, p in enumerate(payloads)]))  # fmt: skip
            source = f"file('{framed}', 'Avro', '{kind.structure}')"
            statement = encoded_statement(target.table, target.columns, target.select, source,
                                          f"bench-ceiling-{r}")  # fmt: skip
            order = [("fast", partial(fast, topic, r)), ("rows", partial(rows, f"rows-{topic}", r)),
                     ("ceiling", partial(ceiling, statement))]  # fmt: skip
            if old_kind is not None:
                order.append(("baseline", partial(old, f"old-{topic}", r)))
            # Alternate the order round by round: no path always runs right after another.
            for name, run in order if r % 2 == 0 else reversed(order):
                timed(name, run)
            native(topic, r)
    finally:
        raw.close()
    count = batch_rows * rounds
    measured = [name for name in PATHS if totals[name][0] > 0]
    return {
        "rows": count,
        "batch_rows": batch_rows,
        "paths": measured,
        **{f"{name}_per_s": count / totals[name][0] for name in measured},
        **{f"{name}_cpu_us": totals[name][1] * 1e6 / count for name in measured},
    }

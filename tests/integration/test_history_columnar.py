"""The sink's fast path against real chDB (decision 0123): records that ClickHouse decodes
itself must become exactly the rows the row path (`services/history/rows.py`) makes of them,
a record the row path would refuse must fail the whole insert (so the sink falls back), and
a repeated insert with the same token must land once."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickwheel.adapters.avro import decode, encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.kafka.memory import MemoryMessage
from tickwheel.ports.history import HistoryStoreError
from tickwheel.services.history import rows
from tickwheel.services.history.columnar import (
    EncodedInsert,
    EncodedKind,
    dedup_token,
    encoded_kinds,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

T0 = 4_076_000_000_000


def consumed(topic: str, partition: int, offset: int, value: bytes) -> MemoryMessage:
    """A consumed message as the fast path reads it, in the in-memory Kafka's own shape."""
    return MemoryMessage(topic, partition, offset, None, value, None, 0)


@pytest.fixture(scope="module")
def store() -> Iterator[ChdbHistoryStore]:
    with ChdbHistoryStore(Path(tempfile.mkdtemp(prefix="columnar-")) / "history") as opened:
        opened.migrate()
        yield opened


def _event(n: int, **overrides: Any) -> dict[str, Any]:
    value = {
        "event_id": f"e-{n}", "event_time": T0 + n, "event_type": "succeeded",
        "job_id": f"job-{n % 3}", "job_type": "noop", "tenant_id": "acme",
        "execution_id": f"x-{n}", "attempt": 1, "scheduled_time": T0 - 1000 + n,
        "fire_time": None, "worker_id": None, "lease_deadline": None, "error": None,
        "error_kind": None, "reason": None, "details": None,
    }  # fmt: skip
    return {**value, **overrides}


def _request(n: int, **overrides: Any) -> dict[str, Any]:
    value = {
        "execution_id": f"r-{n}", "job_id": f"job-{n % 3}", "job_version": 2, "job_type": "noop",
        "tenant_id": "acme", "priority": "normal", "attempt": 1, "scheduled_time": T0 + n,
        "fire_time": T0 + n + 150, "period_start": T0 - 86_400_000, "period_end": T0,
        "payload": '{"k": 1}', "max_attempts": 3, "trigger": "scheduled", "late": False,
        "requested_at": T0 + n + 160, "lease_seconds": 30, "heartbeat_seconds": 10,
    }  # fmt: skip
    return {**value, **overrides}


EVENTS = [
    _event(0),
    _event(1, details="", fire_time=T0 + 5, worker_id="w-1", lease_deadline=T0 + 30_000),
    _event(2, event_type="failed", error="boom ✓", error_kind="transient", attempt=-3,
           details='{"duration_ms": 12}', reason="timeout"),
    _event(3, event_type="fenced", event_id="timer:fenced:e-2", tenant_id="", job_id="ünï"),
]  # fmt: skip
REQUESTS = [
    _request(0),
    _request(1, late=True, trigger="catch_up", period_end=None, payload="", attempt=2),
    _request(2, priority="high", job_version=-1, max_attempts=0, lease_seconds=0,
             heartbeat_seconds=0, tenant_id=""),
]  # fmt: skip


def _messages(schema: str, values: list[dict[str, Any]], topic: str) -> list[MemoryMessage]:
    return [consumed(topic, n % 2, 1000 + n, encode(schema, v)) for n, v in enumerate(values)]


def _insert(store: EncodedInsert, kind: EncodedKind, messages: list[MemoryMessage]) -> None:
    data = kind.frame(messages)
    for table in kind.tables:
        store.insert_encoded(table.table, table.columns, table.select, kind.structure, data,
                             dedup_token=dedup_token(table.table, data))  # fmt: skip


def _stored(store: ChdbHistoryStore, table: str, topic: str) -> list[tuple[Any, ...]]:
    return store.query(
        f"SELECT * EXCEPT inserted_at FROM {table} WHERE source_topic = {{t:String}} "
        "ORDER BY event_id",
        {"t": topic},
    ).rows


def test_the_fast_path_stores_exactly_the_rows_the_row_path_makes(store: ChdbHistoryStore) -> None:
    kinds = encoded_kinds()
    for schema, values, tables in (
        ("ExecutionEvent", EVENTS, {"execution_events": rows.execution_event_row}),
        ("ExecutionRequest", REQUESTS, {"execution_requests": rows.execution_request_row,
                                        "execution_events": rows.requested_event_row}),
    ):  # fmt: skip
        fast, slow = f"fast.{schema}", f"slow.{schema}"
        _insert(store, kinds[schema], _messages(schema, values, fast))
        for table, convert in tables.items():
            made = [
                convert(decode(m.value())[1], rows.Source(slow, m.partition(), m.offset(), 0))
                for m in _messages(schema, values, slow)
            ]
            store.insert(table, made)
            fast_rows, slow_rows = _stored(store, table, fast), _stored(store, table, slow)
            assert len(fast_rows) == len(values)
            # Every column the same but where each was read.
            assert [_but_topic(r, fast) for r in fast_rows] == [
                _but_topic(r, slow) for r in slow_rows
            ], table


def _but_topic(row: tuple[Any, ...], topic: str) -> tuple[Any, ...]:
    return tuple(value for value in row if value != topic)


def _body_bytes(value: bytes, cut: int) -> bytes:
    return value[:cut] if cut < 0 else value + b"\x00" * cut


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(encode("ExecutionEvent", _event(9, event_time=-2_208_988_800_001)),
                     id="instant-before-1900"),
        pytest.param(encode("ExecutionEvent", _event(9, lease_deadline=10_413_792_000_000)),
                     id="deadline-after-2299"),
        pytest.param(encode("ExecutionEvent", _event(9)).replace(b"acme", b"\xff\xfeme"),
                     id="invalid-utf8"),
        pytest.param(_body_bytes(encode("ExecutionEvent", _event(9)), 3), id="trailing-bytes"),
        pytest.param(_body_bytes(encode("ExecutionEvent", _event(9)), -2), id="truncated"),
    ],
)  # fmt: skip
def test_a_record_the_row_path_refuses_fails_the_whole_fast_insert(
    store: ChdbHistoryStore, bad: bytes
) -> None:
    topic = f"bad.{abs(hash(bad))}"
    good = _messages("ExecutionEvent", EVENTS, topic)
    # In the middle of the frame: the records after it must not be misread either.
    frame = [*good[:2], consumed(topic, 0, 5000, bad), *good[2:]]
    with pytest.raises(HistoryStoreError):
        _insert(store, encoded_kinds()["ExecutionEvent"], frame)
    assert _stored(store, "execution_events", topic) == []


def test_the_same_frame_with_the_same_token_lands_once(store: ChdbHistoryStore) -> None:
    topic = "again.events"
    kind = encoded_kinds()["ExecutionEvent"]
    messages = _messages("ExecutionEvent", EVENTS, topic)
    _insert(store, kind, messages)
    _insert(store, kind, messages)  # a redelivery cut the same way
    raw = store.query(
        "SELECT count() FROM execution_events WHERE source_topic = {t:String}", {"t": topic}
    ).scalar()
    assert raw == len(EVENTS)

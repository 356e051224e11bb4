"""The sink writes a batch's `execution_events` in one insert (decision 0187): the worker's
events and the `requested` rows its requests stand for go into real chDB in one statement,
so one part, with the dedup guarantees of decision 0030 unchanged, and a bad record still
goes to the dead-letter topic while everything else is stored.

The records come from the in-memory broker (what is measured here is the store's side);
the real-broker crash test is `tests/chaos/test_history_sink_crash.py`."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.services.history.test_history_sink_memory import (
    World,
    _drain,
)
from tickwheel.adapters.avro import encode
from tickwheel.adapters.clickhouse import ChdbHistoryStore
from tickwheel.adapters.kafka.memory import MemoryEventProducer
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def store() -> Iterator[ChdbHistoryStore]:
    with ChdbHistoryStore(Path(tempfile.mkdtemp(prefix="one-insert-")) / "history") as opened:
        opened.migrate()
        # No background merge: a raw count then shows every insert that landed (a merge of
        # ReplacingMergeTree parts would fold a copy and hide whether the token dropped it).
        for table in ("execution_events", "execution_requests"):
            opened._writer.command(f"SYSTEM STOP MERGES {table}")
        yield opened


def _world(store: ChdbHistoryStore, executions: int = 30) -> World:
    world = World(executions)
    world.store = store  # type: ignore[assignment]  # the real engine, not the list store
    return world


def _count(store: ChdbHistoryStore, sql: str) -> int:
    return int(store.query(sql).scalar())


def _event_parts(store: ChdbHistoryStore) -> int:
    """The parts `execution_events`' rows are in (merges are stopped)."""
    return _count(store, "SELECT uniqExact(_part) FROM execution_events")


def test_the_events_and_the_requested_rows_of_a_batch_are_one_part(
    store: ChdbHistoryStore,
) -> None:
    world = _world(store)
    sink, consumer = world.sink()
    _drain(sink, world.records)
    n = world.executions
    assert sink.stats.batches == 1
    assert _count(store, "SELECT count() FROM execution_events") == 3 * n
    assert _count(store, "SELECT countIf(event_type = 'requested') FROM execution_events") == n
    assert _count(store, "SELECT count() FROM execution_requests") == n
    # Every event_time is on one day (T0), so one insert is one part; two inserts were two.
    assert _event_parts(store) == 1
    assert [letter["kind"] for letter in world.dead_letters.letters] == ["undecodable"]
    assert world.committed(consumer) == 0


@pytest.mark.parametrize("recut", [False, True], ids=["same-cut", "cut-differently"])
def test_a_crash_between_the_joined_insert_and_the_commit_leaves_no_duplicate(
    store: ChdbHistoryStore, recut: bool
) -> None:
    world = _world(store)
    world.crash_then_redrain(recut, inserted=lambda: _event_parts(store) > 0)
    n = world.executions
    for table, expected in (("execution_requests", n), ("execution_events", 3 * n)):
        final = _count(store, f"SELECT count() FROM {table} FINAL")
        distinct = _count(store, f"SELECT uniqExact(event_id) FROM {table}")
        raw = _count(store, f"SELECT count() FROM {table}")
        assert final == distinct == expected, table
        if recut:
            assert raw > expected, table  # other tokens: copies land, and FINAL folds them
        else:
            assert raw == expected, table  # the same cut's token: the repeat never lands


def _bad_event(world: World) -> None:
    """An `ExecutionEvent` the row path refuses (an instant no DateTime64(3) holds), among
    the good ones: it fails the joined insert, and only the events' frame falls back."""
    event: dict[str, Any] = {
        "event_id": "succeeded:exec-bad:1:w-1", "event_time": 10**17, "event_type": "succeeded",
        "job_id": "job-0", "job_type": "noop", "tenant_id": "acme", "execution_id": "exec-bad",
        "attempt": 1, "scheduled_time": 0, "fire_time": None, "worker_id": "w-1",
        "lease_deadline": None, "error": None, "error_kind": None, "reason": None,
        "details": None,
    }  # fmt: skip
    MemoryEventProducer(world.broker).send(
        topic_name("executions.events"), "job-0", encode("ExecutionEvent", event)
    )
    world.records += 1


def test_a_bad_event_is_dead_lettered_and_the_rest_of_the_joined_insert_is_stored(
    store: ChdbHistoryStore,
) -> None:
    world = _world(store)
    _bad_event(world)
    sink, consumer = world.sink()
    _drain(sink, world.records)
    n = world.executions
    assert _count(store, "SELECT count() FROM execution_events") == 3 * n
    assert _count(store, "SELECT countIf(event_type = 'requested') FROM execution_events") == n
    assert _count(store, "SELECT count() FROM execution_requests") == n
    assert _count(store, "SELECT countIf(execution_id = 'exec-bad') FROM execution_events") == 0
    reasons = sorted(letter["reason"].split(":")[0] for letter in world.dead_letters.letters)
    assert len(reasons) == 2 and "unstorable" in reasons, world.dead_letters.letters
    assert world.committed(consumer) == 0

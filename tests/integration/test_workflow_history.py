"""Workflow history end to end: every event of real workflow runs in `workflow_events`
exactly once, and each documented workflow query answering what it says on the known run
(`test_workflow_history_run.recorded`). Each test checks one promise against what
`workflows.events` holds, read back read_committed.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from typing import Any

import pytest

from tests.integration.history_cli import run_cli
from tests.integration.test_workflow_history_run import (
    TIMEOUT_S,
    Recorded,
    recorded,
    recorded_ids,
    saga_answers,
    topic_ids,
)
from tests.integration.workflow_harness import (
    status_of,
)
from tickwheel.adapters.avro import decode
from tickwheel.adapters.kafka.client import Consumer
from tickwheel.adapters.kafka.config import consumer_config
from tickwheel.adapters.kafka.dead_letters import DeadLetterWriter
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.clock import SystemClock
from tickwheel.history import (
    WorkflowNotFound,
    open_workflow_steps,
    workflow_approvals,
    workflow_compensations,
    workflow_step_stats,
    workflow_timeline,
)
from tickwheel.services.history.rows import Source, workflow_event_row
from tickwheel.services.history.sink import Batch, HistorySink, Route
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]
__all__ = ["recorded"]  # the run, used here under its own name


# -- every event exactly once ----------------------------------------------------------------
def test_every_event_on_the_topic_is_exactly_once_in_the_table(recorded: Recorded) -> None:
    wanted = topic_ids(recorded.events)
    counted = recorded_ids(recorded.reader)
    assert set(counted) == wanted and set(counted.values()) == {1}
    raw, distinct, pairs = recorded.reader.query(
        "SELECT count(), uniqExact(event_id), uniqExact(workflow_id, seq) "
        "FROM workflow_events FINAL"
    ).rows[0]  # fmt: skip
    assert raw == distinct == pairs == len(wanted)
    # Every column as the record says.
    rows = {
        r["event_id"]: r
        for r in recorded.reader.query(
            "SELECT event_id, workflow_id, definition_id, definition_version, seq, event_type, "
            "step_id, attempt, actor, execution_id, error, status, details "
            "FROM workflow_events FINAL"
        ).as_dicts()
    }
    for instance in recorded.events.values():
        for event in instance:
            row = rows[event["event_id"]]
            for column in ("workflow_id", "definition_id", "definition_version", "seq",
                           "event_type", "step_id", "attempt", "actor", "execution_id",
                           "error", "status"):  # fmt: skip
                assert row[column] == event[column], (event["event_id"], column)
            assert json.loads(row["details"]) == event["data"]


def test_the_table_is_partitioned_by_day(recorded: Recorded) -> None:
    partitions = recorded.reader.query(
        "SELECT DISTINCT partition FROM system.parts WHERE table = 'workflow_events' AND active"
    ).rows
    days = recorded.reader.query(
        "SELECT DISTINCT toString(toYYYYMMDD(event_time)) FROM workflow_events"
    ).rows
    assert {p[0] for p in partitions} == {d[0] for d in days}


def test_a_bad_record_is_dead_lettered_and_the_sink_keeps_going(recorded: Recorded) -> None:
    letters = read_to_end(topic_name("executions.dlq"), None, recorded.bootstrap)
    found = [decode(r.value, "DeadLetter")[1] for r in letters if r.value is not None]
    ours = [d for d in found if d["source_topic"] == topic_name("workflows.events")]
    assert len(ours) == 1 and ours[0]["reason"].startswith("undecodable")
    # Events of both instances were written after it too (the sink did not stop).
    assert set(recorded_ids(recorded.reader)) == topic_ids(recorded.events)


def test_a_redelivered_batch_is_not_duplicated(recorded: Recorded) -> None:
    store, reader = recorded.store, recorded.reader
    before = saga_answers(reader)
    # The same batch again, with the same dedup token: dropped on arrival.
    batch = Batch()
    for offset, event in enumerate(recorded.events[recorded.saga][:10]):
        record = {**event, "data": json.dumps(event["data"])}
        batch.add("workflow_events",
                  workflow_event_row(record, Source("redelivery-probe", 0, offset, 0)))  # fmt: skip
    probe = "SELECT count() FROM workflow_events WHERE source_topic = 'redelivery-probe'"
    for _ in range(2):
        store.insert("workflow_events", batch.rows["workflow_events"],
                     dedup_token=batch.dedup_token("workflow_events"))  # fmt: skip
    # Ten rows, not twenty: the second insert added nothing. (A merge may fold the originals
    # into these, never these into each other: each event_id is in them once.)
    assert store.query(probe).rows[0][0] == 10
    # Every record delivered again, cut into other batches by a second sink (other tokens):
    # duplicate rows land, and no answer changes.
    consumer = Consumer(consumer_config(f"wfh-again-{uuid.uuid4().hex[:8]}", recorded.bootstrap,
                                        **{"enable.partition.eof": False}))  # fmt: skip
    source_topic = topic_name("workflows.events")
    again = HistorySink(
        store, consumer, DeadLetterWriter(recorded.bootstrap, SystemClock()),
        routes={source_topic: Route("workflow_events", "WorkflowEvent", workflow_event_row)},
        max_batch=7, max_wait_s=0.05,
    )  # fmt: skip
    again.subscribe()
    deadline = time.monotonic() + TIMEOUT_S
    total = sum(len(v) for v in recorded.events.values()) + 1  # + the bad record
    try:
        while again.stats.records < total and time.monotonic() < deadline:
            again.step(0.5)
    finally:
        consumer.close()
    assert again.stats.records >= total
    assert saga_answers(reader) == before


# -- the documented queries on the known run ------------------------------------------------
def test_the_timeline_is_the_instance_s_events_in_order(recorded: Recorded) -> None:
    timeline = workflow_timeline(recorded.reader, recorded.saga)
    events = recorded.events[recorded.saga]
    assert [(e["seq"], e["event_type"], e["step_id"]) for e in timeline] == [
        (e["seq"], e["event_type"], e["step_id"]) for e in events
    ]
    approved = next(e for e in timeline if e["event_type"] == "approval_approved")
    assert approved["actor"] == "lead@example.com" and approved["data"]["note"] == "ship it"
    failed = [(e["step_id"], e["attempt"], e["data"]["final"]) for e in timeline
              if e["event_type"] == "step_failed" and e["error"]]  # fmt: skip
    assert failed == [("flaky", 1, False), ("publish", 1, True)]
    assert timeline[-1]["status"] in ("failed", "compensated")
    with pytest.raises(WorkflowNotFound):
        workflow_timeline(recorded.reader, "no-such-instance")


def test_open_steps_show_the_waiting_approval_as_stuck(recorded: Recorded) -> None:
    now_ms = int(SystemClock().now() * 1000)
    open_steps = open_workflow_steps(recorded.reader, now_ms).as_dicts()
    # The finished saga has no open step; the waiting instance's approval is past its 1 s.
    assert [(s["workflow_id"], s["step_id"]) for s in open_steps] == [(recorded.waiting, "hold")]
    hold = open_steps[0]
    assert hold["status"] == "waiting" and hold["stuck"] is True
    assert hold["expected_duration_s"] == 1.0 and hold["running_for_s"] >= 1.0
    requested = next(e for e in recorded.events[recorded.waiting]
                     if e["event_type"] == "approval_requested")  # fmt: skip
    assert int(hold["running_since"].timestamp() * 1000) == requested["event_time"]

    # Judged before the step started, it was not open; just after, open but not yet stuck.
    def hold_at(ms: int) -> list[tuple[str, bool]]:
        answer = open_workflow_steps(recorded.reader, ms).as_dicts()
        return [(s["step_id"], s["stuck"]) for s in answer if s["workflow_id"] == recorded.waiting]

    assert hold_at(requested["event_time"] - 1) == []
    assert hold_at(requested["event_time"] + 10) == [("hold", False)]


def _step_durations(recorded: Recorded, step: str) -> list[int]:
    """First start to success of `step` in each saga instance that succeeded it."""
    found = []
    for instance in (recorded.saga, recorded.rejected):
        events = [e for e in recorded.events[instance] if e["step_id"] == step]
        starts = [
            e["event_time"]
            for e in events
            if e["event_type"] in ("step_scheduled", "sleep_started", "approval_requested")
        ]
        ends = [e["event_time"] for e in events if e["event_type"] == "step_succeeded"]
        if starts and ends:
            found.append(ends[0] - min(starts))
    return found  # fmt: skip


def test_step_duration_and_failure_rate_by_definition_version(recorded: Recorded) -> None:
    stats = {(r["definition_id"], r["definition_version"], r["step_id"]): r
             for r in workflow_step_stats(recorded.reader).as_dicts()}  # fmt: skip
    assert {k[2] for k in stats if k[0] == "wfh-saga"} == {
        "fetch", "left", "right", "flaky", "nap", "sign_off", "publish"}  # fmt: skip
    # Two instances, each failing flaky's first attempt and passing its second.
    flaky = stats[("wfh-saga", 1, "flaky")]
    assert (flaky["instances"], flaky["attempts"], flaky["failed_attempts"]) == (2, 4, 2)
    assert (flaky["attempt_failure_rate"], flaky["succeeded"], flaky["failed"]) == (0.5, 2, 0)
    publish = stats[("wfh-saga", 1, "publish")]  # only the approved instance got this far
    assert (publish["instances"], publish["failed"], publish["succeeded"]) == (1, 1, 0)
    assert publish["attempt_failure_rate"] == 1.0
    sign_off = stats[("wfh-saga", 1, "sign_off")]  # approved once, rejected once
    assert (sign_off["instances"], sign_off["succeeded"], sign_off["failed"]) == (2, 1, 1)
    for step in ("fetch", "left", "right", "flaky", "nap", "sign_off"):
        row, durations = stats[("wfh-saga", 1, step)], _step_durations(recorded, step)
        assert row["duration_max_ms"] == max(durations), step
        assert row["duration_p50_ms"] in durations, step
    assert min(_step_durations(recorded, "nap")) >= 1000  # a 1 s sleep
    hold = stats[("wfh-waiting", 1, "hold")]
    assert (hold["instances"], hold["succeeded"], hold["failed"]) == (1, 0, 0)


def test_approval_latency_and_decisions_per_actor(recorded: Recorded) -> None:
    rows = {r["actor"]: r for r in workflow_approvals(recorded.reader).as_dicts()}
    assert sorted(rows) == ["auditor@example.com", "late@example.com", "lead@example.com"]
    assert {(r["definition_id"], r["step_id"]) for r in rows.values()} == {("wfh-saga", "sign_off")}
    for actor, instance, decision, note in (
        ("lead@example.com", recorded.saga, "approval_approved", "ship it"),
        ("auditor@example.com", recorded.rejected, "approval_rejected", "not today"),
    ):
        row, events = rows[actor], recorded.events[instance]
        assert (row["approved"], row["rejected"], row["fenced"]) == (
            int(decision == "approval_approved"),
            int(decision == "approval_rejected"),
            0,
        )
        asked = next(e for e in events if e["event_type"] == "approval_requested")["event_time"]
        decided = next(e for e in events if e["event_type"] == decision)["event_time"]
        latency = round((decided - asked) / 1000, 3)
        assert row["latency_p50_s"] == row["latency_max_s"] == latency, actor
        assert row["last_note"] == note
    late = rows["late@example.com"]
    assert (late["approved"], late["rejected"], late["fenced"]) == (0, 0, 1)
    assert late["latency_p50_s"] is None and late["last_decision_at"] is None


def test_compensations_per_definition(recorded: Recorded) -> None:
    rows = {r["definition_id"]: r for r in workflow_compensations(recorded.reader).as_dicts()}
    saga = rows["wfh-saga"]
    # Both instances compensated fetch, left and right (flaky has no compensation).
    assert (saga["instances"], saga["compensating"], saga["compensations"]) == (2, 2, 6)
    assert (saga["comp_succeeded"], saga["comp_failed"], saga["comp_skipped"]) == (6, 0, 0)
    assert (saga["comp_attempts"], saga["blocked"]) == (6, 0)
    ended = Counter(status_of(recorded.events[i]) for i in (recorded.saga, recorded.rejected))
    assert {s: saga[f"ended_{s}"] for s in ended} == dict(ended)
    waiting = rows["wfh-waiting"]
    assert (waiting["instances"], waiting["compensating"], waiting["compensations"]) == (1, 0, 0)


def test_an_operator_repair_is_in_the_timeline_and_the_statistics(recorded: Recorded) -> None:
    timeline = workflow_timeline(recorded.reader, recorded.repaired)
    retried = [e for e in timeline if e["event_type"] == "step_retried"]
    assert [(e["step_id"], e["actor"]) for e in retried] == [("flaky", "ops@example.com")]
    scheduled = [e for e in timeline if e["event_type"] == "step_scheduled"]
    assert [e["attempt"] for e in scheduled] == [1, 2]

    # Judged while the retried attempt ran, the step is open since the retry, not the first
    # start; judged while the instance stood failed, nothing of it was open.
    def repaired_at(ms: int) -> list[Any]:
        answer = open_workflow_steps(recorded.reader, ms).as_dicts()
        return [s for s in answer if s["workflow_id"] == recorded.repaired]

    events = recorded.events[recorded.repaired]  # as the topic has them: times in ms
    failed_at = next(e["event_time"] for e in events if e["event_type"] == "workflow_failed")
    retry_at = [e["event_time"] for e in events if e["event_type"] == "step_scheduled"][1]
    assert repaired_at(failed_at) == []
    running = repaired_at(retry_at)
    assert [(s["step_id"], s["attempt"], s["stuck"]) for s in running] == [("flaky", 2, False)]
    assert int(running[0]["running_since"].timestamp() * 1000) == retry_at
    stats = next(r for r in workflow_step_stats(recorded.reader).as_dicts()
                 if r["definition_id"] == "wfh-repair")  # fmt: skip
    assert (stats["attempts"], stats["failed_attempts"], stats["attempt_failure_rate"]) == (
        2, 1, 0.5)  # fmt: skip
    assert (stats["succeeded"], stats["failed"]) == (1, 0)
    repair = next(r for r in workflow_compensations(recorded.reader).as_dicts()
                  if r["definition_id"] == "wfh-repair")  # fmt: skip
    assert (repair["ended_succeeded"], repair["ended_failed"], repair["compensating"]) == (1, 0, 0)


def test_the_cli_verb_prints_each_answer_as_json(recorded: Recorded) -> None:
    where = ["--history-dir", str(recorded.sink_settings.history.history_dir)]
    code, out, err = run_cli(["history", "workflows", "timeline", recorded.saga, "--json", *where])
    assert code == 0, err
    assert [e["seq"] for e in json.loads(out)] == [e["seq"] for e in recorded.events[recorded.saga]]
    code, out, err = run_cli(["history", "workflows", "approvals", "--json", *where])
    assert code == 0, err
    assert {r["actor"] for r in json.loads(out)} >= {"lead@example.com", "auditor@example.com"}
    code, out, err = run_cli(["history", "workflows", "open", "--json", *where])
    assert code == 0 and [s["step_id"] for s in json.loads(out)] == ["hold"], err
    for verb in ("steps", "compensations"):
        code, out, err = run_cli(["history", "workflows", verb, "--json", *where])
        assert code == 0 and any(r["definition_id"] == "wfh-saga" for r in json.loads(out)), err
    code, _out, err = run_cli(["history", "workflows", "steps", "--since", "yesterday", *where])
    assert code == 2 and "--since" in err

"""A known history, published to the real broker, and the answers it must produce.

`build_scenario()` writes the lives of a handful of executions as the timer and the workers
would (same event ids, same fields): on-time and late fires, skipped slots one by one and as
a range, a missing slot, a paused stretch, retries, a fenced stale outcome, a cancellation,
permanent and exhausted dead letters, an undecodable record and an unstorable one. Each story
also states what the history must say about it. `documented_answers` reads every answer the
scenario touches; `history_reference.py` recomputes the analyst answers from the events in
plain Python, each event counted once, as the SQL must.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.core.identity import execution_id as make_execution_id
from tickwheel.events import requested_event
from tickwheel.history import (
    analyst_queries,
    execution_timeline,
    run_query,
    schedule_audit,
)
from tickwheel.history._reader import HistoryReader
from tickwheel.sdk.jobs import validate_job
from tickwheel.topology import topic_name

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
MIN = 60_000
DAY = 86_400_000


def ms(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)


def iso(ms_value: int) -> str:
    return (EPOCH + dt.timedelta(milliseconds=ms_value)).isoformat()


# Far enough ahead that no retention has expired it, whatever day the suite runs.
T0 = ms(dt.datetime(2099, 3, 1, 10, 0, tzinfo=UTC))  # day 0, 10:00
T1 = T0 + DAY + 60 * MIN  # day 1, 11:00
WINDOW = (iso(T0 - 10 * 60 * MIN), iso(T0 + 2 * DAY))
AS_OF = iso(T1 + 2 * 60 * MIN)
PRIORITY = {"noop": "normal", "report": "low", "fail": "high"}
GARBAGE = b"this is not an avro record"
UNSTORABLE_ID = "from-the-year-2400"  # an event dated beyond what DateTime64(3) holds


@dataclass
class Job:
    job_id: str
    job_type: str
    tenant_id: str
    version: int = 1


@dataclass
class Scenario:
    """What gets published, in order, and what the history must then say."""

    records: list[tuple[str, str | None, bytes | None]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    letters: list[dict[str, Any]] = field(default_factory=list)
    outcome: dict[str, str | None] = field(default_factory=dict)  # execution -> terminal
    story: dict[str, str] = field(default_factory=dict)  # story name -> execution id
    audit_job: str = "audit-job"
    audit_window: tuple[int, int] = (T0, T0 + 12 * MIN)
    audit_statuses: list[str] = field(default_factory=list)

    def publish(self, bootstrap: str) -> None:
        producer = EventProducer(bootstrap)
        for topic, key, value in self.records:
            producer.send(topic_name(topic), key, value)
        producer.flush()

    # -- writers, as the timer and the workers write ---------------------------------------
    def _send(self, topic: str, key: str | None, record_name: str, value: dict[str, Any]) -> None:
        self.records.append((topic, key, encode(record_name, value)))

    def define(self, job: Job, spec: dict[str, Any], at: int, **extra: Any) -> None:
        spec = {"jobId": job.job_id, "type": job.job_type, "tenantId": job.tenant_id, **spec}
        record = validate_job(spec, at, version=job.version, **extra)
        self._send("jobs.definitions", job.job_id, "JobDefinition", record)

    def delete(self, job: Job) -> None:
        self.records.append(("jobs.definitions", job.job_id, None))

    def event(
        self, job: Job, kind: str, execution: str, attempt: int, slot: int, at: int,
        fire: int | None = None, **fields: Any,
    ) -> dict[str, Any]:  # fmt: skip
        worker = fields.get("worker_id")
        if kind == "skipped":
            event_id = f"skipped:{execution}"
        elif worker:
            event_id = f"{kind}:{execution}:{attempt}:{worker}:{at}"
        else:
            event_id = f"{kind}:{execution}:{attempt}"
        event = {
            "event_id": event_id, "event_time": at, "event_type": kind, "job_id": job.job_id,
            "job_type": job.job_type, "tenant_id": job.tenant_id, "execution_id": execution,
            "attempt": attempt, "scheduled_time": slot, "fire_time": fire, "worker_id": None,
            "lease_deadline": None, "error": None, "error_kind": None, "reason": None,
            "details": None, **fields,
        }  # fmt: skip
        self.events.append(event)
        self._send("executions.events", job.job_id, "ExecutionEvent", event)
        return event

    def request(
        self, job: Job, execution: str, attempt: int, slot: int, fire: int, at: int,
        trigger: str, late: bool = False,
    ) -> None:  # fmt: skip
        request = {
            "execution_id": execution, "job_id": job.job_id, "job_version": job.version,
            "job_type": job.job_type, "tenant_id": job.tenant_id,
            "priority": PRIORITY[job.job_type], "attempt": attempt, "scheduled_time": slot,
            "fire_time": fire, "period_start": slot, "period_end": None, "payload": "{}",
            "max_attempts": 3, "trigger": trigger, "late": late, "requested_at": at,
            "lease_seconds": 30, "heartbeat_seconds": 10,
        }  # fmt: skip
        self.requests.append(request)
        self._send(f"executions.{PRIORITY[job.job_type]}", job.job_id, "ExecutionRequest", request)
        # Not published: the sink derives the `requested` event from the request itself.
        self.events.append(requested_event(request))

    def lease(self, job: Job, execution: str, attempt: int, slot: int, fire: int, at: int,
              worker: str) -> None:  # fmt: skip
        self.event(job, "leased", execution, attempt, slot, at, fire, worker_id=worker,
                   lease_deadline=at + 30_000)  # fmt: skip

    def dead_letter(self, job: Job, execution: str, attempt: int, at: int, reason: str,
                    error: str) -> None:  # fmt: skip
        letter = {
            "dead_letter_id": f"dl:{execution}", "event_time": at, "reason": reason,
            "source_topic": topic_name("executions.events"), "source_partition": 0,
            "source_offset": 0, "execution_id": execution, "job_id": job.job_id,
            "attempt": attempt, "error": error, "payload": "{}", "raw_value": None,
        }  # fmt: skip
        self.letters.append(letter)
        self._send("executions.dlq", job.job_id, "DeadLetter", letter)


def _simple_run(sc: Scenario, job: Job, slot: int, *, fire_delay: int, lateness: int,
                worker: str = "w-1", trigger: str = "scheduled", late: bool = False,
                heartbeats: int = 0) -> str:  # fmt: skip
    """requested → leased → heartbeats → succeeded, on attempt 1."""
    execution = make_execution_id(job.job_id, job.version, slot)
    fire = slot + fire_delay
    at = fire + lateness
    sc.request(job, execution, 1, slot, fire, at, trigger, late)
    sc.lease(job, execution, 1, slot, fire, at + 200, worker)
    for beat in range(1, heartbeats + 1):
        sc.event(job, "heartbeat", execution, 1, slot, at + beat * 10_000, fire,
                 worker_id=worker, lease_deadline=at + beat * 10_000 + 30_000)  # fmt: skip
    sc.event(job, "succeeded", execution, 1, slot, at + 25_000, fire, worker_id=worker)
    sc.outcome[execution] = "succeeded"
    return execution


def build_scenario() -> Scenario:
    sc = Scenario()
    audit = Job("audit-job", "report", "acme")
    # -- a recurring job audited over [T0, T0+12m): slots 0-3 fire, 4 skipped, 5-7 skipped as a
    # range, 8 missing, 9 fires late (catch-up) and succeeds on a retry, 10-11 paused.
    sc.define(audit, {"cron": "* * * * *", "timezone": "UTC", "jitter": "5s"}, T0 - 30_000)
    slot = [T0 + k * MIN for k in range(12)]
    # Two records no table can take, on the partition of the audited job: the sink must
    # dead-letter them and go on with the events that follow.
    sc.records.append(("executions.events", "audit-job", GARBAGE))
    unstorable = {
        "event_id": UNSTORABLE_ID, "event_time": 13_569_465_600_000, "event_type": "leased",
        "job_id": "audit-job", "job_type": "report", "tenant_id": "acme", "execution_id": "x",
        "attempt": 1, "scheduled_time": T0, "fire_time": None, "worker_id": "w-9",
        "lease_deadline": None, "error": None, "error_kind": None, "reason": None, "details": None,
    }  # fmt: skip
    sc.records.append(("executions.events", "audit-job", encode("ExecutionEvent", unstorable)))
    for k, (jitter, lateness) in enumerate([(0, 120), (1500, 250), (3000, 80), (500, 400)]):
        sc.story[f"audit-{k}"] = _simple_run(sc, audit, slot[k], fire_delay=jitter,
                                             lateness=lateness)  # fmt: skip
    skipped4 = make_execution_id(audit.job_id, 1, slot[4])
    sc.event(audit, "skipped", skipped4, 0, slot[4], slot[4] + 120_000, reason="misfire_skip",
             details=json.dumps({"job_version": 1}))  # fmt: skip
    sc.event(audit, "skipped", make_execution_id(audit.job_id, 1, slot[7]), 0, slot[7],
             slot[7] + 60_000, reason="misfire_skip:range",
             details=json.dumps({"job_version": 1, "after": slot[4], "through": slot[7],
                                 "count": 3, "disposition": "skip"}))  # fmt: skip
    late = make_execution_id(audit.job_id, 1, slot[9])
    sc.story["audit-9"] = late
    at = slot[9] + 95_000
    sc.request(audit, late, 1, slot[9], slot[9], at, "catch_up", late=True)
    sc.lease(audit, late, 1, slot[9], slot[9], at + 100, "w-1")
    sc.event(audit, "failed", late, 1, slot[9], at + 2_000, slot[9], worker_id="w-1",
             error="boom", error_kind="retryable")  # fmt: skip
    sc.event(audit, "retry_scheduled", late, 1, slot[9], at + 2_100, slot[9],
             reason="retryable_error", details=json.dumps({"next_attempt_at": at + 30_000}))  # fmt: skip
    sc.request(audit, late, 2, slot[9], slot[9], at + 30_000, "retry")
    sc.lease(audit, late, 2, slot[9], slot[9], at + 30_100, "w-2")
    sc.event(audit, "succeeded", late, 2, slot[9], at + 33_000, slot[9], worker_id="w-2")
    sc.outcome[late] = "succeeded"
    paused = Job("audit-job", "report", "acme", version=2)
    sc.define(paused, {"cron": "* * * * *", "timezone": "UTC", "jitter": "5s",
                       "enabled": False}, T0 + 9 * MIN + 30_000, created_at_ms=T0 - 30_000)  # fmt: skip
    sc.audit_statuses = ["fired"] * 4 + ["skipped"] * 4 + ["missing", "fired", "paused", "paused"]

    # -- one-off jobs on day 0
    noop = Job("noop-a", "noop", "acme")
    sc.define(noop, {"runAt": iso(T0 + 20 * MIN)}, T0 - 5 * MIN)
    sc.story["succeeded"] = _simple_run(sc, noop, T0 + 20 * MIN, fire_delay=0, lateness=50,
                                        heartbeats=2)  # fmt: skip
    perm = Job("fail-perm", "fail", "globex")
    sc.define(perm, {"runAt": iso(T0 + 30 * MIN)}, T0 - 5 * MIN)
    ex = sc.story["permanent"] = make_execution_id(perm.job_id, 1, T0 + 30 * MIN)
    s = T0 + 30 * MIN
    sc.request(perm, ex, 1, s, s, s + 100, "scheduled")
    sc.lease(perm, ex, 1, s, s, s + 300, "w-1")
    sc.event(perm, "failed", ex, 1, s, s + 2_000, s, worker_id="w-1", error="bad input",
             error_kind="permanent")  # fmt: skip
    sc.event(perm, "dead_lettered", ex, 1, s, s + 3_000, s, reason="permanent_error",
             error="bad input")  # fmt: skip
    sc.dead_letter(perm, ex, 1, s + 3_000, "permanent_error", "bad input")
    sc.outcome[ex] = "dead_lettered"
    sc.delete(perm)

    # -- day 1: fencing, an open execution, a cancellation, exhausted retries, a manual run
    fenced = Job("fenced-job", "noop", "globex")
    sc.define(fenced, {"runAt": iso(T1)}, T1 - 5 * MIN)
    ex = sc.story["fenced"] = make_execution_id(fenced.job_id, 1, T1)
    sc.request(fenced, ex, 1, T1, T1, T1 + 90, "scheduled")
    sc.lease(fenced, ex, 1, T1, T1, T1 + 1_000, "w-1")
    sc.request(fenced, ex, 2, T1, T1, T1 + 31_000, "lease_expired")
    sc.lease(fenced, ex, 2, T1, T1, T1 + 32_000, "w-2")
    sc.event(fenced, "succeeded", ex, 1, T1, T1 + 40_000, T1, worker_id="w-1")
    sc.event(fenced, "fenced", ex, 1, T1, T1 + 40_100, T1, reason="stale_attempt")
    sc.event(fenced, "succeeded", ex, 2, T1, T1 + 45_000, T1, worker_id="w-2")
    sc.outcome[ex] = "succeeded"

    running = Job("open-job", "report", "acme")
    s = T1 + 10 * MIN
    sc.define(running, {"runAt": iso(s)}, T1 - 5 * MIN)
    ex = sc.story["open"] = make_execution_id(running.job_id, 1, s)
    sc.request(running, ex, 1, s, s + 700, s + 900, "scheduled")
    sc.lease(running, ex, 1, s, s + 700, s + 1_000, "w-1")
    sc.event(running, "heartbeat", ex, 1, s, s + 11_000, s + 700, worker_id="w-1",
             lease_deadline=s + 41_000)  # fmt: skip
    sc.outcome[ex] = None

    stale = Job("fenced-only", "report", "globex")
    s = T1 + 20 * MIN
    sc.define(stale, {"runAt": iso(s)}, T1 - 5 * MIN)
    ex = sc.story["fenced-open"] = make_execution_id(stale.job_id, 1, s)
    sc.request(stale, ex, 1, s, s, s + 60, "scheduled")
    sc.lease(stale, ex, 1, s, s, s + 1_000, "w-1")
    sc.request(stale, ex, 2, s, s, s + 31_000, "lease_expired")
    sc.event(stale, "succeeded", ex, 1, s, s + 35_000, s, worker_id="w-1")
    sc.event(stale, "fenced", ex, 1, s, s + 35_100, s, reason="stale_attempt")
    sc.outcome[ex] = None

    cancelled = Job("cancelled-job", "noop", "acme")
    s = T1 + 30 * MIN
    sc.define(cancelled, {"runAt": iso(s)}, T1 - 5 * MIN)
    ex = sc.story["cancelled"] = make_execution_id(cancelled.job_id, 1, s)
    sc.request(cancelled, ex, 1, s, s, s + 30, "scheduled")
    sc.event(cancelled, "cancelled", ex, 1, s, s + 1_000, s, worker_id="w-1", reason="operator")
    sc.outcome[ex] = "cancelled"

    flaky = Job("exhaust", "fail", "acme")
    s = T1 + 40 * MIN
    sc.define(flaky, {"runAt": iso(s), "maxAttempts": 3}, T1 - 5 * MIN)
    ex = sc.story["exhausted"] = make_execution_id(flaky.job_id, 1, s)
    for attempt in (1, 2, 3):
        at = s + 20 + (attempt - 1) * 10_000
        sc.request(flaky, ex, attempt, s, s, at, "scheduled" if attempt == 1 else "retry")
        sc.lease(flaky, ex, attempt, s, s, at + 100, f"w-{attempt}")
        sc.event(flaky, "failed", ex, attempt, s, at + 1_000, s, worker_id=f"w-{attempt}",
                 error="flaky", error_kind="retryable")  # fmt: skip
        if attempt < 3:
            sc.event(
                flaky, "retry_scheduled", ex, attempt, s, at + 1_100, s, reason="retryable_error"
            )
    sc.event(flaky, "dead_lettered", ex, 3, s, s + 21_200, s, reason="max_attempts_exhausted",
             error="flaky")  # fmt: skip
    sc.dead_letter(flaky, ex, 3, s + 21_200, "max_attempts_exhausted", "flaky")
    sc.outcome[ex] = "dead_lettered"

    manual = Job("manual-job", "noop", "globex")
    sc.define(manual, {"cron": "0 * * * *", "timezone": "UTC"}, T1 - 5 * MIN)
    s = T1 + 50 * MIN + 123
    sc.story["manual"] = _simple_run(sc, manual, s, fire_delay=0, lateness=0, trigger="manual")

    # -- other families, and two records no table can take
    for n, kind in enumerate(["started", "step_scheduled"]):
        sc._send("workflows.events", "wf-1", "WorkflowEvent", {
            "event_id": f"wf-1:{n}", "event_time": T1 + n, "workflow_id": "wf-1",
            "definition_id": "nightly", "definition_version": 1, "event_type": kind,
            "step_id": None if n == 0 else "extract", "attempt": 0,
            "data": json.dumps({"tenant_id": "acme"}),
        })  # fmt: skip
    sc._send("alerts", "alert-1", "Alert", {
        "alert_id": "alert-1", "event_time": T1 + 5, "kind": "job_absent", "severity": "warning",
        "job_id": "audit-job", "tenant_id": "acme", "message": "no success in 26h", "details": None,
    })  # fmt: skip
    return sc


# -- reference answers, computed from the events as published -------------------------------
def documented_answers(reader: HistoryReader, sc: Scenario) -> dict[str, Any]:
    """Every documented answer the scenario touches: the analyst queries, the audit, and the
    timeline of every execution."""
    window = {"since": WINDOW[0], "until": WINDOW[1]}
    params = {
        "fire_lateness": window, "failure_rates": window, "tenant_daily": window,
        "open_executions": {"as_of": AS_OF},
    }  # fmt: skip
    answers: dict[str, Any] = {}
    for name in analyst_queries():
        if name in params:
            answers[name] = run_query(reader, name, params[name]).rows
    answers["audit"] = schedule_audit(reader, sc.audit_job, *sc.audit_window)
    executions = sorted({e["execution_id"] for e in sc.events})
    answers["timelines"] = {ex: execution_timeline(reader, ex) for ex in executions}
    return answers

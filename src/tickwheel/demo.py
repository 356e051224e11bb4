"""`tickwheel demo` (what `make run` runs): the local stack with a handful of example jobs, and a
live, readable account of occurrences firing, executions finishing, and what the history holds.

The example jobs: a one-off, an every-few-seconds cron, a job that fails twice then succeeds,
and a permanent failure; and a workflow (task → sleep → approval → task, the last failing,
so the first is compensated: `tickwheel.demo_workflows`). Ctrl-C (or --duration) stops the
account and then the stack.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any, cast

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.adapters.kafka.config import quiet_client_logs
from tickwheel.adapters.kafka.tail import Tail
from tickwheel.clock import Clock, SystemClock
from tickwheel.demo_workflows import (
    approve_when_asked,
    describe_workflow_event,
    start_demo_workflow,
)
from tickwheel.events import requested_event
from tickwheel.records import Alert, ExecutionEvent, WorkflowEvent
from tickwheel.sdk.alerts import describe_alert
from tickwheel.sdk.jobs import PRIORITIES, JobExists, JobsClient
from tickwheel.stack import supervisor
from tickwheel.topology import topic_name

ARROWS = {
    "requested": "fired",
    "skipped": "skipped",
    "leased": "leased by",
    "heartbeat": "heartbeat from",
    "succeeded": "SUCCEEDED",
    "failed": "FAILED",
    "retry_scheduled": "retry scheduled",
    "dead_lettered": "DEAD-LETTERED",
    "fenced": "fenced (stale attempt ignored)",
    "cancelled": "cancelled",
}


def example_jobs(now_ms: int) -> list[dict[str, Any]]:
    stamp = datetime.fromtimestamp(now_ms / 1000, tz=UTC).strftime("%H%M%S")
    soon = datetime.fromtimestamp(now_ms / 1000 + 8, tz=UTC).isoformat().replace("+00:00", "Z")
    later = datetime.fromtimestamp(now_ms / 1000 + 12, tz=UTC).isoformat().replace("+00:00", "Z")
    return [
        {"jobId": f"demo-once-{stamp}", "type": "noop", "runAt": soon, "tenantId": "acme"},
        {
            "jobId": "demo-every-5s",
            "type": "sleep",
            "payload": {"seconds": 1},
            "cron": "*/5 * * * * *",
            "timezone": "Europe/London",
            "jitter": "0s",
            "tenantId": "acme",
            "misfirePolicy": "coalesce",
        },
        {
            "jobId": "demo-flaky",
            "type": "fail",
            "payload": {"mode": "retryable", "times": 2},
            "cron": "*/30 * * * * *",
            "jitter": "0s",
            "maxAttempts": 5,
            "tenantId": "globex",
            "misfirePolicy": "coalesce",
        },
        {
            "jobId": f"demo-broken-{stamp}",
            "type": "fail",
            "payload": {"mode": "permanent", "times": 1},
            "runAt": later,
            "tenantId": "globex",
        },
        # Owed a success within 8 s; its one run fails three times first (retries 2, 4, 8 s
        # apart): the watchdog opens job_overdue, and resolves it once the run succeeds.
        {
            "jobId": f"demo-late-{stamp}",
            "type": "fail",
            "payload": {"mode": "retryable", "times": 3},
            "cron": "*/5 * * * * *",
            "maxRuns": 1,
            "expectedMaxInterval": "8s",
            "jitter": "0s",
            "maxAttempts": 5,
            "tenantId": "acme",
        },
    ]


def _clock_text(ms: int | None) -> str:
    if ms is None:
        return "--:--:--"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M:%S")


def describe(event: ExecutionEvent) -> str:
    kind = event["event_type"]
    what = ARROWS.get(kind, kind)
    who = (
        f" {event['worker_id']}"
        if kind in ("leased", "heartbeat") and event.get("worker_id")
        else ""
    )
    extra = ""
    if kind == "requested":
        trigger = (event.get("reason") or "scheduled").split(":")[0]
        if trigger in ("retry", "lease_expired"):
            what = f"re-issued ({trigger.replace('_', ' ')})"
            extra = f" for slot {_clock_text(event['scheduled_time'])}"
        else:
            lateness = event["event_time"] - (event.get("fire_time") or event["event_time"])
            extra = (
                f" (slot {_clock_text(event['scheduled_time'])}, {lateness} ms after its fire time)"
            )
    elif kind in ("failed", "dead_lettered") and event.get("error"):
        extra = f": {event['error']}"
    elif kind == "retry_scheduled" and event["details"]:
        details = json.loads(event["details"])
        extra = f" in {details['delay_ms'] / 1000:.1f}s as attempt {details['next_attempt']}"
    elif kind == "skipped":
        extra = f" ({event.get('reason')})"
    label = event["job_id"]
    if label.startswith("__wf/"):  # a workflow step's execution (its step key, decision 0061)
        label = f"step of {label.split('/')[1][:14]}"
    return (
        f"[{_clock_text(event['event_time'])}] {label:<22} "
        f"attempt {event['attempt']}  {what}{who}{extra}"
    )


def history_summary() -> str:
    """What the history store holds now, through `tickwheel history sql` (which routes to the
    process that owns the embedded store)."""
    sql = (
        "SELECT event_type, uniqExact(event_id) AS n FROM execution_events "
        "GROUP BY event_type ORDER BY event_type"
    )
    result = subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", "history", "sql", sql, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if result.returncode != 0:
        return f"history: not available yet ({result.stderr.strip()[:120]})"
    try:
        rows = json.loads(result.stdout)
    except json.JSONDecodeError:
        return "history: not available yet"
    if isinstance(rows, dict):
        rows = rows.get("rows", [])
    counts = ", ".join(f"{r['event_type']}={r['n']}" for r in rows) or "no events yet"
    return f"history (ClickHouse execution_events): {counts}"


def _with_progress(label: str, work: Any) -> Any:
    """Run `work()` in a thread while showing a live elapsed-time line (for anything slow)."""
    import threading

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed back to the caller below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    thread.start()
    frames = "|/-\\"
    tick = 0
    while thread.is_alive():
        if sys.stdout.isatty():
            print(
                f"\r  {frames[tick % 4]} {label}... {time.monotonic() - started:4.1f}s",
                end="",
                flush=True,
            )
        tick += 1
        thread.join(0.2)
    if sys.stdout.isatty():
        print("\r" + " " * (len(label) + 20) + "\r", end="")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_demo(duration: float | None, keep: bool, clock: Clock | None = None) -> int:
    clock = clock or SystemClock()
    # The account below is the output: librdkafka's own lines (a refused connection as the
    # stack stops) are not. Failures still reach this code as exceptions.
    quiet_client_logs()
    print(
        "tickwheel demo: starting the local stack (Kafka, topology, timer, worker, history, "
        "watchdog, orchestrator, API)..."
    )
    started = time.monotonic()
    status = supervisor.read_status()
    if not status.get("running"):
        status = _with_progress(
            "starting Kafka and the services",
            lambda: supervisor.start_detached(supervisor.StackOptions()),
        )
    print(f"stack up in {time.monotonic() - started:.1f}s; Kafka at {status['bootstrap_servers']}")
    for process in status["processes"]:
        print(f"  {process['role']:<8} {process['name']:<10} pid {process['pid']}")
    # Requests are the `requested` events (the timer publishes no separate event for them).
    tail = Tail(
        [topic_name("executions.events"), topic_name("workflows.events"), topic_name("alerts")]
        + [topic_name(f"executions.{p}") for p in PRIORITIES],
        status["bootstrap_servers"],
    )
    jobs = JobsClient(status["bootstrap_servers"], clock)
    print("\nexample jobs:")
    for spec in example_jobs(int(clock.now() * 1000)):
        try:
            jobs.create(spec)
            state = "created"
        except JobExists:
            # Kept from an earlier run: what it missed while the stack was down is coalesced
            # into one run (misfirePolicy), and the definition is brought up to date.
            changes = {k: v for k, v in spec.items() if k != "jobId"}
            state = f"exists; updated to version {jobs.update(spec['jobId'], changes)['version']}"
        schedule = spec.get("cron") or f"once at {spec['runAt']}"
        print(f"  {spec['jobId']:<22} {spec['type']:<5} {schedule:<24} {state}")
    flows, workflow_id = start_demo_workflow(status["bootstrap_servers"])
    print(f"\nexample workflow demo_order started: {workflow_id}")
    print(f"  (tickwheel workflows get {workflow_id})")
    print("\nwhat happens (Ctrl-C to stop):")
    next_summary = time.monotonic() + 15
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while deadline is None or time.monotonic() < deadline:
            for value in tail.poll(0.5):
                try:
                    name, record = decode(value)
                except UndecodableRecord as exc:
                    print(f"  (a record could not be decoded: {exc.reason})")
                    continue
                # The tail reads several topics: the record's name says which type it is.
                if name == "Alert":  # the watchdog's transitions (docs/watchdog.md)
                    print(describe_alert(cast(Alert, record)), flush=True)
                    continue
                if name == "WorkflowEvent":
                    workflow_event = cast(WorkflowEvent, record)
                    print(describe_workflow_event(workflow_event), flush=True)
                    done = approve_when_asked(flows, workflow_event, workflow_id)
                    if done:
                        print(done, flush=True)
                    continue
                event = (
                    requested_event(record)
                    if name == "ExecutionRequest"
                    else cast(ExecutionEvent, record)
                )
                if event["event_type"] != "heartbeat":
                    print(describe(event), flush=True)
            if time.monotonic() >= next_summary:
                print(f"-- {history_summary()}", flush=True)
                next_summary = time.monotonic() + 15
    except KeyboardInterrupt:
        pass
    finally:
        tail.close()
        # Stop the stack even if the terminal went away (a closed pipe makes print fail).
        with contextlib.suppress(OSError):
            print(f"-- {history_summary()}")
        if keep:
            with contextlib.suppress(OSError):
                print("the stack keeps running: `tickwheel stack status`, `tickwheel stack down`")
        else:
            with contextlib.suppress(OSError):
                print("stopping the stack...")
            supervisor.stop()
            with contextlib.suppress(OSError):
                print("stack stopped; its data stays in .tickwheel/ for the next run")
    return 0

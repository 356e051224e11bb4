"""Where one worker lane waits: timestamps per stage of every batch, against the real broker.

The service's own lane (`PriorityLane`, its real consumer and the worker's real publisher)
runs in this process over N pre-published no-op requests, with thin wrappers that record,
per loop turn and per batch, when each stage happened:

    consume called → consume returned (n records) → leases produced → leases acknowledged
    → outcomes produced → outcomes acknowledged → the request offsets committed

and the lane thread's own time split between waiting in `consume` and everything else.
The wrappers add a few µs per batch, nothing per execution. Figures, never pass/fail:

    .venv/bin/python bench/worker_stages.py [--executions N]
    PYTHONPATH=/tmp/old/src .venv/bin/python bench/worker_stages.py    # another revision
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import percentile  # noqa: E402
from bench.profile_worker import noop_request  # noqa: E402
from tickwheel.adapters.avro import encode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.client import Consumer  # noqa: E402
from tickwheel.adapters.kafka.producer import EventProducer  # noqa: E402
from tickwheel.clock import SystemClock  # noqa: E402
from tickwheel.jobtypes import builtin_registry  # noqa: E402
from tickwheel.services.worker.control import CancelRegistry  # noqa: E402
from tickwheel.services.worker.heartbeats import HeartbeatScheduler  # noqa: E402
from tickwheel.services.worker.lane import PriorityLane  # noqa: E402
from tickwheel.services.worker.publisher import EventPublisher  # noqa: E402
from tickwheel.services.worker.settings import WorkerSettings, lane_consumer_config  # noqa: E402
from tickwheel.stack.broker import BrokerConfig, LocalKafka  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402

now = time.perf_counter


class Trace:
    """Stage times, appended from the lane's thread and the delivery thread."""

    def __init__(self) -> None:
        # start, end, the lane thread's CPU clock at the start, its CPU inside, asked, got
        self.consumes: list[tuple[float, float, float, float, int, int]] = []
        self.batches: list[dict[str, float]] = []  # one per publish_batch of leases
        self.outcomes: list[dict[str, float]] = []
        self.commits: list[tuple[float, dict[int, int]]] = []
        self.acked_outcomes = 0
        self.done = threading.Event()
        self.process_cpu = time.process_time()
        self.steps: dict[str, list[tuple[float, float, float]]] = {}  # name -> start, wall, cpu
        self.thread_cpu: dict[str, float] = {}  # thread name -> CPU s while the lane ran
        self.expected = 0
        self.last_offsets: list[dict[int, int]] = []  # per lease batch: partition -> last offset


class TracedConsumer:
    """The lane's real consumer, its `consume` and `commit` timed."""

    def __init__(self, inner: Consumer, trace: Trace) -> None:
        self._inner, self._trace = inner, trace

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        started, cpu = now(), time.thread_time()
        got = self._inner.consume(num_messages, timeout)
        self._trace.consumes.append(
            (started, now(), cpu, time.thread_time() - cpu, num_messages, len(got))
        )
        return got

    def poll(self, timeout: float) -> Any:
        started, cpu = now(), time.thread_time()
        got = self._inner.poll(timeout)
        self._trace.consumes.append(
            (started, now(), cpu, time.thread_time() - cpu, 1, 0 if got is None else 1)
        )
        return got

    def commit(self, offsets: Any = None, asynchronous: bool = True) -> Any:
        self._trace.commits.append((now(), {tp.partition: tp.offset for tp in offsets or ()}))
        return self._inner.commit(offsets=offsets, asynchronous=asynchronous)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class TracedPublisher(EventPublisher):
    """The worker's publisher; each batch's production and acknowledgement timed (a batch
    without a report of its own, the outcomes, gets a counting one)."""

    trace: Trace

    def publish_batch(self, records: Any, on_delivery: Any = None) -> None:
        stage: dict[str, float] = {"produced": 0.0, "acked": 0.0, "n": float(len(records))}
        kind = "leases" if on_delivery is not None else "outcomes"
        (self.trace.batches if kind == "leases" else self.trace.outcomes).append(stage)
        inner = on_delivery

        def report(error: str | None) -> None:
            stage["acked"] = now()
            if inner is not None:
                inner(error)
            if kind == "outcomes":
                self.trace.acked_outcomes += len(records)
                if self.trace.acked_outcomes >= self.trace.expected:
                    self.trace.done.set()

        stage["called"] = now()
        super().publish_batch(records, report)
        stage["produced"] = now()


def thread_cpu_s(pid: int | None = None) -> dict[str, float]:
    """User + system CPU seconds of each live thread of process `pid` (None: this one), by
    name, summed per name: librdkafka's threads by their own (`rdk:...`), this process's
    Python threads by their `threading` name (another's by its OS name)."""
    names = {t.native_id: t.name for t in threading.enumerate()} if pid is None else {}
    result: dict[str, float] = {}
    for task in Path(f"/proc/{pid or 'self'}/task").iterdir():
        try:
            comm, rest = (task / "stat").read_text().split("(", 1)[1].rsplit(")", 1)
        except OSError:  # the thread ended between the listing and the read
            continue
        fields = rest.split()
        name = names.get(int(task.name)) or comm
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        result[name] = result.get(name, 0.0) + seconds
    return result


def _time_method(lane: PriorityLane, name: str, trace: Trace) -> None:
    """Record the wall and thread-CPU time of each call of one of the lane's steps."""
    inner = getattr(lane, name)
    calls = trace.steps.setdefault(name, [])

    def timed(*args: Any, **kwargs: Any) -> Any:
        started, cpu = now(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            calls.append((started, now() - started, time.thread_time() - cpu))

    setattr(lane, name, timed)


def fill(bootstrap: str, executions: int) -> None:
    """`executions` no-op requests onto `executions.normal`, each its own execution."""
    producer = EventProducer(bootstrap, **{"linger.ms": 20, "batch.size": 1_000_000})
    at = int(time.time() * 1000)
    topic = topic_name("executions.normal")
    for i in range(executions):
        request = noop_request(i, at)
        request["execution_id"] = str(uuid.uuid4())
        producer.send(topic, request["job_id"], encode("ExecutionRequest", request))
    producer.flush()


def run(bootstrap: str, executions: int, fetch_backoff_ms: int | None = None) -> Trace:
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"stages{uuid.uuid4().hex[:6]}."
    apply_topology(bootstrap=bootstrap)
    fill(bootstrap, executions)
    trace = Trace()
    trace.expected = executions
    trace.process_cpu = time.process_time()
    settings = WorkerSettings(bootstrap=bootstrap, instance="stages")
    clock = SystemClock()
    publisher = TracedPublisher(bootstrap)
    publisher.trace = trace
    config = lane_consumer_config(settings, "normal")
    if fetch_backoff_ms is not None:  # an A/B of the setting (librdkafka's default: 1000)
        config["fetch.queue.backoff.ms"] = fetch_backoff_ms
    consumer = TracedConsumer(Consumer(config), trace)
    lane = PriorityLane(
        "normal", settings, registry=builtin_registry(), sink=publisher, cancels=CancelRegistry(),
        heartbeats=HeartbeatScheduler(clock), dead_letters=None,  # type: ignore[arg-type]
        clock=clock, on_fatal=print, consumer=consumer,  # type: ignore[arg-type]
    )  # fmt: skip
    for name in ("_accept_all", "_dispatch", "_commit"):
        _time_method(lane, name, trace)
    before = thread_cpu_s()
    lane.start()
    try:
        if not trace.done.wait(120):
            raise TimeoutError(f"{trace.acked_outcomes}/{executions} outcomes acknowledged")
        after = thread_cpu_s()
        trace.thread_cpu = {
            name: seconds - before.get(name, 0.0) for name, seconds in after.items()
        }
        time.sleep(1.0)  # the last commits
    finally:
        lane.stop()
        lane.join(30)
        publisher.close(10)
    return trace


def summarise(trace: Trace, executions: int) -> str:
    busy = [c for c in trace.consumes if c[5] > 0]
    # From when the first records are in hand: the group join and the first fetch left out.
    first = busy[0][1]
    end = max(o["acked"] for o in trace.outcomes)
    span = end - first
    in_window = [c for c in trace.consumes if first <= c[0] <= end]
    waited = sum(c[1] - c[0] for c in in_window)
    cpu_in_consume = sum(c[3] for c in in_window)
    lane_cpu = in_window[-1][2] - in_window[0][2]
    short = [c for c in in_window if c[5] < c[4]]
    lines = [
        f"{executions:,} executions in {span:.3f} s from the first records consumed to the "
        f"last outcome acknowledged: {executions / span:,.0f}/s",
        f"lane thread: {len(in_window)} consume calls, {waited:.3f} s inside consume "
        f"({waited / span:.0%} of the span; {cpu_in_consume:.3f} s of it CPU), "
        f"{len(short)} returned fewer than asked; lane thread CPU {lane_cpu:.3f} s "
        f"({lane_cpu / span:.0%} of the span, {lane_cpu / executions * 1e6:.1f} µs/execution)",
        f"records per consume: p50 {percentile([c[5] for c in in_window], 0.5):.0f}, "
        f"asked p50 {percentile([c[4] for c in in_window], 0.5):.0f}",
    ]
    leases = [b for b in trace.batches if b["acked"]]
    if leases:
        ack = [(b["acked"] - b["produced"]) * 1000 for b in leases]
        produce = [(b["produced"] - b["called"]) * 1000 for b in leases]
        lines.append(
            f"lease batches: {len(leases)}, n p50 {percentile([b['n'] for b in leases], 0.5):.0f}; "
            f"produce ms p50 {percentile(produce, 0.5):.1f}; produced → acknowledged ms "
            f"p50 {percentile(ack, 0.5):.1f} p99 {percentile(ack, 0.99):.1f}"
        )
    outs = [o for o in trace.outcomes if o["acked"]]
    if outs:
        ack = [(o["acked"] - o["produced"]) * 1000 for o in outs]
        lines.append(
            f"outcome batches: {len(outs)}; produced → acknowledged ms p50 "
            f"{percentile(ack, 0.5):.1f} p99 {percentile(ack, 0.99):.1f}"
        )
    following = zip(trace.outcomes, trace.batches[1:], strict=False)  # batch i, then i + 1
    gaps = [(b["called"] - a["produced"]) * 1000 for a, b in following]
    if gaps:
        lines.append(
            f"between one batch's outcomes produced and the next's leases: ms p50 "
            f"{percentile(gaps, 0.5):.1f} p99 {percentile(gaps, 0.99):.1f}"
        )
    lines.append(f"commits: {len(trace.commits)} in the run")
    for name, calls in trace.steps.items():
        inside = [c for c in calls if first <= c[0] <= end]
        wall, cpu = sum(c[1] for c in inside), sum(c[2] for c in inside)
        lines.append(f"lane {name}: {len(inside)} calls, wall {wall:.3f} s, thread CPU {cpu:.3f} s")
    long_consumes = [(c[0] - first, c[1] - c[0], c[5]) for c in in_window if c[1] - c[0] > 0.02]
    lines.append(
        "consume calls over 20 ms (at s, took s, got): "
        + ", ".join(f"({a:.2f}, {b:.3f}, {n})" for a, b, n in long_consumes[:12])
    )
    busiest = sorted(trace.thread_cpu.items(), key=lambda kv: -kv[1])
    lines.append("CPU µs per execution by thread: " + ", ".join(
        f"{name} {seconds / executions * 1e6:.1f}" for name, seconds in busiest if seconds > 0
    ))  # fmt: skip
    process = time.process_time() - trace.process_cpu
    lines.append(f"process CPU over the run (all threads, fill excluded): {process:.2f} s")
    return "\n".join(lines)


def timeline(trace: Trace, batches: int = 6) -> str:
    """The stages of a few batches in the middle of the run, in ms from the first."""
    middle = len(trace.batches) // 2
    chosen = trace.batches[middle : middle + batches]
    events: list[tuple[float, str]] = []
    for c in trace.consumes:
        events += [(c[0], f"consume({c[4]}) called"), (c[1], f"consume returned {c[5]}")]
    for b in chosen:
        events += [(b["called"], "leases called"), (b["produced"], "leases produced"),
                   (b["acked"], "leases acked")]  # fmt: skip
    for o in trace.outcomes:
        events += [(o["called"], "outcomes called"), (o["produced"], "outcomes produced"),
                   (o["acked"], "outcomes acked")]  # fmt: skip
    for at, _ in trace.commits:
        events.append((at, "commit"))
    low, high = chosen[0]["called"] - 0.03, chosen[-1]["acked"]
    shown = sorted(e for e in events if low <= e[0] <= high)
    return "\n".join(f"{(at - low) * 1000:8.1f} ms  {what}" for at, what in shown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executions", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeline", action="store_true", help="print a few batches' stages")
    parser.add_argument(
        "--fetch-backoff-ms",
        type=int,
        nargs="+",
        default=[None],
        help="fetch.queue.backoff.ms values to alternate (default: the lane's)",
    )
    args = parser.parse_args()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    broker = None
    if not bootstrap:
        broker = LocalKafka(
            BrokerConfig.on_free_ports(Path(tempfile.mkdtemp(prefix="stages-kafka-")))
        )
        broker.start(timeout=120)
        bootstrap = broker.bootstrap
    try:
        for _ in range(args.repeat):
            for backoff in args.fetch_backoff_ms:
                trace = run(bootstrap, args.executions, backoff)
                print(f"== fetch.queue.backoff.ms {backoff or 'as the lane sets it'}")
                print(
                    summarise(trace, args.executions), f"load {os.getloadavg()[0]:.1f}", flush=True
                )
            if args.timeline:
                print(timeline(trace))
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()

"""Benchmark of the worker: no-op executions per second end to end through one real worker
process against the real broker.

N `noop` requests are published to `executions.normal` first; then a worker
(`python -m tickwheel.services.worker --priority normal`) starts, and the clock runs until
N `succeeded` events are on `executions.events`. Throughput is taken from the events' own
times (first `leased` to last `succeeded`), so start-up and group join are not counted;
the wall time including them is printed too. A second part profiles the worker's
per-execution CPU path in one thread (decode, lease, handler, outcome, encode, produce,
logging) to show where the time goes.

Prints, and writes to bench/reports/worker.md. Figures, never pass/fail.
Run: `.venv/bin/python bench/bench_worker.py [--executions N] [--concurrency C]`.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._charts import rate_over_time  # noqa: E402
from bench._common import exit_on_sigterm, percentile, stop_all, stop_process, track  # noqa: E402
from bench._revisions import tree_of  # noqa: E402
from bench.bench_limits import measure_limits  # noqa: E402
from bench.profile_worker import run as lane_cpu  # noqa: E402
from bench.worker_stages import fill, thread_cpu_s  # noqa: E402
from bench.worker_stages import run as lane_stages  # noqa: E402
from bench.worker_stages import summarise as stages_summary  # noqa: E402
from tickwheel.adapters.avro import decode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.client import Consumer, KafkaException, TopicPartition  # noqa: E402
from tickwheel.adapters.kafka.config import consumer_config  # noqa: E402
from tickwheel.adapters.kafka.reader import read_to_end  # noqa: E402
from tickwheel.stack.broker import BrokerConfig, LocalKafka  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402

REPORT = Path(__file__).parent / "reports" / "worker.md"
RUN_LOG_HEADING = "## Run log"
RUN_LOG_TABLE = (
    "| when (UTC) | commit | raw loop/s | INFO executions/s (ratio) "
    "| WARNING executions/s (ratio) | worker CPU µs/execution (INFO / WARNING) "
    "| lane CPU µs/execution | load |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
)


def process_cpu_s(pid: int) -> dict[str, float]:
    """User + system CPU seconds of a live process's threads (Linux /proc), by kind:
    librdkafka's own threads (named `rdk:...`) and the interpreter's (every Python thread)."""
    by_kind = {"python": 0.0, "librdkafka": 0.0}
    for name, seconds in thread_cpu_s(pid).items():
        by_kind["librdkafka" if name.startswith("rdk:") else "python"] += seconds
    return by_kind


def count_events(
    bootstrap: str, expected: int, timeout: float, pid: int | None = None
) -> tuple[float, dict[str, float] | None]:
    """Wait until `expected` records are on executions.events; returns the wall time it did,
    and the CPU µs process `pid` spent per record between a fifth of them and the last, by
    kind of thread (start-up and the group join left out; CPU time, so the figure holds on a
    loaded machine). Counted from the partitions' high watermarks every 20 ms (the topic is
    the run's own), not by consuming the events: a consumer of every event would take CPU
    from the worker on the same two cores."""
    topic = topic_name("executions.events")
    consumer = Consumer(consumer_config(f"bench-{uuid.uuid4()}", bootstrap))
    partitions = [
        TopicPartition(topic, p)
        for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ]
    seen = 0
    high: dict[int, int] = {}
    mark: tuple[int, dict[str, float]] | None = None
    deadline = time.monotonic() + timeout
    try:
        while seen < expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {seen}/{expected} events after {timeout}s")
            time.sleep(0.02)
            for tp in partitions:
                # A new topic's leader may not be elected yet: asked again next time.
                with contextlib.suppress(KafkaException):
                    high[tp.partition] = consumer.get_watermark_offsets(tp, 5, cached=False)[1]
            seen = sum(high.values())
            if pid is not None and mark is None and seen >= expected // 5:
                mark = (seen, process_cpu_s(pid))
        done = time.monotonic()
        per_event_us = None
        if pid is not None and mark is not None and seen > mark[0]:
            now = process_cpu_s(pid)
            per_event_us = {
                kind: (now[kind] - mark[1][kind]) / (seen - mark[0]) * 1e6 for kind in now
            }
        return done, per_event_us
    finally:
        consumer.close()


class WorkerRun:
    """How the benchmark's worker processes run: `sample_dir` samples each one's stacks
    (bench/sampling.py); `old_code` is another revision's tree (bench/_revisions.py), run
    beside the current code on the same broker in the same run (A/B, interleaved)."""

    sample_dir: Path | None = None
    old_code: Path | None = None


def worker_command(
    concurrency: int, env: dict[str, str], code: Path | None, name: str
) -> list[str]:
    """The worker's command line; `env` gets what running `code`'s tree needs."""
    command = [sys.executable, "-m", "tickwheel.services.worker", "--instance", "bench",
               "--priority", "normal", "--concurrency", str(concurrency)]  # fmt: skip
    if WorkerRun.sample_dir is not None:
        out = WorkerRun.sample_dir / f"{name}.txt"
        command[1:2] = [str(ROOT / "bench" / "sampling.py"), "--out", str(out), "-m"]
    if code is not None:
        env["PYTHONPATH"] = str(code / "src")
        env["TICKWHEEL_SCHEMAS_DIR"] = str(code / "schemas")
        env["TICKWHEEL_TOPOLOGY_FILE"] = str(code / "topology" / "topics.toml")
    return command


def end_to_end(
    bootstrap: str, executions: int, concurrency: int, log_level: str, code: Path | None = None
) -> dict[str, Any]:
    started = time.perf_counter()
    fill(bootstrap, executions)
    publish_s = time.perf_counter() - started

    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "TICKWHEEL_LOG_LEVEL": log_level}
    log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)  # noqa: SIM115
    wall_start = time.monotonic()
    label = "old" if code is not None else "new"
    command = worker_command(concurrency, env, code, f"{label}-{log_level.lower()}")
    worker = track(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))
    try:
        done, per_event_us = count_events(bootstrap, 2 * executions, timeout=300, pid=worker.pid)
    finally:
        stop_process(worker)
    wall_s = done - wall_start
    leased: list[int] = []
    succeeded: list[int] = []
    service: dict[str, int] = {}
    for record in read_to_end(topic_name("executions.events"), None, bootstrap):
        event = decode(record.value or b"", "ExecutionEvent")[1]
        if event["event_type"] == "leased":
            leased.append(event["event_time"])
            service[event["execution_id"]] = -event["event_time"]
        elif event["event_type"] == "succeeded":
            succeeded.append(event["event_time"])
            service[event["execution_id"]] += event["event_time"]
    span_s = (max(succeeded) - min(leased)) / 1000
    return {
        "executions": executions,
        "concurrency": concurrency,
        "log_level": log_level,
        "code": label,
        "load": os.getloadavg()[0],
        "publish_per_s": executions / publish_s,
        "span_s": span_s,
        "per_s": len(succeeded) / span_s if span_s else float("inf"),
        "wall_s": wall_s,
        "succeeded": len(succeeded),
        "service_p50_ms": percentile(list(service.values()), 0.5),
        "service_p99_ms": percentile(list(service.values()), 0.99),
        "log": log.name,
        # Two events per execution: the worker process's CPU per execution, all threads, and
        # the share of librdkafka's own threads in it.
        "worker_cpu_us": 2 * sum(per_event_us.values()) if per_event_us else float("nan"),
        "librdkafka_cpu_us": 2 * per_event_us["librdkafka"] if per_event_us else float("nan"),
        "times": {"leased": [t / 1000 for t in leased], "succeeded": [t / 1000 for t in succeeded]},
    }


def cpu_profile(executions: int) -> tuple[float, float, str]:
    """The lane's per-execution work in this thread, as the service runs it (poll, intake,
    dispatch, the inline batch's leases, handlers and outcomes, the commit), events going to
    the worker's own publisher with no broker behind it (`bench/profile_worker.py`)."""
    lane_cpu(2000, "producer")  # warm: the registry, the codecs' layout checks
    # First without the profiler, in CPU seconds of this thread: the machine is shared, and
    # CPU time is what the lane's own work costs whatever else runs beside it.
    cpu_us = lane_cpu(executions, "producer")
    profiler = cProfile.Profile()
    started = time.perf_counter()
    lane_cpu(executions, "producer", profiler)
    elapsed = time.perf_counter() - started
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(14)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    first = next(i for i, line in enumerate(lines) if "ncalls" in line)
    return executions / elapsed, cpu_us, "\n".join(lines[first:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executions", type=int, default=50000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile-executions", type=int, default=5000)
    parser.add_argument(
        "--old-code",
        type=tree_of,
        help="also run another revision's worker (a git revision, or its tree on disk), "
        "interleaved with the current code's, for an A/B in one run",
    )
    parser.add_argument("--old-label", default="old", help="what the report calls --old-code")
    parser.add_argument("--sample", type=Path, help="write each worker's stack samples here")
    args = parser.parse_args()
    WorkerRun.sample_dir, WorkerRun.old_code = args.sample, args.old_code
    if args.sample is not None:
        args.sample.mkdir(parents=True, exist_ok=True)

    exit_on_sigterm()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    broker = None
    if not bootstrap:
        broker = LocalKafka(
            BrokerConfig.on_free_ports(Path(tempfile.mkdtemp(prefix="bench-kafka-")))
        )
        broker.start(timeout=120)
        bootstrap = broker.bootstrap
    os.environ["KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
    runs = []
    try:
        limits = measure_limits(bootstrap)
        print(limits.describe(), flush=True)
        codes: list[Path | None] = [None] if args.old_code is None else [args.old_code, None]
        for level in ("INFO", "WARNING"):
            for code in codes if level == "INFO" else codes[::-1]:  # interleaved: A B B A
                os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"bench{uuid.uuid4().hex[:6]}."
                apply_topology(bootstrap=bootstrap)
                run = end_to_end(bootstrap, args.executions, args.concurrency, level, code)
                runs.append(run)
                print(json.dumps({k: v for k, v in run.items() if k != "times"}), flush=True)
        # Where the lane waits: the service's lane in this process, each stage timed.
        stages = stages_summary(lane_stages(bootstrap, args.executions), args.executions)
        print(stages, flush=True)
        cpu_rate, cpu_us, profile = cpu_profile(args.profile_executions)
    finally:
        try:
            stop_all()  # the worker first, while its broker still answers
        finally:
            if broker is not None:
                broker.stop()
    print(
        f"single-thread CPU path: {cpu_us:.1f} CPU µs per execution; "
        f"{cpu_rate:,.0f} executions/s under the profiler"
    )
    print(profile)

    current = [r for r in runs if r["code"] == "new"]
    charts = [
        rate_over_time(r["times"], f"worker-throughput-{r['log_level'].lower()}.png",
                       f"One worker, {r['executions']:,} no-op executions, log level {r['log_level']}")
        for r in current
    ]  # fmt: skip
    labels = {"new": "this commit", "old": args.old_label}
    rows = "\n".join(
        f"| {labels[r['code']]} | {r['log_level']} | {r['executions']:,} | {r['concurrency']} | "
        f"**{r['per_s']:,.0f}** | {limits.ratio_loop(r['per_s'])} | "
        f"{r['span_s']:.2f} | {r['wall_s']:.2f} | {r['service_p50_ms']:.0f} / {r['service_p99_ms']:.0f} | "
        f"{r['publish_per_s']:,.0f} | **{r['worker_cpu_us']:.0f}** | "
        f"{r['librdkafka_cpu_us']:.0f} | {r['load']:.1f} |"
        for r in runs
    )
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    previous = REPORT.read_text() if REPORT.exists() else ""
    # The run log's table is kept and grows; hand-written sections after it are kept too.
    section = previous.split(RUN_LOG_HEADING, 1)[1] if RUN_LOG_HEADING in previous else ""
    lines = section.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    log_rows = "\n".join(lines[start:end]) or RUN_LOG_TABLE
    notes = "\n".join(lines[end:]).strip()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or "?"  # fmt: skip
    if subprocess.run(["git", "status", "--porcelain", "--", "src/tickwheel/services/worker"],
                      cwd=ROOT, capture_output=True, text=True).stdout.strip():  # fmt: skip
        commit += " + uncommitted worker changes"
    for code in ("old", "new") if args.old_code is not None else ("new",):
        by_level = {r["log_level"]: r for r in runs if r["code"] == code}
        log_rows += (
            f"\n| {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} | "
            f"{commit if code == 'new' else args.old_label + ' (A/B, same run)'} | "
            f"{limits.consume_produce_per_s:,.0f} | "
            + " | ".join(
                f"{by_level[lv]['per_s']:,.0f} ({limits.ratio_loop(by_level[lv]['per_s'])})"
                for lv in ("INFO", "WARNING")
            )
            + f" | {by_level['INFO']['worker_cpu_us']:.0f} / {by_level['WARNING']['worker_cpu_us']:.0f}"
            + f" | {f'{cpu_us:.1f}' if code == 'new' else '—'} | {os.getloadavg()[0]:.1f} |"
        )
    REPORT.write_text(
        f"""# Worker benchmark

`bench/bench_worker.py` — no-op executions end to end through **one** worker process
(`--priority normal --concurrency C`) against the real local Kafka broker on the same machine
({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}).

N `noop` requests are published to `executions.normal` beforehand; the worker leases each
(`leased` event, acknowledged before the request offset is committed), runs the handler and
records `succeeded`. Throughput is N over the span from the first `leased` to the last
`succeeded` event time (the worker's own timestamps), so process start and the consumer
group join are excluded; "wall" includes them. Service time is leased → succeeded per
execution. "Worker CPU" is the worker process's user + system CPU (every thread: lane,
delivery reports, librdkafka's) per execution from a fifth of the events to the last: unlike
executions/s it moves little with what else runs on the machine, so it is the figure to
compare across runs. The timer is not involved: fired → leased adds the timer's emit path.
With `--old-code REV` (a git revision, or its tree on disk) each log level also runs that
revision's worker, interleaved with this one's on the same broker (A/B).

The raw limit, measured on the same broker in the same run (`bench/bench_limits.py`): one
Python process consuming a request, producing two event-sized records and committing
asynchronously moves **{limits.consume_produce_per_s:,.0f} requests/s**; the ratio column is
the worker's figure over it. The machine is shared with other engineers' test runs: compare
ratios, not raw figures, across runs.

| code | log level | executions | slots | executions/s | ratio to raw loop | span s | wall s | service p50 / p99 ms | publish/s | worker CPU µs/execution | of which librdkafka's threads | load (1 min) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{rows}

{" ".join(f"![throughput over time]({c})" for c in charts)}

## Where the time goes

The lane's per-execution path in its own thread, as the service runs it
(`bench/profile_worker.py --sink producer`: `PriorityLane.step` over pre-encoded requests —
poll, decode, queue, dispatch, the inline batch's leases, handlers and outcomes, encoded and
produced to the worker's own publisher with no broker behind it):
**{cpu_us:.1f} CPU µs per execution** without the profiler; under cProfile,
{cpu_rate:,.0f} executions/s.

```
{profile}
```

Repeated runs vary by about ±20% on this shared machine (other work shares the two cores).

Where the lane waits (`bench/worker_stages.py`: the service's lane in this process against
the same broker, {args.executions:,} requests, each stage timed; decision 0146):

```
{stages}
```

Reading: no-ops run inline on the lane thread in batches (decisions 0071, 0118): a poll's
requests are read by the worker's own decoder (decision 0117); a poll that can all start at
once as one inline batch goes straight to it, sorted with one lock for its cancellations and
one for the ledger, without the tenant queue (decision 0163; any other poll is queued and
sorted under one hold of the lane lock); the batch's leases are written in one loop and
produced together with one delivery report for the batch, then the handlers run (each
context set at once) and the outcomes are written in a second loop and produced as a second
batch (decision 0162), the bytes those of the per-attempt encoder. No thread hand-off, lease
object, heartbeat schedule or log line per execution, and no wait between batches: the lane
never waits for its leases' acknowledgements before the handlers (only the commit does), its
consumer refetches within 20 ms once its prefetch drains and a part batch is taken at once
(decision 0146). What is left per execution is the decode (two ids and a dict copy), two event
writes, the context, two produce calls, one Python delivery call per event, and librdkafka's
own threads (column "of which librdkafka's threads": compression, the broker connections,
the consumer's fetches). The span is short (about a second at 50,000) and the worker shares
two cores with the broker and whatever else runs: executions/s follows the machine's load;
the CPU per execution and the ratio to the raw loop much less so.
Scaling out is by processes (the group spreads the partitions), each its own interpreter.

{RUN_LOG_HEADING}

Every run appends a row (the tables above are the latest run's): the raw loop measured in
the same run, each log level's executions/s with its ratio to it, the worker process's CPU
µs per execution (all threads), the lane's CPU µs per no-op execution in one thread without
the profiler (real producer, acknowledgements not awaited), and the machine's 1-minute load
average at the end (2 cores, shared: a load far above 2 means every figure is depressed).

{log_rows}
{chr(10) + notes + chr(10) if notes else ""}"""
    )
    print(f"wrote {REPORT}")


if __name__ == "__main__":
    main()

"""Benchmark of the workflow runtime against a real local broker (figures, never pass/fail).

1. **Fold throughput through one orchestrator**: N instances of a K-step chain of no-op
   tasks; every input is published up front (a start, then each step's success in order, as
   the timer would send them), then the clock runs until every event is on
   `workflows.events`. Instances started/s and step transitions/s (a success folded and the
   next step's command written, all in the batch's transaction).
2. **Restore of many open instances**: S instances parked in a 1-day sleep; the orchestrator
   is killed and a new one restores them: time until every partition serves, and its RSS.
3. **Step-to-step latency through the whole pipeline** (timer, worker, orchestrator): M
   instances of a chain of `noop` steps; from a step's `succeeded` (the worker's event time)
   to the next step's request (the timer's `requested_at`), p50/p99.
5. **Workflows written as code** (`--parts code`): the same no-op chain as a DAG and as code
   through the whole pipeline in one run (transitions/s, step-to-step p50/p99), the replay of a
   10,000-event history, and the restore of sleeping code instances with memory per instance.
4. **Starts from one client** (`--parts starts`): T starts one after another, T in one
   `start_many`, T awaited together with `start_async`, each until acknowledged; with
   `--starts-ab REV`, that revision's `WorkflowsClient.start` one after another in the same
   run (`bench/_revisions.py`).

Every run first measures the raw client's limits on the same broker (`bench/bench_limits.py`)
and prints the fold figure beside them (as a ratio of the raw transactional produce rate: each
input becomes about five records), with the load average before each part: the machine is
shared, so the ratio and the load say what a figure is worth.

Run: `.venv/bin/python bench/bench_workflows.py [--instances N] [--steps K] [--sleeping S]
[--latency-instances M]`. Writes bench/reports/workflows.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Report, bench_broker, cpu_seconds, percentile, stop_process, track  # noqa: E402
from bench.bench_limits import measure_limits  # noqa: E402
from tickwheel.adapters.avro import decode, encode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.client import Consumer, TopicPartition  # noqa: E402
from tickwheel.adapters.kafka.config import consumer_config  # noqa: E402
from tickwheel.adapters.kafka.producer import EventProducer  # noqa: E402
from tickwheel.adapters.kafka.reader import read_to_end  # noqa: E402
from tickwheel.core.workflow import Start, StepSucceeded  # noqa: E402
from tickwheel.core.workflow.wire import input_record  # noqa: E402
from tickwheel.sdk.workflows import WorkflowsClient  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402


def chain(definition_id: str, steps: int, job_type: str = "noop") -> dict[str, Any]:
    return {"definitionId": definition_id, "version": 1, "steps": [
        {"id": f"s{i}", "type": job_type, **({"dependsOn": [f"s{i - 1}"]} if i else {})}
        for i in range(steps)]}  # fmt: skip


def service(
    name: str, module: str, log_dir: Path, *args: str, log_name: str | None = None
) -> subprocess.Popen[bytes]:
    log = (log_dir / f"{log_name or name}.log").open("ab")
    # The orchestrator at INFO: restores are read off its `partition_restored` lines (its loop
    # logs nothing more at INFO); the others at WARNING, so logging costs them nothing.
    level = "INFO" if "orchestrator" in module else "WARNING"
    # The worker imports bench._code_chain by name, wherever the benchmark is run from.
    env = {**os.environ, "TICKWHEEL_LOG_LEVEL": level, "PYTHONPATH": str(ROOT)}
    return track(subprocess.Popen([sys.executable, "-m", module, "--instance", name, *args],
                                  stdout=log, stderr=subprocess.STDOUT, env=env))  # fmt: skip


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def fresh_prefix(bootstrap: str) -> None:
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = f"wfb{uuid.uuid4().hex[:6]}."
    apply_topology(bootstrap=bootstrap)


def count(bootstrap: str, topic: str, expected: int, timeout: float) -> float:
    """Wait until `expected` records are on `topic`; returns when (monotonic)."""
    name = topic_name(topic)
    consumer = Consumer(consumer_config(f"bench-{uuid.uuid4()}", bootstrap))
    partitions = consumer.list_topics(name, timeout=10).topics[name].partitions
    consumer.assign([TopicPartition(name, p, 0) for p in partitions])
    seen, deadline = 0, time.monotonic() + timeout
    try:
        while seen < expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: only {seen}/{expected} records after {timeout}s")
            seen += sum(1 for m in consumer.consume(10000, 0.2) if not m.error())
        return time.monotonic()
    finally:
        consumer.close()


def wait_restored(log: Path, partitions: int, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count('"partition_restored"') >= partitions:
            return time.monotonic()
        time.sleep(0.05)
    raise TimeoutError(f"{log}: not every partition restored in {timeout}s")


def rss_mb(pid: int) -> float:
    out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True)
    return int(out.stdout.strip() or 0) / 1024


def fold_throughput(bootstrap: str, instances: int, steps: int, logs: Path) -> dict[str, Any]:
    fresh_prefix(bootstrap)
    WorkflowsClient(bootstrap).define(chain("bench_chain", steps))
    orchestrator = service("orchestrator", "tickwheel.services.orchestrator", logs)
    wait_restored(logs / "orchestrator.log", 6, 120)
    producer = EventProducer(bootstrap, **{"linger.ms": 20, "batch.size": 1_000_000})
    topic, now = topic_name("workflows.inputs"), int(time.time() * 1000)
    encoded = []
    for i in range(instances):
        wid = f"bench-{i}"
        encoded.append((wid, encode("WorkflowInput", input_record(
            wid, Start(now, None), f"b:{wid}:start", definition_id="bench_chain",
            definition_version=1))))  # fmt: skip
        for s in range(steps):
            item = StepSucceeded(now, f"s{s}", 1)
            encoded.append((wid, encode("WorkflowInput", input_record(wid, item, f"b:{wid}:{s}"))))
    started = time.monotonic()
    for wid, raw in encoded:
        producer.send(topic, wid, raw)
    producer.flush()
    # Per instance: started, then per step scheduled + succeeded, then workflow_succeeded.
    expected = instances * (2 + 2 * steps)
    cpu_before = cpu_seconds(orchestrator.pid)
    done = count(bootstrap, "workflows.events", expected, timeout=900)
    cpu = cpu_seconds(orchestrator.pid) - cpu_before
    stop_process(orchestrator)
    elapsed = done - started
    return {"instances": instances, "steps": steps, "inputs": len(encoded), "seconds": elapsed,
            "instances_per_s": instances / elapsed, "transitions_per_s": instances * steps / elapsed,
            "inputs_per_s": len(encoded) / elapsed, "events": expected,
            # Written: every event, a command per scheduled step, a snapshot per input at most.
            "records_per_s": (expected + instances * steps + len(encoded)) / elapsed,
            "cpu_share": cpu / elapsed}  # fmt: skip


def fold_cpu(instances: int, steps: int, rounds: int = 3) -> dict[str, Any]:
    """In one process, no broker: the orchestrator's CPU per step transition on its fold path
    (decode, fold, records) and its encoding of each batch as the writer does it, with the
    generic Avro encoder (A) and the orchestrator's codec (B) interleaved, `rounds` each."""
    from tickwheel.adapters.avro.fast import encode_record
    from tickwheel.adapters.kafka.reader import Record
    from tickwheel.services.orchestrator.definitions import DefinitionCatalog
    from tickwheel.services.orchestrator.partition import PartitionOrchestrator

    document = chain("bench_chain", steps)
    records, now = [], 1_700_000_000_000
    for i in range(instances):
        wid = f"bench-{i}"
        items = [(Start(now, None), {"definition_id": "bench_chain", "definition_version": 1})]
        items += [(StepSucceeded(now + s + 1, f"s{s}", 1), {}) for s in range(steps)]
        for n, (item, start) in enumerate(items):
            value = encode("WorkflowInput", input_record(wid, item, f"b:{wid}:{n}", **start))
            records.append(Record("workflows.inputs", 0, len(records), wid, value, now))

    def run(encoder: Any) -> tuple[float, float]:
        catalog = DefinitionCatalog("127.0.0.1:1")  # never connects: the definition is added
        catalog.add({"definition_id": "bench_chain", "version": 1, "body": json.dumps(document),
                     "published_at": 0, "published_by": None})  # fmt: skip
        orchestrator = PartitionOrchestrator(0, 6, catalog)
        fold = written = 0.0
        for first in range(0, len(records), 500):  # the service's max batch per poll
            t0 = time.process_time()
            for record in records[first : first + 500]:
                orchestrator.receive(record, now)
            batch = orchestrator.take()
            t1 = time.process_time()
            for event in batch.events:
                encoder("WorkflowEvent", event)
            for snapshot in batch.snapshot_records().values():
                encoder("WorkflowSnapshot", snapshot)
            for out in batch.outgoing:
                encoder(out.record, out.value)
            fold, written = fold + t1 - t0, written + time.process_time() - t1
        return fold, written

    run(encode_record)  # warm-up: caches, memos, imports
    runs: dict[str, list[tuple[float, float]]] = {"generic": [], "codec": []}
    for _ in range(rounds):
        runs["generic"].append(run(encode))
        runs["codec"].append(run(encode_record))
    per = 1e6 / (instances * steps)
    return {name: {"fold_us": min(f for f, _ in r) * per, "encode_us": min(w for _, w in r) * per,
                   "total_us": min(f + w for f, w in r) * per} for name, r in runs.items()}  # fmt: skip


def restore(bootstrap: str, sleeping: int, logs: Path) -> dict[str, Any]:
    fresh_prefix(bootstrap)
    flows = WorkflowsClient(bootstrap)
    flows.define({"definitionId": "bench_nap", "version": 1,
                  "steps": [{"id": "nap", "kind": "sleep", "duration": "1d"}]})  # fmt: skip
    first = service("orchestrator-a", "tickwheel.services.orchestrator", logs)
    wait_restored(logs / "orchestrator-a.log", 6, 120)
    producer = EventProducer(bootstrap, **{"linger.ms": 20, "batch.size": 1_000_000})
    now = int(time.time() * 1000)
    for i in range(sleeping):
        wid = f"nap-{i}"
        producer.send(topic_name("workflows.inputs"), wid, encode("WorkflowInput", input_record(
            wid, Start(now, None), f"b:{wid}", definition_id="bench_nap",
            definition_version=1)))  # fmt: skip
    producer.flush()
    count(bootstrap, "workflows.events", 2 * sleeping, timeout=1800)  # started, sleep_started
    first.kill()
    first.wait(10)
    heir_log = logs / "orchestrator-b.log"
    started = time.monotonic()
    # The same instance name, as a supervisor restarts it: static membership gives it the
    # partitions at once, so what is measured is the restore, not the group's session timeout.
    heir = service("orchestrator-a", "tickwheel.services.orchestrator", logs,
                   log_name="orchestrator-b")  # fmt: skip
    restored = wait_restored(heir_log, 6, 600)
    seconds = restored - started
    memory = rss_mb(heir.pid)
    stop_process(heir)
    return {"sleeping": sleeping, "restore_s": seconds, "rss_mb": memory}


def latency(bootstrap: str, instances: int, steps: int, logs: Path) -> dict[str, Any]:
    fresh_prefix(bootstrap)
    flows = WorkflowsClient(bootstrap)
    flows.define(chain("bench_latency", steps))
    service("timer", "tickwheel.services.timer", logs)
    service("orchestrator-l", "tickwheel.services.orchestrator", logs)
    service("worker", "tickwheel.services.worker", logs, "--concurrency", "8")
    wait_restored(logs / "orchestrator-l.log", 6, 120)
    time.sleep(5)  # the timer and the worker join their groups
    for i in range(instances):
        flows.start("bench_latency", workflow_id=f"lat-{i}")
    count(bootstrap, "workflows.events", instances * (2 + 2 * steps), timeout=900)
    succeeded: dict[str, int] = {}
    for record in read_to_end(topic_name("executions.events"), None, bootstrap):
        event = decode(record.value or b"", "ExecutionEvent")[1]
        if event["event_type"] == "succeeded":
            succeeded[event["execution_id"]] = event["event_time"]
    requests: dict[tuple[str, str], dict[str, Any]] = {}
    for record in read_to_end(topic_name("executions.normal"), None, bootstrap):
        request = decode(record.value or b"", "ExecutionRequest")[1]
        requests[(request["workflow_id"], request["step_id"])] = request
    outcome_written, command_written = leg_stamps(bootstrap)
    gaps: list[float] = []
    legs: dict[str, list[float]] = {"timer_outcome": [], "orchestrator": [], "timer_request": []}
    for (wid, step_id), request in requests.items():
        index = int(step_id[1:])
        previous = requests.get((wid, f"s{index - 1}"))
        if previous is None or previous["execution_id"] not in succeeded:
            continue
        done = succeeded[previous["execution_id"]]
        gaps.append(request["requested_at"] - done)
        outcome = outcome_written.get((wid, f"s{index - 1}"))
        command = command_written.get((wid, step_id))
        if outcome is not None and command is not None:
            legs["timer_outcome"].append(outcome - done)
            legs["orchestrator"].append(command - outcome)
            legs["timer_request"].append(request["requested_at"] - command)
    figures = {f"{leg}_{q}_ms": percentile(values, p) for leg, values in legs.items()
               for q, p in (("p50", 0.5), ("p99", 0.99))}  # fmt: skip
    return {"instances": instances, "steps": steps, "samples": len(gaps),
            "p50_ms": percentile(gaps, 0.5), "p99_ms": percentile(gaps, 0.99),
            "max_ms": max(gaps) if gaps else float("nan"),
            "hop_p50_ms": figures["orchestrator_p50_ms"],
            "hop_p99_ms": figures["orchestrator_p99_ms"], **figures}  # fmt: skip


def leg_stamps(
    bootstrap: str,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """When each step's success reached `workflows.inputs` (the timer's outcome record) and
    when each step's `run_step` reached `timers.commands` (the orchestrator's), by (workflow,
    step): Kafka timestamps, i.e. when each was produced inside its writer's transaction —
    a writer's commit falls in the leg after it."""
    outcomes: dict[tuple[str, str], int] = {}
    for record in read_to_end(topic_name("workflows.inputs"), None, bootstrap):
        value = decode(record.value or b"", "WorkflowInput")[1]
        if value["kind"] == "step_succeeded":
            step = json.loads(value["body"])["step"]
            outcomes[(value["workflow_id"], step)] = record.timestamp_ms
    commands: dict[tuple[str, str], int] = {}
    for record in read_to_end(topic_name("timers.commands"), None, bootstrap):
        command = decode(record.value or b"", "TimerCommand")[1]
        if command["kind"] == "run_step" and command.get("step_id", "").startswith("s"):
            commands[(command["workflow_id"], command["step_id"])] = record.timestamp_ms
    return outcomes, commands


def pipeline(bootstrap: str, kind: str, instances: int, steps: int, logs: Path) -> dict[str, Any]:
    """N instances of a K-step chain of no-op steps, a DAG or the same chain written as code
    (`bench/_code_chain.py`), through the whole pipeline (timer, one orchestrator, one worker):
    step transitions/s from the starts to the last success, and step-to-step latency (a
    step's success → the next step's request; for code, the workflow task between them)."""
    fresh_prefix(bootstrap)
    flows = WorkflowsClient(bootstrap)
    tag = f"{kind}-{uuid.uuid4().hex[:4]}"
    processes = [
        service(f"timer-{tag}", "tickwheel.services.timer", logs),
        service(f"orchestrator-{tag}", "tickwheel.services.orchestrator", logs),
        service(
            f"worker-{tag}",
            "tickwheel.services.worker",
            logs,
            "--concurrency",
            "8",
            "--module",
            "bench._code_chain",
        ),
    ]
    try:
        wait_restored(logs / f"orchestrator-{tag}.log", 6, 120)
        if kind == "dag":
            name, payload = "bench_pipe", None
            flows.define(chain(name, steps))
        else:
            name, payload = "bench_code_chain", steps
            deadline = time.monotonic() + 60
            while not flows.definitions(name) and time.monotonic() < deadline:
                time.sleep(0.2)  # the worker publishes its workflows as it starts
        time.sleep(5)  # the timer and the worker join their groups
        started = time.monotonic()
        ids = set(flows.start_many(name, [payload] * instances))
        deadline = started + 900
        while len([r for r in flows.list("succeeded") if r["workflowId"] in ids]) < instances:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{kind}: not every instance succeeded in 900 s")
            time.sleep(0.5)
        elapsed = time.monotonic() - started
    finally:
        for process in processes:
            stop_process(process)
    gaps = step_gaps(bootstrap, ids)
    return {
        "kind": kind,
        "instances": instances,
        "steps": steps,
        "seconds": elapsed,
        "transitions_per_s": instances * steps / elapsed,
        "samples": len(gaps),
        "p50_ms": percentile(gaps, 0.5),
        "p99_ms": percentile(gaps, 0.99),
    }


def step_gaps(bootstrap: str, ids: set[str]) -> list[float]:
    """Per instance, from each step's success to the next step's first request (ms)."""
    succeeded: dict[str, int] = {}
    for record in read_to_end(topic_name("executions.events"), None, bootstrap):
        event = decode(record.value or b"", "ExecutionEvent")[1]
        if event["event_type"] == "succeeded":
            succeeded[event["execution_id"]] = event["event_time"]
    steps: dict[str, list[dict[str, Any]]] = {}
    for priority in ("high", "normal", "low"):
        for record in read_to_end(topic_name(f"executions.{priority}"), None, bootstrap):
            request = decode(record.value or b"", "ExecutionRequest")[1]
            is_step = request.get("step_id") not in (None, "@task") and request["attempt"] == 1
            if request.get("workflow_id") in ids and is_step:
                steps.setdefault(request["workflow_id"], []).append(request)
    gaps: list[float] = []
    for requests in steps.values():
        requests.sort(key=lambda r: r["requested_at"])
        for before, after in itertools.pairwise(requests):
            done = succeeded.get(before["execution_id"])
            if done is not None:
                gaps.append(after["requested_at"] - done)
    return gaps


def replay_seconds(events: int) -> dict[str, Any]:
    """Replaying a code workflow's history of about `events` events (a chain of events / 2
    steps, run first by the in-process runner), best of three, in this process."""
    import asyncio

    from bench._code_chain import bench_code_chain
    from tickwheel.core.codeflow import replay
    from tickwheel.sdk.workflow_testing import WorkflowRunner

    runner = WorkflowRunner(bench_code_chain, replay_check=False)
    workflow_id = asyncio.run(runner.start(bench_code_chain, events // 2))
    history = runner.history(workflow_id)
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        replay(bench_code_chain, history)
        best = min(best, time.perf_counter() - began)
    return {"events": len(history), "seconds": best}


def code_restore(bootstrap: str, sleeping: int, logs: Path) -> dict[str, Any]:
    """S code instances asleep for a day (each answered its first task: the worker ran its
    code); the orchestrator is killed and a new one restores them. Also the orchestrator's RSS
    with no instance, so the memory per sleeping instance can be read off."""
    fresh_prefix(bootstrap)
    flows = WorkflowsClient(bootstrap)
    tag = uuid.uuid4().hex[:4]
    first = service(f"orchestrator-n{tag}", "tickwheel.services.orchestrator", logs)
    helpers = [
        service(f"timer-n{tag}", "tickwheel.services.timer", logs),
        service(
            f"worker-n{tag}",
            "tickwheel.services.worker",
            logs,
            "--concurrency",
            "8",
            "--module",
            "bench._code_chain",
        ),
    ]
    try:
        wait_restored(logs / f"orchestrator-n{tag}.log", 6, 120)
        empty_mb = rss_mb(first.pid)
        deadline = time.monotonic() + 60
        while not flows.definitions("bench_code_nap") and time.monotonic() < deadline:
            time.sleep(0.2)
        for begin in range(0, sleeping, 10_000):
            flows.start_many("bench_code_nap", [None] * min(10_000, sleeping - begin))
        # Each asleep: its timer_started is on workflows.events.
        deadline = time.monotonic() + 3600
        while True:
            asleep = sum(
                1
                for record in read_to_end(topic_name("workflows.events"), None, bootstrap)
                if record.value is not None
                and decode(record.value, "WorkflowEvent")[1]["event_type"] == "timer_started"
            )
            if asleep >= sleeping or time.monotonic() > deadline:
                break
            time.sleep(2)
    finally:
        for process in helpers:
            stop_process(process)
    first.kill()
    first.wait(10)
    started = time.monotonic()
    heir = service(
        f"orchestrator-n{tag}",
        "tickwheel.services.orchestrator",
        logs,
        log_name=f"orchestrator-n{tag}-heir",
    )
    restored = wait_restored(logs / f"orchestrator-n{tag}-heir.log", 6, 600)
    memory = rss_mb(heir.pid)
    stop_process(heir)
    return {
        "sleeping": asleep,
        "restore_s": restored - started,
        "rss_mb": memory,
        "kib_per_instance": (memory - empty_mb) * 1024 / max(asleep, 1),
    }


def starts(bootstrap: str, count: int, ab: str | None) -> dict[str, float]:
    """Milliseconds per start, acknowledged, from one client: by each way of starting."""
    import asyncio

    fresh_prefix(bootstrap)
    definition = chain(f"starts-{uuid.uuid4().hex[:6]}", 2)
    definition_id = definition["definitionId"]
    client = WorkflowsClient(bootstrap)
    client.define(definition)
    client.start(definition_id)  # the client's first read of the definitions, not timed
    figures: dict[str, float] = {}
    began = time.perf_counter()
    for n in range(count):
        client.start(definition_id, {"n": n})
    figures["one_by_one_ms"] = (time.perf_counter() - began) * 1000 / count
    began = time.perf_counter()
    client.start_many(definition_id, [{"n": n} for n in range(count)])
    figures["batch_ms"] = (time.perf_counter() - began) * 1000 / count

    async def awaited() -> None:
        await asyncio.gather(*(client.start_async(definition_id, {"n": n}) for n in range(count)))

    began = time.perf_counter()
    asyncio.run(awaited())
    figures["async_ms"] = (time.perf_counter() - began) * 1000 / count
    client.close()
    if ab:
        from bench._revisions import modules_at

        (old,) = modules_at(ab, "tickwheel.sdk.workflows")
        before = old.WorkflowsClient(bootstrap)
        before.start(definition_id)
        sample = min(count, 100)  # the old client reads every definition at every start
        began = time.perf_counter()
        for n in range(sample):
            before.start(definition_id, {"n": n})
        figures["before_ms"] = (time.perf_counter() - began) * 1000 / sample
        figures["before_sample"] = sample
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--sleeping", type=int, default=100_000)
    parser.add_argument("--latency-instances", type=int, default=200)
    parser.add_argument(
        "--parts",
        default="fold,latency,restore",
        help="which parts to run, comma-separated (fold, latency, restore, starts, code), or cpu "
        "alone: the fold path's CPU per transition in one process, generic encoder against codec",
    )
    parser.add_argument("--starts", type=int, default=1000, help="starts per way (part starts)")
    parser.add_argument(
        "--code-instances", type=int, default=500, help="instances per chain (part code)"
    )
    parser.add_argument(
        "--code-sleeping",
        type=int,
        default=100_000,
        help="sleeping code instances to restore (part code; 0: skip)",
    )
    parser.add_argument(
        "--starts-ab", metavar="REV", default=None, help="also time that revision's start"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if parts == {"cpu"}:  # in one process, no broker
        load = load_average()
        cpu = fold_cpu(args.instances, args.steps)
        for name, figures in cpu.items():
            print(f"{name}: fold {figures['fold_us']:.0f} µs + encode {figures['encode_us']:.0f} "
                  f"µs = {figures['total_us']:.0f} µs CPU per step transition (best of 3, "
                  f"{args.instances:,} x {args.steps}; load average {load})")  # fmt: skip
        return
    logs = Path(tempfile.mkdtemp(prefix="bench-workflows-"))
    report = Report("Workflow runtime benchmark")
    report.add(f"`bench/bench_workflows.py` (logs in {logs}); shared 2-core machine: figures "
               "vary by run.")  # fmt: skip
    report.add("")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        limits = measure_limits(broker.bootstrap)
        report.add(f"- {limits.describe()} (`bench/bench_limits.py`, same broker, same run; "
                   f"load average {load_average()})")  # fmt: skip
        if "fold" in parts:
            load = load_average()
            fold = fold_throughput(broker.bootstrap, args.instances, args.steps, logs)
            report.add(f"- **fold throughput**, one orchestrator, {fold['instances']:,} instances x "
                       f"{fold['steps']} no-op steps ({fold['inputs']:,} inputs, {fold['events']:,} "
                       f"events) in {fold['seconds']:.1f} s: **{fold['transitions_per_s']:,.0f} step "
                       f"transitions/s**, {fold['instances_per_s']:,.0f} instances/s, "
                       f"{fold['inputs_per_s']:,.0f} inputs/s (aim ≥ 2,000 transitions/s); the "
                       f"orchestrator used {fold['cpu_share']:.0%} of a core meanwhile; "
                       f"{limits.ratio_produce(fold['records_per_s'])} of the raw transactional "
                       f"produce rate in records written; load average {load}")  # fmt: skip
        if "latency" in parts:
            load = load_average()
            lat = latency(broker.bootstrap, args.latency_instances, args.steps, logs)
            report.add(f"- **step-to-step latency** (a step's success → the next step's request, "
                       f"through timer, worker and orchestrator), {lat['samples']:,} samples: "
                       f"**p50 {lat['p50_ms']:.0f} ms, p99 {lat['p99_ms']:.0f} ms**, max "
                       f"{lat['max_ms']:.0f} ms (aim p99 < 250 ms); its legs, p50/p99: the "
                       f"worker's success → the timer's outcome on workflows.inputs "
                       f"{lat['timer_outcome_p50_ms']:.0f}/{lat['timer_outcome_p99_ms']:.0f} ms, "
                       f"→ the orchestrator's next run_step {lat['hop_p50_ms']:.0f}/"
                       f"{lat['hop_p99_ms']:.0f} ms, → the timer's request (the orchestrator's "
                       f"commit, the timer's read and tick) {lat['timer_request_p50_ms']:.0f}/"
                       f"{lat['timer_request_p99_ms']:.0f} ms; load average {load}")  # fmt: skip
        if "restore" in parts:
            load = load_average()
            rest = restore(broker.bootstrap, args.sleeping, logs)
            report.add(f"- **restore**, {rest['sleeping']:,} open instances (sleeping), one "
                       f"orchestrator killed and replaced: every partition serving in "
                       f"**{rest['restore_s']:.1f} s**, RSS {rest['rss_mb']:.0f} MB "
                       f"(aim < 20 s for 100,000); load average {load}")  # fmt: skip
        if "code" in parts:
            load = load_average()
            dag = pipeline(broker.bootstrap, "dag", args.code_instances, args.steps, logs)
            code = pipeline(broker.bootstrap, "code", args.code_instances, args.steps, logs)
            report.add(
                f"- **a {args.steps}-step no-op chain through the whole pipeline** (timer, one "
                f"orchestrator, one worker), {args.code_instances:,} instances each, same run: "
                f"written as code **{code['transitions_per_s']:,.0f} step transitions/s**, "
                f"as a DAG {dag['transitions_per_s']:,.0f}/s (code/DAG "
                f"{code['transitions_per_s'] / dag['transitions_per_s']:.0%}; aim ≥ 2,000/s and "
                f"≥ 50%); step → step p50/p99: code **{code['p50_ms']:.0f}/{code['p99_ms']:.0f} "
                f"ms** (the workflow task between them), DAG {dag['p50_ms']:.0f}/"
                f"{dag['p99_ms']:.0f} ms (aim p99 < 250 ms); load average {load}"
            )
            rep = replay_seconds(10_000)
            report.add(
                f"- **replay** of a code workflow's history of {rep['events']:,} events, in "
                f"one process: **{rep['seconds']:.2f} s** (aim < 1 s)"
            )
            if args.code_sleeping:
                load = load_average()
                nap = code_restore(broker.bootstrap, args.code_sleeping, logs)
                report.add(
                    f"- **restore**, {nap['sleeping']:,} sleeping code instances, one "
                    f"orchestrator killed and replaced: every partition serving in "
                    f"**{nap['restore_s']:.1f} s**, RSS {nap['rss_mb']:.0f} MB, "
                    f"**{nap['kib_per_instance']:.1f} KiB per sleeping instance** (aim < 20 s "
                    f"for 100,000); load average {load}"
                )
        if "starts" in parts:
            load = load_average()
            st = starts(broker.bootstrap, args.starts, args.starts_ab)
            before = (
                f"; {args.starts_ab}'s `start`, {st['before_sample']:.0f} one after another: "
                f"{st['before_ms']:.1f} ms each"
                if "before_ms" in st
                else ""
            )
            report.add(
                f"- **starts from one client**, {args.starts:,} each way, acknowledged: one "
                f"after another **{st['one_by_one_ms']:.2f} ms each**, in one `start_many` "
                f"{st['batch_ms']:.3f} ms each, awaited together (`start_async`) "
                f"{st['async_ms']:.3f} ms each (aim ≤ 5 ms one after another){before}; the raw "
                f"client's limits above; load average {load}"
            )
    name = {
        frozenset({"fold", "latency", "restore"}): "workflows.md",
        frozenset({"code"}): "workflows-code.md",
    }.get(frozenset(parts), "workflows-partial.md")
    report.write(name)


if __name__ == "__main__":
    main()

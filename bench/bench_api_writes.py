"""Benchmark of the API's write path with the single writer (decisions 0099, 0126):
`POST /jobs` creates per second with p50/p99, the direct path (no judge, decision 0100) and
the command path (the jobwriter judging) in interleaved rounds on one broker, beside the raw
limits measured in the same run: acknowledged produces per second (`EventProducer.deliver`
from C threads) and commands judged per second with no HTTP (`JobCommandWriter.submit`).
CPU per create of the API process (and of the judge) from /proc, and the load average.

Every create is keyed (`Idempotency-Key`), as a careful client sends it.
Run: `.venv/bin/python bench/bench_api_writes.py [--creates N] [--rounds R] [--concurrency C]`.
`--profile N` instead times the stages of N keyed creates in-process (the app through the
ASGI client, over the command path) and prints where the wall time goes. `--sample FILE`
runs the command path's API under `bench/sampling.py` (every thread's stacks, sampled) and
leaves its report in FILE.
`--in-flight 16,64,256` (many creates in flight from one async client) is
bench/bench_api_creates.py's; `--baseline REV` runs the services at a git revision, for an A/B.
Prints, and appends to bench/reports/api-writes.md. Figures, never pass/fail.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench._common import Report, bench_broker, cpu_seconds, percentile, stop_process, track  # noqa: E402
from bench.bench_api import (  # noqa: E402
    SPEC,
    UNLIMITED,
    _timed_stages,
    append_report,
    in_process_api_env,
    line,
    print_stages,
    start_api,
    timed,
    wait_healthy,
)
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.services.api.keys import create_key  # noqa: E402
from tickwheel.stack.broker import free_port  # noqa: E402


def sampled_api(port: int, log: Path, out: Path) -> subprocess.Popen[bytes]:
    """The command path's API under the sampling profiler, once it answers."""
    env = {**os.environ, "TICKWHEEL_API_PORT": str(port), "TICKWHEEL_LOG_LEVEL": "WARNING",
           "TICKWHEEL_JOB_WRITES": "commands", **UNLIMITED}  # fmt: skip
    command = [sys.executable, str(ROOT / "bench" / "sampling.py"), "--out", str(out),
               "-m", "tickwheel.services.api"]  # fmt: skip
    process = track(subprocess.Popen(command, env=env, stdout=log.open("wb"),
                                     stderr=subprocess.STDOUT))  # fmt: skip
    return wait_healthy(process, port, log, 90, "sampled API")


def start_judge(log: Path) -> subprocess.Popen[bytes]:
    from tickwheel.sdk.job_write_path import judge_running

    env = {**os.environ, "TICKWHEEL_LOG_LEVEL": "WARNING"}
    process = track(subprocess.Popen([sys.executable, "-m", "tickwheel.services.jobwriter"],
                                     env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT))  # fmt: skip
    deadline = time.monotonic() + 90
    while not judge_running(os.environ["KAFKA_BOOTSTRAP_SERVERS"]):
        if time.monotonic() > deadline:
            raise SystemExit(f"the judge's group was not live within 90 s; see {log}")
        time.sleep(0.5)
    return process


def creates(client: httpx.Client, tag: str, count: int) -> list[Callable[[], Any]]:
    def post(i: int) -> Callable[[], Any]:
        def call() -> None:
            answer = client.post("/v1/jobs", json={**SPEC, "jobId": f"{tag}-{i}"},
                                 headers={"Idempotency-Key": f"{tag}-{i}"})  # fmt: skip
            assert answer.status_code == 201, answer.text

        return call

    return [post(i) for i in range(count)]


def raw_limits(bootstrap: str, count: int, concurrency: int) -> list[str]:
    """Acknowledged produces/s, and commands judged/s with no HTTP (the judge's own limit)."""
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.sdk.job_commands import JobCommandWriter
    from tickwheel.sdk.jobs import validate_job
    from tickwheel.topology import topic_name

    producer = EventProducer(bootstrap)
    record = validate_job({**SPEC, "jobId": "raw"}, int(time.time() * 1000))
    value = encode("JobDefinition", record)
    topic = topic_name("api.audit")
    calls = [lambda: producer.deliver(topic, "raw", value) for _ in range(count)]
    rate, latencies = timed(calls, concurrency)
    rows = [line("raw: acknowledged produce (`deliver`)", rate, latencies)]
    writer = JobCommandWriter(bootstrap, wait_s=30)
    prefix = uuid.uuid4().hex[:6]

    def judged(i: int) -> Callable[[], Any]:
        definition = validate_job({**SPEC, "jobId": f"raw-{prefix}-{i}"}, int(time.time() * 1000))
        return lambda: writer.submit("create", definition["jobId"], definition)

    rate, latencies = timed([judged(i) for i in range(count)], concurrency)
    rows.append(line("raw: command judged, no HTTP (`JobCommandWriter.submit`)", rate, latencies))
    writer.close()
    return rows


STAGES = (
    ("tickwheel.sdk.jobs", "_module", "validate_job"),
    ("tickwheel.sdk.job_commands", "JobCommandWriter", "submit"),
    ("tickwheel.adapters.kafka.producer", "EventProducer", "deliver"),
    ("tickwheel.services.api.routes_jobs", "_module", "job_response"),
    ("tickwheel.services.api.door", "AuditTrail", "record"),
    ("tickwheel.services.api.topic_view", "TopicView", "publish"),
)


def profile(count: int, concurrency: int) -> None:
    from fastapi.testclient import TestClient

    from tickwheel.services.api.app import create_app

    with bench_broker() as broker:
        in_process_api_env(broker.bootstrap, "profile.")
        os.environ["TICKWHEEL_JOB_WRITES"] = "commands"
        apply_topology(bootstrap=broker.bootstrap)
        judge = start_judge(Path(tempfile.mkdtemp()) / "jobwriter.log")
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        spent = _timed_stages(STAGES)
        client = TestClient(create_app(), headers={"Authorization": f"Bearer {token}"})
        deadline = time.monotonic() + 60
        while client.get("/v1/jobs/none").status_code == 401 and time.monotonic() < deadline:
            time.sleep(0.2)
        calls = creates(client, "p", count + 1)
        calls[-1]()  # warm
        for values in spent.values():
            values.clear()
        cpu = time.process_time()
        rate, latencies = timed(calls[:-1], concurrency)
        cpu_ms = (time.process_time() - cpu) * 1000 / count
        print(f"{count} creates on {concurrency} threads: {rate:,.0f}/s, p50 "
              f"{percentile(latencies, 0.5):.1f} ms, p99 {percentile(latencies, 0.99):.1f} ms, "
              f"in-process CPU {cpu_ms:.2f} ms per create (load {os.getloadavg()[0]:.1f})")  # fmt: skip
        print_stages(spent)
        stop_process(judge)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--creates", type=int, default=400, help="per round and path")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--sample", type=Path, default=None)
    parser.add_argument("--in-flight", default="", help="e.g. 16,64,256: the async bench")
    parser.add_argument("--baseline", default="", help="run the services at this git revision")
    args = parser.parse_args()
    if args.baseline:  # the API and the judge start from the tree at that revision
        from bench._revisions import src_of

        os.environ["PYTHONPATH"] = str(src_of(args.baseline))
        os.environ["TICKWHEEL_BENCH_BASELINE"] = args.baseline
    if args.in_flight:
        from bench.bench_api_creates import async_creates

        levels = [int(v) for v in args.in_flight.split(",")]
        async_creates(args.creates, levels, args.rounds)
        return
    if args.profile:
        profile(args.profile, args.concurrency)
        return
    report = Report("HTTP API writes: the direct path against the single writer")
    with bench_broker() as broker:
        os.environ["KAFKA_BOOTSTRAP_SERVERS"] = broker.bootstrap
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = "benchw."
        apply_topology(bootstrap=broker.bootstrap)
        token, _ = create_key("bench", ["write"], bootstrap=broker.bootstrap, now_ms=1)
        logs = Path(tempfile.mkdtemp(prefix="tickwheel-bench-writes-"))
        judge = start_judge(logs / "jobwriter.log")
        ports = {"direct": free_port(), "commands": free_port()}
        apis = {path: start_api(port, logs / f"api-{path}.log", {"TICKWHEEL_JOB_WRITES": path})
                for path, port in ports.items() if path != "commands" or not args.sample}  # fmt: skip
        if args.sample:
            apis["commands"] = sampled_api(
                ports["commands"], logs / "api-commands.log", args.sample
            )
        start_load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"{args.rounds} interleaved rounds of {args.creates} keyed creates per path, "
                   f"{args.concurrency} client threads; each API in one process (uvicorn, one "
                   f"worker), the judge in another. Load average at the start: {start_load}.")  # fmt: skip
        report.add("")
        report.add("| path / round | n | per second | p50 ms | p99 ms | API CPU ms/create | "
                   "judge CPU ms/create |")  # fmt: skip
        report.add("|---|---|---|---|---|---|---|")
        headers = {"Authorization": f"Bearer {token}"}
        clients = {path: httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers,
                                      timeout=60, limits=httpx.Limits(max_connections=64))
                   for path, port in ports.items()}  # fmt: skip
        for path, client in clients.items():  # warm: producers, views, connections
            for call in creates(client, f"warm-{path}", 20):
                call()
        totals: dict[str, list[float]] = {"direct": [], "commands": []}
        for round_ in range(args.rounds):
            for path, client in clients.items():
                api_cpu, judge_cpu = cpu_seconds(apis[path].pid), cpu_seconds(judge.pid)
                rate, latencies = timed(creates(client, f"{path}-{round_}", args.creates),
                                        args.concurrency)  # fmt: skip
                api_ms = (cpu_seconds(apis[path].pid) - api_cpu) * 1000 / args.creates
                judge_ms = (cpu_seconds(judge.pid) - judge_cpu) * 1000 / args.creates
                totals[path].append(rate)
                report.add(f"{line(f'{path} #{round_ + 1}', rate, latencies)} {api_ms:.2f} | "
                           f"{judge_ms:.2f} |")  # fmt: skip
        for client in clients.values():
            client.close()
        report.add("")
        report.add("Raw limits in the same run, same threads, no HTTP:")
        report.add("")
        report.add("| operation | n | per second | p50 ms | p99 ms |")
        report.add("|---|---|---|---|---|")
        for row in raw_limits(broker.bootstrap, args.creates, args.concurrency):
            report.add(row)
        mean = {p: sum(v) / len(v) for p, v in totals.items()}
        report.add("")
        report.add(f"Mean creates/s: direct {mean['direct']:,.0f}, commands "
                   f"{mean['commands']:,.0f} (ratio {mean['commands'] / mean['direct']:.2f}).")  # fmt: skip
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        report.add(f"Load average at the end (1, 5, 15 min): {load}, on {os.cpu_count()} cores "
                   "shared with other work.")  # fmt: skip
        for process in apis.values():
            stop_process(process)
        stop_process(judge)
    if args.sample:  # a profiled run: its figures carry the sampler's cost
        print("\n".join(report.lines))
        return
    append_report(report, "api-writes.md")


if __name__ == "__main__":
    main()

"""End-to-end pipeline benchmark against a real local broker: timer → worker → timer.

Prints and writes bench/reports/pipeline.md:
- no-op executions per second end to end (fired → leased → succeeded), N one-off jobs due at
  once, one timer and W worker processes, all on this machine with the broker;
- the time from a worker's death (SIGKILL mid-job) to the re-run of its execution elsewhere,
  with a short lease (the bound is the lease plus the owner's grace).

Usage: python bench/bench_pipeline.py [--jobs 20000] [--workers 1] [--lease 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Report, bench_broker, percentile, stop_process, track  # noqa: E402
from tickwheel.adapters.avro import decode, encode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.producer import EventProducer  # noqa: E402
from tickwheel.adapters.kafka.reader import read_to_end  # noqa: E402
from tickwheel.events import requested_event  # noqa: E402
from tickwheel.sdk.jobs import PRIORITIES, validate_job  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402


def start(
    service: str, name: str, env: dict[str, str], log_dir: Path, *args: str
) -> subprocess.Popen[bytes]:
    with (log_dir / f"{name}.log").open("ab") as log:
        return track(subprocess.Popen(
            [sys.executable, "-m", f"tickwheel.services.{service}", "--instance", name, *args],
            stdout=log, stderr=subprocess.STDOUT, env=env,
        ))  # fmt: skip


def events(bootstrap: str) -> list[dict[str, Any]]:
    """Every execution event, with each request as its `requested` event (the timer publishes
    the request alone; history derives the event from it)."""
    out = [
        decode(r.value, "ExecutionEvent")[1]
        for r in read_to_end(topic_name("executions.events"), None, bootstrap, timeout=600)
        if r.value is not None
    ]
    for priority in PRIORITIES:
        topic = topic_name(f"executions.{priority}")
        out += [
            requested_event(decode(r.value, "ExecutionRequest")[1])
            for r in read_to_end(topic, None, bootstrap, timeout=600)
            if r.value is not None
        ]
    return out


def setup(bootstrap: str, **extra: str) -> dict[str, str]:
    prefix = f"p{uuid.uuid4().hex[:8]}."
    os.environ["TICKWHEEL_TOPIC_PREFIX"] = prefix
    apply_topology(bootstrap=bootstrap)
    return {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "TICKWHEEL_TOPIC_PREFIX": prefix,
        "TICKWHEEL_TIMER_GROUP": f"bench-{uuid.uuid4()}",
        **extra,
    }


def publish(bootstrap: str, specs: list[dict[str, Any]]) -> None:
    producer = EventProducer(bootstrap, **{"linger.ms": 50})
    now = int(time.time() * 1000)
    for spec in specs:
        record = validate_job(spec, now)
        producer.send(
            topic_name("jobs.definitions"), record["jobId"], encode("JobDefinition", record)
        )
    producer.flush(300)


def throughput(bootstrap: str, jobs: int, workers: int, log_dir: Path) -> dict[str, float]:
    env = setup(bootstrap, TICKWHEEL_LOG_LEVEL="WARNING")
    due = datetime.fromtimestamp(time.time() + 25, tz=UTC).isoformat()
    publish(bootstrap, [{"jobId": f"n-{i}", "type": "noop", "runAt": due} for i in range(jobs)])
    procs = [start("timer", "timer", env, log_dir)]
    procs += [
        start("worker", f"worker-{i}", env, log_dir, "--concurrency", "8", "--priority", "normal")
        for i in range(workers)
    ]
    deadline = time.time() + 25 + 120
    done = 0
    while time.time() < deadline:
        time.sleep(5)
        done = sum(1 for e in events(bootstrap) if e["event_type"] == "succeeded")
        if done >= jobs:
            break
    for proc in procs:
        stop_process(proc)
    all_events = events(bootstrap)
    requested = {
        e["execution_id"]: e["event_time"] for e in all_events if e["event_type"] == "requested"
    }
    succeeded = {
        e["execution_id"]: e["event_time"] for e in all_events if e["event_type"] == "succeeded"
    }
    latencies = [(succeeded[i] - requested[i]) / 1000 for i in succeeded if i in requested]
    span = (max(succeeded.values()) - min(requested.values())) / 1000 if succeeded else float("nan")
    return {
        "jobs": jobs,
        "succeeded": len(succeeded),
        "span_s": span,
        "rate": len(succeeded) / span if span else float("nan"),
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
    }


def death_to_rerun(bootstrap: str, lease: int, log_dir: Path) -> float:
    env = setup(bootstrap, TICKWHEEL_LEASE_SECONDS=str(lease), TICKWHEEL_HEARTBEAT_SECONDS="1")
    timer = start("timer", "timer", env, log_dir)
    doomed = start("worker", "doomed", env, log_dir)
    publish(
        bootstrap,
        [
            {
                "jobId": "slow",
                "type": "sleep",
                "payload": {"seconds": 3 * lease},
                "runAt": "2020-01-01T00:00:00Z",
            }
        ],
    )
    while not any(e["event_type"] == "leased" for e in events(bootstrap)):
        time.sleep(0.5)
    doomed.send_signal(signal.SIGKILL)
    killed = time.time()
    rescuer = start("worker", "rescuer", env, log_dir)
    rerun = float("nan")
    while time.time() < killed + lease * 4 + 60:
        leases = [e for e in events(bootstrap) if e["event_type"] == "leased" and e["attempt"] == 2]
        if leases:
            rerun = leases[0]["event_time"] / 1000 - killed
            break
        time.sleep(0.5)
    for proc in (timer, rescuer):
        stop_process(proc)
    return rerun


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--lease", type=int, default=5)
    args = parser.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
    report = Report("Pipeline benchmarks (timer → worker → timer)")
    with bench_broker(log_dir / "kafka") as broker:
        t = throughput(broker.bootstrap, args.jobs, args.workers, log_dir)
        report.add(
            f"- {t['succeeded']}/{t['jobs']} no-op executions due at once, 1 timer + {args.workers} "
            f"worker process(es): {t['rate']:.0f} executions/s end to end (fired → leased → "
            f"succeeded over {t['span_s']:.1f} s); fired → succeeded p50 {t['p50']:.2f} s, "
            f"p99 {t['p99']:.2f} s"
        )
        rerun = death_to_rerun(broker.bootstrap, args.lease, log_dir)
        report.add(
            f"- worker SIGKILLed mid-job with a {args.lease} s lease (1 s heartbeats): attempt 2 "
            f"leased by another worker {rerun:.1f} s after the kill (bound: lease + 2 s grace + a tick)"
        )
    report.write("pipeline.md")


if __name__ == "__main__":
    main()

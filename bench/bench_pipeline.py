"""End-to-end pipeline benchmark against a real local broker: timer → worker → timer.

Prints and writes bench/reports/pipeline.md:
- no-op executions per second end to end (fired → leased → succeeded), N one-off jobs due at
  once, one timer, W worker processes and the history sink, all on this machine with the
  broker; beside the raw client's consume → produce loop on the same broker (a ratio), with
  the throughput over time as a chart, and how long after the last outcome the history sink's
  lag is back to zero;
- the same with 2 timers and 2 workers: how the partitions and the executions spread across
  the instances, and that no occurrence is triggered twice;
- the time from a worker's death (SIGKILL mid-job) to the re-run of its execution elsewhere,
  with a short lease (the bound is the lease plus the owner's grace).

Usage: python bench/bench_pipeline.py [--jobs 20000] [--workers 1] [--lease 5] [--spread-jobs N]
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

from bench._charts import rate_over_time  # noqa: E402
from bench._common import (  # noqa: E402
    Report,
    bench_broker,
    cpu_seconds,
    percentile,
    stop_process,
    track,
)
from bench._pipeline_records import (  # noqa: E402
    assignments,
    count_by_worker,
    cpu_per_execution,
    describe_cpu,
    events,
    history_rows,
    times_of,
    wait_for_succeeded,
)
from bench.bench_limits import measure_limits  # noqa: E402
from tickwheel.adapters.avro import encode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.producer import EventProducer  # noqa: E402
from tickwheel.sdk.jobs import validate_job  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402

WARM_UP_S = 5  # the steady run's first seconds, left out of its latencies
# The steady jobs' first slot, after their publication: the timer restores them and the worker
# joins its group first. Jobs due from their creation were already late when the restore ended
# (about 4 s at 10,000 jobs), and the run measured that backlog's catch-up, not a steady state.
STEADY_LEAD_S = 15


# `--sample DIR`: every service process runs under bench/sampling.py, its stacks in DIR/<name>.txt.
SAMPLE_DIR: list[Path] = []


def start(
    service: str, name: str, env: dict[str, str], log_dir: Path, *args: str
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", f"tickwheel.services.{service}", "--instance", name, *args]
    if SAMPLE_DIR:
        sampler = Path(__file__).resolve().parent / "sampling.py"
        command[1:2] = [str(sampler), "--out", str(SAMPLE_DIR[0] / f"{name}.txt"), "-m"]
    with (log_dir / f"{name}.log").open("ab") as log:
        return track(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env))


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


def throughput(
    bootstrap: str, jobs: int, workers: int, log_dir: Path, timers: int = 1, broker_pid: int = 0
) -> dict[str, Any]:
    group = f"bench-history-{uuid.uuid4().hex[:8]}"
    log_dir.mkdir(parents=True, exist_ok=True)
    history_dir = log_dir / f"history-{group}"
    env = setup(
        bootstrap,
        TICKWHEEL_LOG_LEVEL="WARNING",
        TICKWHEEL_HISTORY_GROUP=group,
        TICKWHEEL_HISTORY_DIR=str(history_dir),
    )
    due_at = time.time() + 25
    due = datetime.fromtimestamp(due_at, tz=UTC).isoformat()
    publish(bootstrap, [{"jobId": f"n-{i}", "type": "noop", "runAt": due} for i in range(jobs)])
    # The timers log at INFO: their `partition_restored` lines say who owns what.
    timer_env = {**env, "TICKWHEEL_LOG_LEVEL": "INFO"}
    procs = [start("timer", f"timer-{i}", timer_env, log_dir) for i in range(timers)]
    procs += [
        start("worker", f"worker-{i}", env, log_dir, "--concurrency", "8", "--priority", "normal")
        for i in range(workers)
    ]
    procs.append(start("history", "history", env, log_dir, "--port", "0"))
    pids = {_role(p): p.pid for p in procs} | ({"broker": broker_pid} if broker_pid else {})
    time.sleep(max(0.0, due_at - 1 - time.time()))  # restored and idle: CPU counted from here
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    done = wait_for_succeeded(bootstrap, jobs, due_at + 120)
    cpu = cpu_per_execution(cpu_before, pids, done)
    # The sink keeps running: how long after the last outcome is every event in ClickHouse
    # (requested, leased, succeeded: three rows per execution)?
    lag_zero_s = float("nan")
    while time.time() < due_at + 120 + 60:
        if history_rows(history_dir) >= 3 * done:
            lag_zero_s = time.time()
            break
        time.sleep(0.25)
    stopping_at = time.time()
    for proc in procs:
        stop_process(proc)
    all_events = events(bootstrap)
    timer_names = [f"timer-{i}" for i in range(timers)]
    owned, moved = assignments(log_dir, timer_names, due_at - 1, stopping_at)
    requested, succeeded = times_of(all_events, "requested"), times_of(all_events, "succeeded")
    latencies = [(succeeded[i] - requested[i]) / 1000 for i in succeeded if i in requested]
    span = (max(succeeded.values()) - min(requested.values())) / 1000 if succeeded else float("nan")
    last_outcome_s = max(succeeded.values()) / 1000 if succeeded else float("nan")
    fired = [
        (e["execution_id"], e["attempt"]) for e in all_events if e["event_type"] == "requested"
    ]
    return {
        "cpu": cpu,
        "lag_zero_after_s": lag_zero_s - last_outcome_s,
        "times": {
            kind: [e["event_time"] / 1000 for e in all_events if e["event_type"] == kind]
            for kind in ("requested", "leased", "succeeded")
        },
        "fired_twice": len(fired) - len(set(fired)),
        "leased_by": count_by_worker(all_events),
        "timer_partitions": owned,
        "moved_mid_run": moved,
        "jobs": jobs,
        "succeeded": len(succeeded),
        "span_s": span,
        "rate": len(succeeded) / span if span else float("nan"),
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
    }


def steady(
    bootstrap: str, rate: int, seconds: int, workers: int, log_dir: Path, broker_pid: int = 0
) -> dict[str, Any]:
    """`rate` jobs, each every second (jitter spreading them over the second) for `seconds`
    runs, through 1 timer, `workers` workers and the history sink: fired → succeeded over
    the runs after the first few seconds (the pipeline warm), and what it kept up with."""
    log_dir.mkdir(parents=True, exist_ok=True)
    group = f"bench-steady-{uuid.uuid4().hex[:8]}"
    env = setup(bootstrap, TICKWHEEL_LOG_LEVEL="WARNING", TICKWHEEL_HISTORY_GROUP=group,
                TICKWHEEL_HISTORY_DIR=str(log_dir / f"history-{group}"))  # fmt: skip
    start_at = datetime.fromtimestamp(time.time() + STEADY_LEAD_S, tz=UTC).isoformat()
    publish(bootstrap, [
        {"jobId": f"s-{i}", "type": "noop", "cron": "* * * * * *", "jitter": "999ms",
         "startAt": start_at, "maxRuns": seconds, "misfirePolicy": "coalesce"}
        for i in range(rate)
    ])  # fmt: skip
    procs = [start("timer", "timer", env, log_dir)]
    procs += [
        start("worker", f"worker-{i}", env, log_dir, "--concurrency", "8", "--priority", "normal")
        for i in range(workers)
    ]
    procs.append(start("history", "history", env, log_dir, "--port", "0"))
    pids = {_role(p): p.pid for p in procs} | ({"broker": broker_pid} if broker_pid else {})
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    expected = rate * seconds
    # The steady window's CPU: from when the events topic holds the first WARM_UP_S seconds'
    # executions (two events each: leased, succeeded) to the end, without the restores, group
    # joins and the history's start, which the whole run's figure includes.
    warm_snapshot: dict[str, Any] = {}

    def snapshot_when_warm(written: int) -> None:
        if not warm_snapshot and written >= 2 * rate * WARM_UP_S:
            warm_snapshot.update(
                written=written, cpu={n: cpu_seconds(pid) for n, pid in pids.items()}
            )

    done = wait_for_succeeded(bootstrap, expected, time.time() + 60 + 3 * seconds,
                              on_written=snapshot_when_warm)  # fmt: skip
    cpu = cpu_per_execution(cpu_before, pids, done)  # the restore included: 10,000 jobs
    warm_cpu = (
        cpu_per_execution(warm_snapshot["cpu"], pids, done - warm_snapshot["written"] // 2)
        if warm_snapshot
        else {}
    )
    for proc in procs:
        stop_process(proc)
    all_events = events(bootstrap)
    requested, succeeded = times_of(all_events, "requested"), times_of(all_events, "succeeded")
    leased = times_of(all_events, "leased")
    first = min(requested.values()) if requested else 0
    warm = first + WARM_UP_S * 1000  # the first seconds: restore, group joins, first fetches
    window = [i for i, at in requested.items() if at >= warm]
    latencies = [(succeeded[i] - requested[i]) / 1000 for i in window if i in succeeded]
    to_lease = [(leased[i] - requested[i]) / 1000 for i in window if i in leased]
    in_worker = [
        (succeeded[i] - leased[i]) / 1000 for i in window if i in succeeded and i in leased
    ]
    # How late the timer emitted each request after its (jittered) fire time: the part of
    # fired → succeeded spent before the request existed.
    fire_times = {
        e["execution_id"]: e["fire_time"]
        for e in all_events
        if e["event_type"] == "requested" and e.get("fire_time") is not None
    }
    window_set = set(window)
    emitted_late = [(requested[i] - fire_times[i]) / 1000 for i in window_set if i in fire_times]
    fired_s = (max(requested.values()) - warm) / 1000 if window else float("nan")
    # Where in the run the late ones fall: every request's lateness by the second (from the
    # first request's) its fire time is in, warm-up included.
    by_second: dict[int, list[float]] = {}
    for i, fire in fire_times.items():
        if i in requested:
            by_second.setdefault((fire - first) // 1000, []).append((requested[i] - fire) / 1000)
    lateness_by_second = [
        (second, len(late), percentile(late, 0.5), percentile(late, 0.99), max(late))
        for second, late in sorted(by_second.items())
    ]
    return {
        "cpu": cpu, "warm_cpu": warm_cpu, "rate": rate, "seconds": seconds, "workers": workers,
        "requested": len(requested),
        "succeeded": len(succeeded), "window": len(window), "fired_s": fired_s,
        "fired_per_s": len(window) / fired_s if fired_s else float("nan"),
        "finished_in_window": len(latencies),
        "p50": percentile(latencies, 0.5) if latencies else float("nan"),
        "p99": percentile(latencies, 0.99) if latencies else float("nan"),
        "to_lease_p99": percentile(to_lease, 0.99) if to_lease else float("nan"),
        "in_worker_p99": percentile(in_worker, 0.99) if in_worker else float("nan"),
        "emitted_late_p50": percentile(emitted_late, 0.5) if emitted_late else float("nan"),
        "emitted_late_p99": percentile(emitted_late, 0.99) if emitted_late else float("nan"),
        "lateness_by_second": lateness_by_second,
    }  # fmt: skip


def _role(process: subprocess.Popen[bytes]) -> str:
    """The instance name a service process was started with (`--instance NAME`)."""
    args = [str(a) for a in process.args]  # type: ignore[union-attr]
    return args[args.index("--instance") + 1]


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
    parser.add_argument("--spread-jobs", type=int, default=20_000)
    parser.add_argument(
        "--steady-rate",
        type=int,
        default=10_000,
        help="jobs each run every second: executions/s (0: no steady run)",
    )
    parser.add_argument("--steady-s", type=int, default=20, help="runs of each steady job")
    parser.add_argument(
        "--only-steady", action="store_true", help="the steady run alone (printed only)"
    )
    parser.add_argument("--sample", type=Path, help="write each service's stack samples here")
    args = parser.parse_args()
    if args.sample is not None:
        args.sample.mkdir(parents=True, exist_ok=True)
        SAMPLE_DIR.append(args.sample)
    log_dir = Path(tempfile.mkdtemp(prefix="tickwheel-bench-"))
    report = Report("Pipeline benchmarks (timer → worker → timer)")
    with bench_broker(log_dir / "kafka") as broker:
        broker_pid = broker.process.pid if broker.process else 0
        limits = measure_limits(broker.bootstrap)
        report.add(f"- {limits.describe()} (`bench/bench_limits.py`, same broker, same run)")
        if args.steady_rate:
            d = steady(broker.bootstrap, args.steady_rate, args.steady_s, args.workers,
                       log_dir / "steady", broker_pid)  # fmt: skip
            report.add(
                f"- steady, {d['rate']:,} jobs each every second (jitter 999 ms) for {d['seconds']} s "
                f"from {STEADY_LEAD_S} s after they were published, "
                f"1 timer + {d['workers']} worker(s) + the history sink: fired "
                f"{d['fired_per_s']:,.0f}/s after the first {WARM_UP_S} s "
                f"({limits.ratio_loop(d['fired_per_s'])} of the raw loop); of those "
                f"{d['window']:,} executions {d['finished_in_window']:,} succeeded, fired → "
                f"succeeded p50 {d['p50']:.2f} s, p99 {d['p99']:.2f} s (fired → leased p99 "
                f"{d['to_lease_p99']:.2f} s, leased → succeeded p99 {d['in_worker_p99']:.2f} s; "
                f"the request emitted after its fire time p50 {d['emitted_late_p50']:.2f} s, "
                f"p99 {d['emitted_late_p99']:.2f} s) "
                f"({d['succeeded']:,}/{d['requested']:,} succeeded in all); "
                f"{describe_cpu(d['cpu'])} (the whole run); "
                f"{describe_cpu(d['warm_cpu']) if d['warm_cpu'] else 'no warm snapshot'} "
                f"(after the first {WARM_UP_S} s' executions)"
            )
        if args.only_steady and args.steady_rate:
            print("emitted after fire time, by the second of the fire time (from the first "
                  "request): second, requests, p50 s, p99 s, max s")  # fmt: skip
            for second, count, p50, p99, worst in d["lateness_by_second"]:
                print(f"  {second:>3} {count:>6} {p50:6.2f} {p99:6.2f} {worst:6.2f}")
        if args.only_steady:  # printed, not written: the report holds whole runs
            return
        t = throughput(broker.bootstrap, args.jobs, args.workers, log_dir,
                       broker_pid=broker_pid)  # fmt: skip
        report.add(
            f"- {t['succeeded']}/{t['jobs']} no-op executions due at once, 1 timer + {args.workers} "
            f"worker process(es) + the history sink: **{t['rate']:,.0f} executions/s end to end, "
            f"{limits.ratio_loop(t['rate'])} of the raw loop** (fired → leased → succeeded over "
            f"{t['span_s']:.1f} s); fired → succeeded p50 {t['p50']:.2f} s, p99 {t['p99']:.2f} s; "
            f"the history sink's lag back to zero {t['lag_zero_after_s']:.1f} s after the last "
            f"outcome; {describe_cpu(t['cpu'])} (from a second before the due time to the "
            "last outcome)"
        )
        chart = rate_over_time(
            t["times"], "pipeline-throughput.png",
            f"{t['jobs']:,} no-op executions due at once: 1 timer, {args.workers} worker(s)",
        )  # fmt: skip
        s = throughput(broker.bootstrap, args.spread_jobs, 2, log_dir / "spread", timers=2,
                       broker_pid=broker_pid)  # fmt: skip
        report.add(
            f"- spread, 2 timers + 2 workers + the history sink, {s['succeeded']}/{s['jobs']} "
            f"due at once: **{s['rate']:,.0f} executions/s end to end, "
            f"{limits.ratio_loop(s['rate'])} of the raw loop**; fired → succeeded p50 "
            f"{s['p50']:.2f} s, p99 {s['p99']:.2f} s; the history sink's lag back to zero "
            f"{s['lag_zero_after_s']:.1f} s after the last outcome; {describe_cpu(s['cpu'])}; "
            f"partitions each timer owned at the end {s['timer_partitions']}, revoked from a "
            f"timer during the run {s['moved_mid_run'] or 'none'}; leases per worker {s['leased_by']}; occurrences fired "
            f"twice: {s['fired_twice']}"
        )
        rerun = death_to_rerun(broker.bootstrap, args.lease, log_dir)
        report.add(
            f"- worker SIGKILLed mid-job with a {args.lease} s lease (1 s heartbeats): attempt 2 "
            f"leased by another worker {rerun:.1f} s after the kill (bound: lease + 2 s grace + a tick)"
        )
    report.add("")
    report.add("The machine is shared (other engineers' tests run on its two cores): compare the "
               "ratios to the raw limit, measured in the same run, rather than raw figures.")  # fmt: skip
    report.add(f"\n![throughput over time]({chart})")
    report.write("pipeline.md")


if __name__ == "__main__":
    main()

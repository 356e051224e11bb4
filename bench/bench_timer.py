"""Timer service benchmarks against a real local Kafka broker.

Prints and writes bench/reports/timer.md:
- steady state: fire lag p50/p99/max with N every-second jobs (jitter off);
- burst: 100,000 jobs due in the same minute, with default jitter and with jitter off —
  fire lag percentiles and the emission rate one instance sustains (transactions per batch);
- replay: the same burst with its states held back and the timer SIGKILLed after it: how long
  the heir takes to rebuild the jobs from the requests, and that nothing fires twice;
- restore: time for one instance to restore 1,000,000 jobs, and its resident memory.

Fire lag = the timer's emit time (`requested_at`) minus the intended fire time (slot + jitter).
Usage: python bench/bench_timer.py [--steady-jobs 2000] [--burst 100000] [--restore 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
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

from bench._charts import histogram, points  # noqa: E402
from bench._common import Report, bench_broker, percentile, stop_process, track  # noqa: E402
from bench._revisions import tree_of  # noqa: E402
from bench.bench_limits import measure_limits  # noqa: E402
from tickwheel.adapters.avro import decode, encode  # noqa: E402
from tickwheel.adapters.kafka.admin import apply_topology  # noqa: E402
from tickwheel.adapters.kafka.producer import EventProducer  # noqa: E402
from tickwheel.adapters.kafka.reader import read_to_end  # noqa: E402
from tickwheel.sdk.jobs import validate_job  # noqa: E402
from tickwheel.topology import topic_name  # noqa: E402

ZONES = ["UTC", "Europe/London", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]


class TimerRun:
    """How the benchmark's timer processes run: `sample_dir` samples each one's stacks
    (bench/sampling.py); `code` runs another revision's `src/` (its tree: bench/_revisions.py),
    so two revisions are compared on one broker in one run."""

    sample_dir: Path | None = None
    code: Path | None = None


class Scenario:
    def __init__(self, bootstrap: str, name: str) -> None:
        self.bootstrap = bootstrap
        self.prefix = f"b{uuid.uuid4().hex[:8]}."
        os.environ["TICKWHEEL_TOPIC_PREFIX"] = self.prefix
        apply_topology(bootstrap=bootstrap)
        self.name = name
        self.log = Path(tempfile.mkdtemp()) / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def publish(self, specs: list[dict[str, Any]], now_ms: int) -> float:
        started = time.perf_counter()
        producer = EventProducer(self.bootstrap, **{"linger.ms": 50, "batch.num.messages": 10000})
        topic = topic_name("jobs.definitions")
        for spec in specs:
            record = validate_job(spec, now_ms)
            producer.send(topic, record["jobId"], encode("JobDefinition", record))
        producer.flush(300)
        return time.perf_counter() - started

    def start_timer(self, **env: str) -> None:
        full_env = {
            **os.environ,
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "TICKWHEEL_TOPIC_PREFIX": self.prefix,
            "TICKWHEEL_TIMER_GROUP": f"bench-{uuid.uuid4()}",
            **env,
        }
        command = [sys.executable, "-m", "tickwheel.services.timer", "--instance", "bench"]
        if TimerRun.sample_dir is not None:
            out = TimerRun.sample_dir / f"{self.name}.txt"
            command[1:2] = [str(ROOT / "bench" / "sampling.py"), "--out", str(out), "-m"]
        if TimerRun.code is not None:
            full_env["PYTHONPATH"] = str(TimerRun.code / "src")
            full_env["TICKWHEEL_SCHEMAS_DIR"] = str(TimerRun.code / "schemas")
            full_env["TICKWHEEL_TOPOLOGY_FILE"] = str(TimerRun.code / "topology" / "topics.toml")
        with self.log.open("ab") as log:
            self.process = track(
                subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=full_env,
                )
            )

    def stop_timer(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def rss_mb(self) -> float:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def restored_partitions(self) -> int:
        return self.log.read_text().count('"partition_restored"') if self.log.exists() else 0

    def states_written_ms(self) -> list[int]:
        """When each job's latest TimerState was written (`updated_at`), checkpoints aside."""
        return [
            decode(record.value, "TimerState")[1]["updated_at"]
            for record in read_to_end(topic_name("timers.state"), None, self.bootstrap, timeout=600)
            if record.value is not None and not (record.key or "").startswith("__partition__/")
        ]

    def requests(self) -> list[dict[str, Any]]:
        out = []
        for priority in ("high", "normal", "low"):
            for record in read_to_end(
                topic_name(f"executions.{priority}"), None, self.bootstrap, timeout=600
            ):
                assert record.value is not None
                out.append(decode(record.value, "ExecutionRequest")[1])
        return out


def lag_summary(requests: list[dict[str, Any]]) -> dict[str, Any]:
    lags = [(r["requested_at"] - r["fire_time"]) / 1000 for r in requests]
    emitted = [r["requested_at"] for r in requests]
    span = (max(emitted) - min(emitted)) / 1000 if emitted else 0.0
    return {
        "lags_ms": [lag * 1000 for lag in lags],
        "count": len(requests),
        "p50": percentile(lags, 0.50),
        "p99": percentile(lags, 0.99),
        "max": max(lags) if lags else float("nan"),
        "mean": statistics.fmean(lags) if lags else float("nan"),
        "emit_span_s": span,
    }


def steady(bootstrap: str, jobs: int, seconds: int) -> dict[str, Any]:
    scenario = Scenario(bootstrap, "steady")
    now = int(time.time() * 1000)
    specs = [
        {"jobId": f"s-{i}", "type": "noop", "cron": "* * * * * *", "jitter": "0s"}
        for i in range(jobs)
    ]
    scenario.publish(specs, now)
    scenario.start_timer()
    time.sleep(seconds + 5)
    scenario.stop_timer()
    requests = scenario.requests()
    # Steady state: from 3 s after the first emission (start-up and restore excluded).
    first = min(r["requested_at"] for r in requests)
    return lag_summary([r for r in requests if r["scheduled_time"] > first + 3000])


def _due_the_minute_after_next(now_ms: int, lead_minutes: int = 2) -> tuple[datetime, str]:
    """A daily cron (UTC) at the minute after next (or `lead_minutes` on): every job on it is
    due in that minute."""
    due = datetime.fromtimestamp((now_ms // 60_000 + lead_minutes) * 60, tz=UTC)
    return due, f"{due.minute} {due.hour} * * *"


def burst(bootstrap: str, jobs: int, jitter: bool, lead_minutes: int = 2) -> dict[str, Any]:
    scenario = Scenario(bootstrap, f"burst-{'jitter' if jitter else 'nojitter'}")
    now = int(time.time() * 1000)
    due, cron = _due_the_minute_after_next(now, lead_minutes)
    specs = [
        {"jobId": f"burst-{i}", "type": "noop", "cron": cron, "tenantId": f"tenant-{i % 10}",
         **({} if jitter else {"jitter": "0s"})}
        for i in range(jobs)
    ]  # fmt: skip
    publish_s = scenario.publish(specs, now)
    scenario.start_timer()
    # A burst measured while the timer still restores measures the restore too (its backlog
    # fires late, all at once): when the last partition was served is reported beside it.
    restored_at = None
    deadline = due.timestamp() + (60 if jitter else 0) + 60
    while time.time() < deadline:
        time.sleep(0.5)
        if restored_at is None and scenario.restored_partitions() >= 6:
            restored_at = time.time()
    scenario.stop_timer()
    requests = scenario.requests()
    summary = lag_summary(requests)
    summary["publish_s"] = publish_s
    summary["restored_before_due_s"] = (
        due.timestamp() - restored_at if restored_at is not None else float("-inf")
    )
    # Fired jobs' states are written after the burst (decision 0008): by when.
    states = scenario.states_written_ms()
    if requests and states:
        summary["states_after_s"] = (max(states) - max(r["requested_at"] for r in requests)) / 1000
    if not jitter and summary["emit_span_s"] > 0:
        summary["emit_rate_per_s"] = summary["count"] / summary["emit_span_s"]
    return summary


def replay(bootstrap: str, jobs: int) -> dict[str, float]:
    """A burst whose states were never written (held back on purpose), the timer SIGKILLed
    after it: how long the heir's restore takes to rebuild the jobs from the requests
    (decision 0008), and whether any slot fired again."""
    scenario = Scenario(bootstrap, "replay")
    now = int(time.time() * 1000)
    due, cron = _due_the_minute_after_next(now)
    specs = [
        {"jobId": f"replay-{i}", "type": "noop", "cron": cron, "jitter": "0s",
         "tenantId": f"tenant-{i % 10}"}
        for i in range(jobs)
    ]  # fmt: skip
    scenario.publish(specs, now)
    scenario.start_timer(TICKWHEEL_TIMER_STATE_LAG_MS="3600000")
    while time.time() < due.timestamp() + 20:
        time.sleep(1)
    assert scenario.process is not None
    scenario.process.kill()  # SIGKILL: nothing is flushed
    scenario.process.wait(30)
    restored_before = scenario.restored_partitions()
    started = time.monotonic()
    scenario.start_timer(TICKWHEEL_TIMER_STATE_LAG_MS="3600000")
    while scenario.restored_partitions() < restored_before + 6:
        time.sleep(0.2)
        if time.monotonic() - started > 600:
            break
    restore_s = time.monotonic() - started
    time.sleep(5)
    scenario.stop_timer()
    requests = scenario.requests()
    slots = {(r["job_id"], r["scheduled_time"]) for r in requests}
    return {"jobs": jobs, "restore_s": restore_s, "requests": len(requests), "slots": len(slots)}


def restore(bootstrap: str, jobs: int) -> dict[str, float]:
    scenario = Scenario(bootstrap, "restore")
    now = int(time.time() * 1000)
    # 3,000 distinct (cron, zone) pairs, as a real fleet shares schedules (600 crons x 5 zones).
    specs = [
        {"jobId": f"r-{i:07d}", "type": "noop", "cron": f"{i % 600 % 60} {i % 600 // 60} * * *",
         "timezone": ZONES[i // 600 % len(ZONES)], "payload": {"n": i}}
        for i in range(jobs)
    ]  # fmt: skip
    publish_s = scenario.publish(specs, now)
    del specs
    started = time.monotonic()
    scenario.start_timer()
    while scenario.restored_partitions() < 6:
        time.sleep(0.5)
        if time.monotonic() - started > 900:
            break
    restore_s = time.monotonic() - started
    time.sleep(2)
    rss = scenario.rss_mb()
    scenario.stop_timer()
    return {"jobs": jobs, "publish_s": publish_s, "restore_s": restore_s, "rss_mb": rss}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steady-jobs", type=int, default=2000)
    parser.add_argument("--steady-seconds", type=int, default=20)
    parser.add_argument("--burst", type=int, default=100_000)
    parser.add_argument(
        "--restore",
        default="100000,300000,1000000",
        help="job counts to restore, comma-separated (one restore each; charted against time)",
    )
    parser.add_argument("--skip", nargs="*", default=[], help="steady, burst, replay, restore")
    parser.add_argument(
        "--burst-jitter", choices=["both", "on", "off"], default="both", help="which bursts to run"
    )
    parser.add_argument(
        "--burst-lead",
        type=int,
        default=2,
        help="minutes from publishing a burst to its due minute (more on a loaded machine, so "
        "the timer has restored before it)",
    )
    parser.add_argument("--sample", type=Path, help="write each timer's stack samples here")
    parser.add_argument(
        "--timer-code",
        type=tree_of,
        help="run the timer of another revision: a git revision, or its tree on disk",
    )
    parser.add_argument("--report", default="timer.md", help="the report's name in bench/reports")
    args = parser.parse_args()
    TimerRun.sample_dir, TimerRun.code = args.sample, args.timer_code
    if args.sample is not None:
        args.sample.mkdir(parents=True, exist_ok=True)

    report = Report("Timer benchmarks")
    lag_series: dict[str, list[float]] = {}
    restores: list[dict[str, float]] = []
    with bench_broker() as broker:
        limits = measure_limits(broker.bootstrap)
        report.add(f"- {limits.describe()} (`bench/bench_limits.py`, same broker, same run)")
        if "steady" not in args.skip:
            s = steady(broker.bootstrap, args.steady_jobs, args.steady_seconds)
            lag_series[f"steady, {args.steady_jobs} jobs/s"] = s["lags_ms"]
            report.add(
                f"- steady, {args.steady_jobs} every-second jobs, jitter off: {s['count']} "
                f"occurrences at {s['count'] / max(s['emit_span_s'], 1e-9):.0f}/s, fire lag "
                f"p50 {s['p50'] * 1000:.0f} ms, p99 {s['p99'] * 1000:.0f} ms, "
                f"max {s['max'] * 1000:.0f} ms"
            )
        if "burst" not in args.skip:
            for jitter in {"both": (True, False), "on": (True,), "off": (False,)}[
                args.burst_jitter
            ]:
                b = burst(broker.bootstrap, args.burst, jitter, args.burst_lead)
                lag_series[f"burst {args.burst:,}, jitter {'on' if jitter else 'off'}"] = b[
                    "lags_ms"
                ]
                rate = (
                    f"; **emission rate {b['emit_rate_per_s']:,.0f}/s, "
                    f"{limits.ratio_produce(b['emit_rate_per_s'])} of the raw transactional "
                    "produce**"
                    if "emit_rate_per_s" in b
                    else ""
                )
                if "states_after_s" in b:
                    rate += f"; the jobs' states all written {b['states_after_s']:.1f} s after"
                ahead = b["restored_before_due_s"]
                rate += (
                    f"; restored {ahead:.0f} s before the due minute"
                    if ahead > 0
                    else "; **the restore was still running at the due minute: this measures "
                    "restore and burst together**"
                )
                report.add(
                    f"- burst, {args.burst} jobs due in one minute, jitter "
                    f"{'default (60 s window)' if jitter else 'off'}: {b['count']} emitted over "
                    f"{b['emit_span_s']:.1f} s, fire lag p50 {b['p50'] * 1000:.0f} ms, "
                    f"p99 {b['p99'] * 1000:.0f} ms, max {b['max'] * 1000:.0f} ms{rate}"
                )
        if "replay" not in args.skip:
            p = replay(broker.bootstrap, args.burst)
            report.add(
                f"- replay, {p['jobs']} jobs fired with their states held back, timer SIGKILLed: "
                f"the heir restored all 6 partitions from the requests in {p['restore_s']:.1f} s "
                f"(process start included); {p['requests']} requests for {p['slots']} slots "
                f"afterwards (equal: nothing fired twice)"
            )
        if "restore" not in args.skip:
            for jobs in (int(n) for n in args.restore.split(",") if n.strip()):
                r = restore(broker.bootstrap, jobs)
                restores.append(r)
                report.add(
                    f"- restore, {r['jobs']} jobs in the definitions topic (published in "
                    f"{r['publish_s']:.1f} s): one instance restored all 6 partitions in "
                    f"{r['restore_s']:.1f} s; resident memory {r['rss_mb']:.0f} MiB"
                )
    report.add("")
    report.add("The machine is shared (other engineers' tests run on its two cores): compare the "
               "ratios to the raw limit, measured in the same run, rather than raw figures.")  # fmt: skip
    # The charts go beside the report (a report in a folder of its own gets its own charts).
    beside = Path(args.report).parent
    if lag_series:
        name = histogram(lag_series, str(beside / "timer-fire-lag.png"),
                         "Timer fire lag (emit - intended)")  # fmt: skip
        report.add(f"\n![fire lag histograms]({Path(name).name})")
    if restores:
        name = points(
            {"restore, all 6 partitions": ([r["jobs"] for r in restores],
                                           [r["restore_s"] for r in restores])},
            str(beside / "timer-restore.png"), "Restore time against job count", "jobs", "seconds",
        )  # fmt: skip
        report.add(f"\n![restore time against job count]({Path(name).name})")
    report.write(args.report)


if __name__ == "__main__":
    main()

"""Watchdog benchmarks: the pure evaluator's cost, and the service's deadline → alert time.

Prints, and writes bench/reports/watchdog-<scenario>.md (`100k`, `1000k`, ... by the job
count, `service` for `--service-only`; bench/reports/watchdog.md is the summary):

* fold: the CPU cost of folding execution events (request, lease, success per slot) into the
  evaluator's facts — events per CPU second, and the share of one core that 10,000 events/s
  would take;
* evaluate: the CPU time of one evaluation (one tick) over N definitions spread over a few
  thousand schedules, every job healthy (the common case: nothing to raise), with the
  deadline wheel and, in turns on the same facts, visiting every job;
* stream: 10,000 events/s folded and evaluated every 500 ms, as the service does: the share
  of one core, ticks included;
* memory: bytes per job held by the facts (tracemalloc), with one success each;
* deadline → alert (with `--service`): a real broker and watchdog process, jobs that never
  fire; for each, the time from its deadline (createdAt + expectedMaxInterval) to the Kafka
  timestamp of its `opened` transition, p50/p99/max.

Figures, never pass/fail. Run: `.venv/bin/python bench/bench_watchdog.py [--jobs N]
[--events N] [--service]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Report, bench_broker, percentile, stop_process, track  # noqa: E402
from tickwheel.core.identity import execution_id  # noqa: E402
from tickwheel.core.watchdog import Observed, Thresholds, WatchdogState, evaluate  # noqa: E402

T0 = 1_800_000_000_000
MINUTE = 60_000
# A few thousand distinct schedules, as a large installation has (minute, hour step, weekday).
CRONS = [f"{m} {h}-23/4 * * {d}" for m in range(60) for h in range(4) for d in range(7)] + [
    f"*/{n} * * * *" for n in (1, 2, 5, 10, 15, 30)
]


def definition(n: int) -> Observed:
    job_id = f"job-{n:07d}"
    record = {
        "jobId": job_id, "version": 1, "type": "noop", "payload": "{}",
        "cron": CRONS[n % len(CRONS)], "timezone": "UTC", "priority": "normal",
        "maxAttempts": 3, "expectedMaxInterval": None, "jitter": None, "tenantId": f"t{n % 50}",
        "enabled": True, "createdAt": T0 - 86_400_000, "updatedAt": T0 - 86_400_000,
        "runAt": None, "dstPolicy": None,
    }  # fmt: skip
    return Observed("definition", job_id, record, partition=n % 6)


def slot_events(n: int, slot: int) -> list[Observed]:
    job_id = f"job-{n:07d}"
    execution = execution_id(job_id, 1, slot)
    base = {"job_id": job_id, "job_type": "noop", "tenant_id": f"t{n % 50}",
            "execution_id": execution, "attempt": 1, "scheduled_time": slot, "fire_time": slot}  # fmt: skip
    request = {**base, "job_version": 1, "priority": "normal", "requested_at": slot + 5,
               "trigger": "scheduled"}  # fmt: skip
    return [
        Observed("request", job_id, request, partition=n % 6),
        Observed("event", job_id, {**base, "event_id": f"{execution}:l", "event_time": slot + 20,
                                   "event_type": "leased", "worker_id": "w1"}),
        Observed("event", job_id, {**base, "event_id": f"{execution}:s", "event_time": slot + 300,
                                   "event_type": "succeeded", "worker_id": "w1"}),
    ]  # fmt: skip


def cpu() -> float:
    return time.process_time()


def bench_evaluator(report: Report, jobs: int, events: int) -> None:
    thresholds = Thresholds()
    gc.collect()
    tracemalloc.start()
    # The schedules compiled once each first (the core's caches, per schedule and shared with
    # the timer's code): what follows is what each job costs on top of them.
    cold = tracemalloc.get_traced_memory()[0]
    warm = WatchdogState()
    for n in range(len(CRONS)):
        warm.apply(definition(n))
    del warm
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    report.add(f"- the {len(CRONS):,} schedules compiled: {(before - cold) / 2**20:,.0f} MiB "
               "(the core's schedule caches, per schedule, not per job)")  # fmt: skip
    state = WatchdogState()
    started = cpu()
    for n in range(jobs):
        state.apply(definition(n))
    definitions_s = cpu() - started
    defined = tracemalloc.get_traced_memory()[0] - before
    # Each job's latest slot before the watermark succeeded: every job healthy.
    latest: dict[str, int] = {}  # per cron: jobs share schedules
    for n in range(jobs):
        cron = CRONS[n % len(CRONS)]
        if cron not in latest:
            spec = state.facts.jobs[f"job-{n:07d}"].spec
            assert spec is not None and spec.schedule is not None
            last = spec.schedule.prev_before(T0)
            assert last is not None
            latest[cron] = last
        for observed in slot_events(n, latest[cron]):
            state.apply(observed)
    evaluate(state, T0 - 1, thresholds)  # settles what an evaluation prunes
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    settled = sum(len(generation) for _, generation in state.facts.settled)
    report.add(f"- {jobs:,} definitions over {len(CRONS):,} schedules folded in "
               f"{definitions_s:.1f} s CPU ({jobs / definitions_s:,.0f}/s)")  # fmt: skip
    report.add(f"- memory held by the facts: {held / jobs:,.0f} B per job (tracemalloc, "
               "definition + last success + settled execution)")  # fmt: skip
    report.add(f"  - of which the definitions alone: {defined / jobs:,.0f} B per job "
               f"({len(state.facts.jobs.profiles()):,} distinct profiles shared); "
               f"{settled:,} settled executions still held (their attempt only, kept 1 h)"
               f"; {len(state.facts.executions):,} not settled")  # fmt: skip
    # Fold: events for the jobs' next slots, as the services write them.
    batch = [o for n in range(events // 3) for o in slot_events(n % jobs, T0 + (n % 600) * 100)]
    started = cpu()
    for observed in batch:
        state.apply(observed)
    fold_s = cpu() - started
    rate = len(batch) / fold_s
    report.add(f"- fold: {len(batch):,} events in {fold_s:.2f} s CPU = {rate:,.0f} events/s; "
               f"10,000 events/s would take {10_000 / rate:.1%} of one core")  # fmt: skip
    bench_ticks(report, state, thresholds, jobs)
    bench_stream(report, state, thresholds, len(batch))


def bench_ticks(report: Report, state: WatchdogState, thresholds: Thresholds, jobs: int) -> None:
    """One tick with the deadline wheel against one over every job (the full scan it
    replaced, `WatchdogState.wheel = None`), on the same facts, in turns in this process."""
    wheel = state.wheel
    best = {"wheel": float("inf"), "scan": float("inf")}
    mark = T0
    for _ in range(3):
        for which in ("wheel", "scan"):
            state.wheel = wheel if which == "wheel" else None
            mark += 1000
            started = cpu()
            transitions, _ = evaluate(state, mark, thresholds)
            best[which] = min(best[which], cpu() - started)
            assert not transitions, transitions[:3]  # healthy: nothing to raise
    state.wheel = wheel
    report.add(f"- evaluate (one tick, nothing to raise), best of 3 in turns on the same facts: "
               f"**{best['wheel'] * 1000:,.1f} ms CPU with the deadline wheel**, "
               f"{best['scan'] * 1000:,.0f} ms visiting every job "
               f"({best['scan'] / best['wheel']:,.0f}x; {jobs:,} jobs)")  # fmt: skip


def bench_stream(report: Report, state: WatchdogState, thresholds: Thresholds, jobs: int) -> None:
    """Ten seconds of 10,000 events/s: each 500 ms tick folds its 5,000 events, then
    evaluates. CPU per second of events, the ticks included (decoding not: the service's)."""
    ticks, per_tick = 20, 5_000
    start = T0 + 60_000
    batches = []
    for tick in range(ticks):
        slot = start + tick * 500 - 1_000
        batches.append([o for n in range(per_tick // 3)
                        for o in slot_events((tick * per_tick + n) % jobs, slot)])  # fmt: skip
    fold_s = eval_s = 0.0
    worst = 0.0
    for tick, batch in enumerate(batches):
        started = cpu()
        for observed in batch:
            state.apply(observed)
        folded = cpu()
        evaluate(state, start + tick * 500, thresholds)
        ended = cpu()
        fold_s += folded - started
        eval_s += ended - folded
        worst = max(worst, ended - folded)
    seconds = ticks / 2
    events = sum(len(b) for b in batches)
    report.add(f"- a stream of {events / seconds:,.0f} events/s for {seconds:.0f} s, a tick every "
               f"500 ms: {(fold_s + eval_s) / seconds:.1%} of one core "
               f"(fold {fold_s / seconds:.1%}, ticks {eval_s / seconds:.1%}; slowest tick "
               f"{worst * 1000:,.1f} ms)")  # fmt: skip


def bench_service(report: Report, jobs: int) -> None:
    """Jobs that never fire (no timer runs): each one's deadline → its alert's Kafka time."""
    from tickwheel.adapters.avro import decode, encode
    from tickwheel.adapters.kafka.admin import apply_topology
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.adapters.kafka.reader import read_to_end
    from tickwheel.sdk.jobs import validate_job
    from tickwheel.topology import topic_name

    with bench_broker() as broker:
        prefix = f"b{uuid.uuid4().hex[:6]}."
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap,
               "TICKWHEEL_TOPIC_PREFIX": prefix, "TICKWHEEL_WATCHDOG_TICK_MS": "500",
               "TICKWHEEL_WATCHDOG_LATENESS_S": "1"}  # fmt: skip
        os.environ.update({k: env[k] for k in ("KAFKA_BOOTSTRAP_SERVERS",
                                               "TICKWHEEL_TOPIC_PREFIX")})  # fmt: skip
        apply_topology(bootstrap=broker.bootstrap)
        logged = Path(tempfile.mkdtemp(prefix="tickwheel-bench-watchdog-")) / "watchdog.log"
        with logged.open("wb") as sink:
            watchdog = track(subprocess.Popen(
                [sys.executable, "-m", "tickwheel.services.watchdog"], env=env,
                stdout=sink, stderr=subprocess.STDOUT,
            ))  # fmt: skip
        # Its start-up is not the figure (deadlines are): wait until it has started, and
        # then one more tick, however long a loaded machine takes (bounded).
        waited = time.monotonic()
        while b"watchdog_started" not in logged.read_bytes():
            if watchdog.poll() is not None or time.monotonic() - waited > 180:
                raise SystemExit(f"the watchdog did not start; its log: {logged}")
            time.sleep(0.2)
        report.add(f"- the watchdog started in {time.monotonic() - waited:.1f} s")
        time.sleep(1)
        producer = EventProducer(broker.bootstrap)
        deadlines: dict[str, int] = {}
        now = int(time.time() * 1000)
        for n in range(jobs):
            spec: dict[str, Any] = {"jobId": f"late-{n}", "type": "noop", "cron": "* * * * * *",
                                    "expectedMaxInterval": f"{5 + n % 10}s", "jitter": "0s"}  # fmt: skip
            record = validate_job(spec, now + n)
            deadlines[spec["jobId"]] = record["createdAt"] + (5 + n % 10) * 1000
            producer.send(topic_name("jobs.definitions"), spec["jobId"],
                          encode("JobDefinition", record))  # fmt: skip
        producer.flush()
        time.sleep(25)
        stop_process(watchdog)
        delays = []
        for message in read_to_end(topic_name("alerts"), None, broker.bootstrap):
            alert = decode(message.value, "Alert")[1]
            if alert["transition"] == "opened" and alert["job_id"] in deadlines:
                delays.append(message.timestamp_ms - deadlines[alert["job_id"]])
        report.add(f"- deadline → opened alert ({len(delays)}/{jobs} jobs, tick 500 ms, "
                   f"lateness 1 s): p50 {percentile(delays, 0.5):.0f} ms, "
                   f"p99 {percentile(delays, 0.99):.0f} ms, max {max(delays):.0f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--service", action="store_true", help="also the real-broker latency")
    parser.add_argument("--service-jobs", type=int, default=200)
    parser.add_argument("--service-only", action="store_true", help="skip the evaluator part")
    args = parser.parse_args()
    scenario = "service" if args.service_only else f"{args.jobs // 1000}k"
    report = Report(f"Watchdog benchmark ({scenario})")
    load = os.getloadavg()
    report.add(f"Load average at start: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
               "(the machine is shared: CPU figures are pessimistic).")  # fmt: skip
    report.add("")
    if not args.service_only:
        report.add("## The evaluator (pure, one process, no broker)")
        report.add("")
        bench_evaluator(report, args.jobs, args.events)
    if args.service or args.service_only:
        report.add("")
        report.add("## Deadline → alert, real broker and watchdog process")
        report.add("")
        bench_service(report, args.service_jobs)
    load = os.getloadavg()
    report.add("")
    report.add(f"Load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.")
    # One report per scenario: a service-only run no longer overwrites the evaluator's
    # figures (bench/reports/watchdog.md is the summary that cites these).
    report.write(f"watchdog-{scenario}.md")


if __name__ == "__main__":
    main()

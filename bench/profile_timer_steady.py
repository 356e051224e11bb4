"""The timer's CPU per execution in a steady pipeline, by stage, in one process without a broker.

The steady benchmark's jobs (`bench_pipeline.steady`: N jobs each every second, jitter 999 ms,
coalesce) restored on six partitions, then the service loop's turn, as `TimerService.step` runs
it: the worker events of the previous turn's requests (leased, succeeded: encoded as the worker
encodes them, outside the measure, and handed over as consumed messages) read by the service's
`Intake.apply` (decoded and applied to their partition), then every partition ticked, its due
states built, its transaction sent and committed to a producer that only counts
(`profile_timer.CountingProducer`). The clock moves by `--turn-ms` a turn (250 ms: a turn of
the loaded machine), whatever the CPU took, so that two revisions do the same work turn for
turn.

    python bench/profile_timer_steady.py --jobs 10000 --seconds 20
    python bench/profile_timer_steady.py --profile          # cProfile of the whole run
    python bench/profile_timer_steady.py --ab REV --rounds 4
        # that revision's package (A) and this one's (B) in this one process, interleaved
        # (bench/_revisions.py; REV a git revision or a tree on disk, e.g. /tmp/old/src)

Stages, CPU µs per execution: inputs (the events decoded and applied), fire (the tick), states
(which states are due, and building them), encode requests / encode states (inside the send),
send (the rest of it), commit (the commit and its bookkeeping).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import profile_timer
from bench._revisions import bench_module_over
from bench.profile_timer import PARTITIONS, CountingProducer
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.memory import MemoryMessage
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.core.timer.request_log import RequestLog
from tickwheel.events import execution_event
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer import writer as writer_module
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.intake import Intake
from tickwheel.services.timer.metrics import TimerMetrics
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics
from tickwheel.services.timer.settings import TimerSettings

STAGES = ("inputs", "fire", "states", "encode requests", "encode states", "send",
          "commit")  # fmt: skip


def restored(jobs: int, now_ms: int, settings: TimerSettings) -> dict[int, PartitionRuntime]:
    by_partition: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i in range(jobs):
        spec = {"jobId": f"s-{i}", "type": "noop", "cron": "* * * * * *", "jitter": "999ms",
                "misfirePolicy": "coalesce"}  # fmt: skip
        # Created just before: a steady state from the first turn. (Created a minute before,
        # every job owed the minute's slots within the misfire grace, and the run measured
        # that backlog's catch-up: 40,000 fired a second of the 10,000.)
        record = validate_job(spec, now_ms - 1_000)
        by_partition[partition_for(record["jobId"], PARTITIONS)].append(record)
    runtimes = {}
    for partition in range(PARTITIONS):
        timer = settings.partition_timer(partition, now_ms, random.Random(0))
        for record in by_partition[partition]:
            timer.load_definition(record["jobId"], record)
        timer.finish_restore(now_ms)
        runtimes[partition] = PartitionRuntime(
            partition, timer, CountingProducer(), 0, RequestLog(0, {}, now_ms=now_ms)
        )  # type: ignore[arg-type]
    return runtimes


def worker_events(requests: list[dict[str, Any]], now_ms: int, topic: str) -> list[MemoryMessage]:
    """What one worker sends back for `requests`: leased, then succeeded, per execution."""
    records = []
    for request in requests:
        partition = partition_for(request["job_id"], PARTITIONS)
        for kind, at in (("leased", now_ms), ("succeeded", now_ms + 5)):
            event = execution_event(
                request, kind, event_id=f"{kind}:{request['execution_id']}:1:w:x",
                event_time_ms=at, worker_id="worker-0",
                lease_deadline_ms=at + 30_000 if kind == "leased" else None,
            )  # fmt: skip
            raw = encode("ExecutionEvent", event)
            key = request["job_id"].encode()
            records.append(MemoryMessage(topic, partition, len(records), key, raw, None, at))
    return records


class Stages:
    def __init__(self) -> None:
        self.cpu = dict.fromkeys(STAGES, 0.0)

    def timed(self, stage: str, function: Any) -> Any:
        cpu, clock = self.cpu, time.process_time

        def run(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return function(*args, **kwargs)
            finally:
                cpu[stage] += clock() - started

        return run


def run(jobs: int, seconds: int, stages: Stages, turn_ms: int = 250) -> tuple[int, int, float]:
    """Returns (executions fired, turns, simulated seconds)."""
    settings = TimerSettings(instance="profile")
    now = 1_800_000_000_000
    runtimes = restored(jobs, now, settings)
    topics = TimerTopics()
    gate = RecordGate(PARTITIONS, settings.max_payload_bytes, lambda: now)
    writer = writer_module.TransactionWriter(topics, TimerMetrics(), lambda: now)
    # The encoders the writer calls, timed where it calls them.
    writer_module.encode_request = stages.timed("encode requests", writer_module.encode_request)  # type: ignore[attr-defined]
    writer_module.encode_timer_state = stages.timed(
        "encode states", writer_module.encode_timer_state
    )  # type: ignore[attr-defined]
    cpu, clock = stages.cpu, time.process_time
    # The service's reader of a turn's inputs (its consumers and command inbox unused here).
    intake = Intake(None, None, runtimes, gate, None, topics, lambda: now)  # type: ignore[arg-type]
    inputs: list[MemoryMessage] = []
    fired = turns = 0
    end = now + seconds * 1000
    while now < end and turns < 1_000_000:
        turns += 1
        started = clock()
        intake.apply(inputs)  # type: ignore[arg-type]
        cpu["inputs"] += clock() - started
        requests: list[dict[str, Any]] = []
        sent = []
        for runtime in runtimes.values():
            emission, runtime.pending_emission = (
                runtime.pending_emission,
                type(runtime.pending_emission)(),
            )
            started = clock()
            emission.extend(runtime.timer.tick(now))
            cpu["fire"] += clock() - started
            started = clock()
            profile_timer.add_states(settings, runtimes, runtime, emission, now)
            cpu["states"] += clock() - started
            requests.extend(emission.requests)
            started = clock()
            if emission or runtime.inputs_moved:
                sent.append(writer.send(runtime, emission))
            cpu["send"] += clock() - started
        started = clock()
        for transaction in sent:
            assert writer.finish(transaction) == "committed"
        cpu["commit"] += clock() - started
        fired += len(requests)
        inputs = worker_events(requests, now, topics.events)  # not measured: the worker's
        now += turn_ms
    cpu["send"] -= cpu["encode requests"] + cpu["encode states"]
    return fired, turns, seconds


def ab(other_src: str, jobs: int, seconds: int, rounds: int, turn_ms: int) -> None:
    import os

    other = bench_module_over(other_src, __file__, "profile_steady_a")
    revisions = {"A": other, "B": sys.modules[__name__]}
    print(f"A = {other_src}, B = this tree; {jobs:,} jobs; load average {os.getloadavg()}")
    results: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for round_ in range(rounds):
        for label in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
            module = revisions[label]
            stages = module.Stages()
            gc.collect()
            fired, _turns, _s = module.run(jobs, seconds, stages, turn_ms)
            per = {k: v / fired * 1e6 for k, v in stages.cpu.items()}
            results[label].append(per)
            print(f"round {round_ + 1} {label}: {sum(per.values()):.1f} µs per execution "
                  f"({fired:,} fired)")  # fmt: skip
    for stage in (*STAGES, "all"):
        line = []
        for label in ("A", "B"):
            values = [sum(r.values()) if stage == "all" else r[stage] for r in results[label]]
            line.append(f"{label} best {min(values):5.1f}")
        print(f"  {stage:16} " + "  ".join(line) + " µs per execution")
    print(f"load average {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--turn-ms", type=int, default=250)
    parser.add_argument("--ab", metavar="REV", default=None)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    gc.set_threshold(100_000, 50, 100)  # as the timer service sets it
    import os

    if args.ab:
        ab(args.ab, args.jobs, args.seconds, args.rounds, args.turn_ms)
        return

    stages = Stages()
    profiler = cProfile.Profile()
    if args.profile:
        profiler.enable()
    fired, turns, seconds = run(args.jobs, args.seconds, stages, args.turn_ms)
    profiler.disable()
    total = sum(stages.cpu.values())
    print(f"{args.jobs:,} jobs every second for {seconds} s simulated: {fired:,} fired "
          f"({fired / seconds:,.0f}/s of {args.jobs:,}) in {turns:,} turns; load {os.getloadavg()}")  # fmt: skip
    for stage in STAGES:
        print(f"  {stage:16} {stages.cpu[stage] / max(fired, 1) * 1e6:6.1f} µs per execution")
    print(f"  {'all':16} {total / max(fired, 1) * 1e6:6.1f} µs per execution")
    if args.profile:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()

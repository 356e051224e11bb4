"""Profile the timer's restore and burst-emission paths in one process, without a broker.

What runs is the service's own code — the record gate (decode, the core's definition check),
the partition scheduler (restore, tick), the request log and the transaction writer (every
record Avro-encoded) — with a producer that only counts what it is sent. Kafka's own cost is
what `bench/bench_limits.py` measures; this isolates what tickwheel does per job and per
occurrence, so two revisions of the code can be compared on a loaded machine:

    python bench/profile_timer.py --jobs 100000                  # times only
    python bench/profile_timer.py --jobs 100000 --profile burst  # cProfile of the burst
    PYTHONPATH=/tmp/old/src python bench/profile_timer.py ...    # another revision's code
    python bench/profile_timer.py --jobs 60000 --ab REV --rounds 3
        # A/B in this one process: that revision's package and this one's, loaded side by
        # side (bench/_revisions.py), their bursts interleaved, and what each sent compared
        # byte for byte

(`--ab` takes a git revision or a tree already on disk, e.g. `/tmp/old/src`; a revision whose
schemas differ needs TICKWHEEL_SCHEMAS_DIR pointing at its own `schemas/`.)

The jobs are the burst benchmark's (`bench_timer.burst`, jitter off): one daily cron, ten
tenants, all due in the same minute.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import pstats
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.reader import Record
from tickwheel.core.timer.request_log import RequestLog
from tickwheel.core.timer.writes import PartitionWrites
from tickwheel.sdk.jobs import validate_job
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.metrics import TimerMetrics
from tickwheel.services.timer.runtime import PartitionRuntime, TimerTopics
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.services.timer.writer import TransactionWriter

PARTITIONS = 6
DAY_MS = 86_400_000


class CountingProducer:
    """A transactional producer that keeps nothing: the writer's calls, counted, and what they
    sent folded into `digest` (topic, key, value, partition, in order), so that two revisions'
    output can be compared byte for byte."""

    digest = hashlib.sha1(usedforsecurity=False)  # shared by the partitions of one run

    def __init__(self) -> None:
        self.sent = 0
        self.transactions = 0

    def begin(self) -> None:
        pass

    def send(
        self, topic: str, key: str | None, value: bytes | None, partition: int = -1,
        *_args: Any, **_kwargs: Any,
    ) -> None:  # fmt: skip
        self.sent += 1
        update = self.digest.update
        update(f"{topic}\0{key}\0{partition}\0".encode())
        update(value or b"")

    def commit(self) -> None:
        self.transactions += 1

    def abort(self) -> None:
        pass

    def flush(self, *_args: Any) -> None:
        pass


ZONES = ["UTC", "Europe/London", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]


def restore_spec(i: int) -> dict[str, Any]:
    """The restore benchmark's job `i` (`bench_timer.restore`: 3,000 shared schedules)."""
    return {"jobId": f"r-{i:07d}", "type": "noop", "cron": f"{i % 600 % 60} {i % 600 // 60} * * *",
            "timezone": ZONES[i // 600 % len(ZONES)], "payload": {"n": i}}  # fmt: skip


def burst_definitions(
    jobs: int, now_ms: int, shape: str = "burst"
) -> tuple[int, dict[int, list[Record]]]:
    """The burst (or restore) benchmark's jobs, encoded and placed on their partitions as
    Kafka would. Created a minute before `now_ms`, as a restore finds them."""
    due_ms = (now_ms // 60_000 + 2) * 60_000
    minute, hour = (due_ms // 60_000) % 60, (due_ms // 3_600_000) % 24
    per_partition: dict[int, list[Record]] = defaultdict(list)
    for i in range(jobs):
        spec = {"jobId": f"burst-{i}", "type": "noop", "cron": f"{minute} {hour} * * *",
                "tenantId": f"tenant-{i % 10}", "jitter": "0s"}  # fmt: skip
        record = validate_job(restore_spec(i) if shape == "restore" else spec, now_ms - 120_000)
        key = record["jobId"]
        partition = partition_for(key, PARTITIONS)
        raw = encode("JobDefinition", record)
        offset = len(per_partition[partition])
        per_partition[partition].append(
            Record("jobs.definitions", partition, offset, key, raw, 0, (), True)
        )
    return due_ms, per_partition


def restore(
    settings: TimerSettings, gate: RecordGate, records: dict[int, list[Record]], now_ms: int
) -> dict[int, PartitionRuntime]:
    """What `PartitionRestorer` does with a definitions partition (no states, no requests)."""
    runtimes = {}
    for partition, partition_records in sorted(records.items()):
        timer = settings.partition_timer(partition, now_ms, random.Random(0))
        rejects: list[dict[str, Any]] = []
        for record in partition_records:
            definition = gate.decode(record, "JobDefinition", rejects)
            assert definition is not None and record.key is not None
            gate.check_definition(record.key, definition, partition)
            timer.load_definition(record.key, definition)
        timer.finish_restore(now_ms)  # its catch-up is the first transaction's: not timed here
        assert not rejects, rejects[:1]
        log = RequestLog(0, {}, now_ms=now_ms)
        runtimes[partition] = PartitionRuntime(
            partition, timer, CountingProducer(), len(partition_records), log
        )  # type: ignore[arg-type]
    return runtimes


def add_states(
    settings: TimerSettings, runtimes: dict[int, PartitionRuntime], runtime: PartitionRuntime,
    emission: PartitionWrites, now: int,
) -> None:  # fmt: skip
    """What `_tick_all` adds to a tick's writes: the unsaved states due, the fired ones
    refreshed (the way of the revision loaded: one from before decision 0184 has no
    `add_states` and writes a quiet tick's states whatever the other partitions do)."""
    if hasattr(runtime, "add_states"):
        others = any(other.bursting for other in runtimes.values() if other is not runtime)
        runtime.add_states(
            emission, max_batch=settings.max_batch, lag_ms=settings.state_lag_ms, now_ms=now,
            burst_elsewhere=others,
        )  # fmt: skip
        return
    due = runtime.log.states_due(
        fired=len(emission.requests), backlog=runtime.timer.backlog,
        max_batch=settings.max_batch, lag_ms=settings.state_lag_ms, now_ms=now,
    )  # fmt: skip
    if due:
        emission.extend(runtime.timer.snapshot(due, now))
    runtime.timer.refresh_fired_states(emission, now)


def burst(
    settings: TimerSettings, runtimes: dict[int, PartitionRuntime], due_ms: int, jobs: int
) -> tuple[int, int]:
    """The service loop's `_tick_all` from the due instant until every job has fired; the
    clock moves one tick per loop. Returns (requests emitted, loops)."""
    now = due_ms
    writer = TransactionWriter(TimerTopics(), TimerMetrics(), lambda: now)
    emitted = loops = 0
    while emitted < jobs and loops < 100_000:
        loops += 1
        for runtime in runtimes.values():
            emission: PartitionWrites = runtime.timer.tick(now)
            add_states(settings, runtimes, runtime, emission, now)
            emitted += len(emission.requests)
            if emission:
                assert writer.commit(runtime, emission) == "committed"
        now += settings.tick_ms
    return emitted, loops


def resident_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_burst(module: ModuleType, jobs: int, now_ms: int) -> tuple[float, str]:
    """One restore and burst of `module`'s revision: (CPU µs per occurrence, output digest)."""
    settings = module.TimerSettings(instance="profile")
    gate = module.RecordGate(module.PARTITIONS, settings.max_payload_bytes, lambda: now_ms)
    due_ms, records = module.burst_definitions(jobs, now_ms)
    runtimes = module.restore(settings, gate, records, now_ms)
    del records
    module.CountingProducer.digest = hashlib.sha1(usedforsecurity=False)
    gc.collect()
    gc.freeze()
    started = time.process_time()
    emitted, _loops = module.burst(settings, runtimes, due_ms, jobs)
    burst_s = time.process_time() - started
    gc.unfreeze()
    assert emitted == jobs, (emitted, jobs)
    return burst_s / emitted * 1e6, module.CountingProducer.digest.hexdigest()


def ab(other_src: str, jobs: int, rounds: int) -> None:
    """Bursts of another revision (A) and this one (B) interleaved in this process."""
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench._revisions import bench_module_over

    other = bench_module_over(other_src, __file__, "profile_timer_a")
    revisions = {"A": other, "B": sys.modules[__name__]}
    now_ms = 1_800_000_000_000 + 30_000  # both revisions see the same instants
    print(f"A = {other_src}, B = this tree; {jobs:,} jobs; load average {os.getloadavg()}")
    results: dict[str, list[float]] = {"A": [], "B": []}
    digests: dict[str, set[str]] = {"A": set(), "B": set()}
    for round_ in range(rounds):
        for label in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
            cpu_us, digest = one_burst(revisions[label], jobs, now_ms)
            results[label].append(cpu_us)
            digests[label].add(digest)
            print(f"round {round_ + 1} {label}: {cpu_us:.1f} µs CPU per occurrence")
    for label, values in results.items():
        print(f"{label}: " + " / ".join(f"{v:.1f}" for v in values) + " µs; best "
              f"{min(values):.1f}")  # fmt: skip
    same = digests["A"] == digests["B"] and len(digests["A"]) == 1
    print(f"output identical across revisions and rounds: {same} ({sorted(digests['B'])[0]})")
    print(f"load average {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--profile", choices=["restore", "burst"], default=None)
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument("--shape", choices=["burst", "restore"], default="burst",
                        help="whose jobs: the burst benchmark's, or the restore's (no burst)")  # fmt: skip
    parser.add_argument(
        "--ab",
        metavar="REV",
        default=None,
        help="A/B against the tickwheel package of a git revision (or a tree), in this process",
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    gc.set_threshold(100_000, 50, 100)  # as the timer service sets it
    if args.ab:
        ab(args.ab, args.jobs, args.rounds)
        return
    now_ms = int(time.time() * 1000)  # the real service's clock is real too
    settings = TimerSettings(instance="profile")
    gate = RecordGate(PARTITIONS, settings.max_payload_bytes, lambda: now_ms)
    due_ms, records = burst_definitions(args.jobs, now_ms, args.shape)
    gc.collect()
    rss_before = resident_mib()

    profiler = cProfile.Profile()
    started = time.process_time()
    if args.profile == "restore":
        profiler.enable()
    runtimes = restore(settings, gate, records, now_ms)
    profiler.disable()
    restore_s = time.process_time() - started
    del records
    gc.collect()
    gc.freeze()
    print(
        f"restore: {args.jobs} jobs in {restore_s:.2f} s CPU ({restore_s / args.jobs * 1e6:.1f} "
        f"µs/job), {resident_mib() - rss_before:.0f} MiB more resident"
    )
    if args.shape == "restore":
        due_ms = args.jobs = 0  # these jobs are not due: nothing to burst

    started = time.process_time()
    if args.profile == "burst":
        profiler.enable()
    emitted, loops = burst(settings, runtimes, due_ms, args.jobs)
    profiler.disable()
    burst_s = time.process_time() - started
    print(
        f"burst: {emitted} requests in {burst_s:.2f} s CPU ({emitted / max(burst_s, 1e-9):,.0f}/s, "
        f"{burst_s / max(emitted, 1) * 1e6:.1f} µs each, {loops} loops)"
    )
    if args.profile:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

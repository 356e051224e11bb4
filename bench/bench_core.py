"""Benchmark of the scheduling core: horizon materialisation and the timing wheel.

Prints, and writes to bench/reports/core.md:

* the time to materialise the next hour of occurrences for 1,000,000 jobs spread over a
  few thousand distinct (cron, zone) pairs — per distinct schedule, then per job with
  jitter into flat arrays, ready for the wheel;
* the timing wheel's insert, cancel and advance rates;
* resident bytes per wheel entry at 1,000,000 entries (tracemalloc and RSS delta).

Figures, never pass/fail. Run: `.venv/bin/python bench/bench_core.py [--jobs N]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
import tracemalloc
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tickwheel.core.calendars import make_calendar, parse_date
from tickwheel.core.horizon import materialize_window
from tickwheel.core.jitter import default_jitter_window_ms, jitter_offset_from_seed, jitter_seed
from tickwheel.core.schedule import CompiledSchedule, compile_schedule, parse_schedule
from tickwheel.core.wheel import TimingWheel

T = TypeVar("T")
NOW_MS = 1_800_000_000_000 + 17 * 60_000 + 1_234  # a mid-hour instant, 2027-01-15
HOUR_MS = 3_600_000
REPORT = Path(__file__).parent / "reports" / "core.md"
ZONES = [
    "UTC", "Europe/London", "Europe/Berlin", "Europe/Paris", "Europe/Madrid", "Europe/Rome",
    "Europe/Warsaw", "Europe/Kyiv", "Europe/Istanbul", "Europe/Moscow", "Africa/Cairo",
    "Africa/Lagos", "Africa/Johannesburg", "Africa/Casablanca", "Asia/Dubai", "Asia/Tehran",
    "Asia/Karachi", "Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Bangkok",
    "Asia/Jakarta", "Asia/Shanghai", "Asia/Singapore", "Asia/Tokyo", "Asia/Seoul",
    "Australia/Perth", "Australia/Adelaide", "Australia/Sydney", "Australia/Lord_Howe",
    "Pacific/Auckland", "Pacific/Chatham", "Pacific/Honolulu", "America/Anchorage",
    "America/Los_Angeles", "America/Denver", "America/Phoenix", "America/Chicago",
    "America/New_York", "America/Toronto", "America/Halifax", "America/St_Johns",
    "America/Mexico_City", "America/Bogota", "America/Lima", "America/Caracas",
    "America/Santiago", "America/Sao_Paulo", "America/Argentina/Buenos_Aires", "Atlantic/Azores",
]  # fmt: skip


def timed(label: str, fn: Callable[[], T], results: dict[str, float]) -> T:
    gc.collect()
    start = time.perf_counter()
    value = fn()
    results[label] = time.perf_counter() - start
    return value


def random_cron(rng: random.Random) -> str:
    kind = rng.random()
    m, h = rng.randrange(60), rng.randrange(24)
    if kind < 0.40:
        return f"{m} {h} * * *"  # daily
    if kind < 0.60:
        return f"{m} * * * *"  # hourly
    if kind < 0.75:
        return f"*/{rng.choice([5, 10, 15, 30])} * * * *"
    if kind < 0.83:
        return f"{m} {h} * * 1-5"  # weekdays
    if kind < 0.93:
        return f"{m} {h} * * {rng.randrange(7)}"  # weekly
    if kind < 0.98:
        return f"{m} {h} {rng.randint(1, 28)} * *"  # monthly
    return "* * * * *"


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bench_single_calls(
    schedules: list[CompiledSchedule],
    pairs: list[tuple[str, str]],
    rng: random.Random,
    say: Callable[[str], None],
) -> None:
    """One `next_after` call on a compiled schedule versus one croniter `get_next`."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from croniter import croniter

    picks = [rng.randrange(len(schedules)) for _ in range(2_000)]
    instants = [NOW_MS + rng.randrange(30 * 86_400_000) for _ in picks]
    start = time.perf_counter()
    for k, at in zip(picks, instants, strict=True):
        schedules[k].next_after(at)
    ours = (time.perf_counter() - start) / len(picks)
    iters = [
        croniter(
            pairs[k][0], datetime.fromtimestamp(at / 1000, UTC).astimezone(ZoneInfo(pairs[k][1]))
        )
        for k, at in zip(picks, instants, strict=True)
    ]
    start = time.perf_counter()
    for it in iters:
        it.get_next(float)
    theirs = (time.perf_counter() - start) / len(iters)
    say("## One next-occurrence call (2,000 random schedules and instants)")
    say(
        f"- compiled `next_after`: {ours * 1e6:.1f} µs; croniter `get_next`: {theirs * 1e6:.1f} µs\n"
    )


# Kinds beside plain cron (issue 15: aim within 2x of plain cron).
KIND_SCHEDULES = {
    "plain cron `0 18 * * 1-5`": dict(cron="0 18 * * 1-5", timezone="Europe/London"),
    "Quartz `0 18 LW * *`": dict(cron="0 18 LW * *", timezone="Europe/London"),
    "Quartz `0 9 * * MON#1`": dict(cron="0 9 * * MON#1", timezone="America/New_York"),
    "Quartz `0 0 L-2,15W * *`": dict(cron="0 0 L-2,15W * *", timezone="Asia/Kolkata"),
    "wrapping `0 22-2 * * FRI-MON`": dict(cron="0 22-2 * * FRI-MON", timezone="Europe/Paris"),
    "interval `every 90m`": dict(every="90m"),
    "bounded cron (endAt, maxRuns)": dict(
        cron="0 18 * * 1-5",
        timezone="Europe/London",
        start_at="2026-01-01T00:00:00Z",
        end_at="2040-01-01T00:00:00Z",
        max_runs=5000,
    ),
    "several specs (cron + interval)": dict(
        timezone="Europe/London", schedules=[{"cron": "0 18 * * 1-5"}, {"every": "6h"}]
    ),
    "exclusions (dates + a cron)": dict(
        cron="0 18 * * 1-5", timezone="Europe/London",
        exclude=["2027-01-15", "2027-01-29", "0 18 * * FRI"],
    ),
    "calendar skip `0 18 * * *` (uk)": dict(
        cron="0 18 * * *", timezone="Europe/London", calendar="uk", business_days="skip"
    ),
    "calendar next `0 18 * * *` (uk)": dict(
        cron="0 18 * * *", timezone="Europe/London", calendar="uk", business_days="next"
    ),
    "last business day `0 18 L * *` (uk)": dict(
        cron="0 18 L * *", timezone="Europe/London", calendar="uk", business_days="previous"
    ),
}  # fmt: skip
# England's bank holidays 2026-2028, plus two in the benchmark's month so its moves are hit.
UK_HOLIDAYS = [
    "2026-01-01", "2026-04-03", "2026-04-06", "2026-05-04", "2026-05-25", "2026-08-31",
    "2026-12-25", "2026-12-28", "2027-01-01", "2027-01-15", "2027-01-29", "2027-03-26",
    "2027-03-29", "2027-05-03", "2027-05-31", "2027-08-30", "2027-12-27", "2027-12-28",
    "2028-01-03", "2028-04-14", "2028-04-17", "2028-05-01", "2028-05-29", "2028-08-28",
    "2028-12-25", "2028-12-26",
]  # fmt: skip


def bench_kinds(rng: random.Random, say: Callable[[str], None]) -> None:
    """One `next_after` per schedule kind, at random instants over a month; calendar kinds
    with England's bank holidays (two of them, and both month-ends on Sundays, in that month).

    The machine is shared: each kind's figure is the sum, over 20 chunks of 250 instants, of
    each chunk's best of 12 passes, and the passes of all kinds are interleaved chunk by chunk,
    so a busy moment costs one chunk one pass, never one kind a whole figure."""
    say("## One next-occurrence call per schedule kind (5,000 random instants each)")
    calendars = {"uk": make_calendar("uk", [parse_date(d, "uk") for d in UK_HOLIDAYS])}
    kinds = []
    for label, kwargs in KIND_SCHEDULES.items():
        compiled = compile_schedule(parse_schedule(**kwargs), calendars)  # type: ignore[arg-type]
        instants = [NOW_MS + rng.randrange(30 * 86_400_000) for _ in range(5_000)]
        compiled.next_after(instants[0])  # warm the per-year caches, as a running timer has
        kinds.append((label, compiled, instants))
    chunk = 250
    fastest = {label: [float("inf")] * (5_000 // chunk) for label, _, _ in kinds}
    for _ in range(12):
        for i in range(5_000 // chunk):
            for label, compiled, instants in kinds:
                part = instants[i * chunk : (i + 1) * chunk]
                start = time.perf_counter()
                for at in part:
                    compiled.next_after(at)
                fastest[label][i] = min(fastest[label][i], time.perf_counter() - start)
    best = {label: sum(times) / 5_000 for label, times in fastest.items()}
    base = best[kinds[0][0]]
    for label, cost in best.items():
        say(f"- {label}: {cost * 1e6:.1f} µs ({cost / base:.2f}x plain cron)")
    say("")


def bench_wheel(fires: array[int], t: dict[str, float], say: Callable[[str], None]) -> None:
    """Insert the hour's occurrences, cancel 2 % of them, advance through the hour."""
    n_occ = len(fires)
    wheel = TimingWheel(10, NOW_MS)
    insert = wheel.insert

    def insert_all() -> list[int]:
        return [insert(f, e) for f, e in zip(fires, range(n_occ), strict=True)]

    handles = timed("insert", insert_all, t)
    cancel = wheel.cancel
    victims = handles[::50]
    timed("cancel", lambda: [cancel(h) for h in victims], t)

    def advance_all() -> int:
        fired, now = 0, NOW_MS
        while now < NOW_MS + HOUR_MS + 60_000:
            now += 100
            fired += len(wheel.advance(now))
        return fired

    fired = timed("advance", advance_all, t)
    assert fired == n_occ - len(victims) and len(wheel) == 0
    ops = n_occ + len(victims) + fired
    say("## Timing wheel (tick 10 ms, 65,536 slots)")
    say(f"- insert: {n_occ:,} in {t['insert']:.3f} s = {n_occ / t['insert']:,.0f} ops/s")
    say(f"- cancel: {len(victims):,} in {t['cancel']:.3f} s = "
        f"{len(victims) / t['cancel']:,.0f} ops/s")  # fmt: skip
    say(f"- advance through the hour in 100 ms steps ({(HOUR_MS + 60_000) // 100:,} calls): "
        f"{fired:,} fired in {t['advance']:.3f} s = {fired / t['advance']:,.0f} entries/s")  # fmt: skip
    total = t["insert"] + t["cancel"] + t["advance"]
    say(f"- **all operations: {ops:,} in {total:.2f} s = {ops / total:,.0f} ops/s**")


def bench_memory(n: int, rng: random.Random, say: Callable[[str], None]) -> None:
    """Bytes per entry with n entries live: RSS delta, then tracemalloc on a second wheel."""
    offsets = array("q", (rng.randrange(HOUR_MS) for _ in range(n)))

    def fill() -> TimingWheel:
        wheel = TimingWheel(10, NOW_MS)
        for i in range(n):
            wheel.insert(NOW_MS + offsets[i], i)
        return wheel

    gc.collect()
    rss_before = rss_bytes()
    first = fill()
    rss_delta = rss_bytes() - rss_before
    assert len(first) == n
    del first
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    second = fill()
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    say(f"\n## Memory at {len(second):,} wheel entries")
    say(
        f"- traced allocations: {traced / n:.1f} bytes/entry (arrays incl. growth slack and "
        "the 65,536 slot heads)"
    )
    say(f"- RSS delta: {rss_delta / n:.1f} bytes/entry")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--distinct", type=int, default=3_000)
    parser.add_argument("--wheel-entries", type=int, default=1_000_000)
    opts = parser.parse_args()
    rng = random.Random(42)
    t: dict[str, float] = {}
    lines: list[str] = []

    def say(text: str) -> None:
        print(text)
        lines.append(text)

    # -- the population: N jobs over a few thousand distinct (cron, zone) pairs -------------
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < opts.distinct:
        pairs.add((random_cron(rng), rng.choice(ZONES)))
    pair_list = sorted(pairs)
    schedules: list[CompiledSchedule] = timed(
        "compile",
        lambda: [compile_schedule(parse_schedule(cron=c, timezone=z)) for c, z in pair_list],
        t,
    )
    job_schedule = array("i", (rng.randrange(len(schedules)) for _ in range(opts.jobs)))
    job_ids = [f"tenant-{i % 97}/job-{i}" for i in range(opts.jobs)]
    seeds = timed("seeds", lambda: [jitter_seed(j) for j in job_ids], t)
    windows = [default_jitter_window_ms(s.nominal_period_ms) for s in schedules]
    by_schedule: list[list[int]] = [[] for _ in schedules]
    for job, s in enumerate(job_schedule):
        by_schedule[s].append(job)

    # -- materialise the next hour ------------------------------------------------------------
    window = timed("window", lambda: materialize_window(schedules, NOW_MS, NOW_MS + HOUR_MS), t)

    def expand() -> tuple[array[int], array[int], array[int]]:
        slots, fires, jobs = array("q"), array("q"), array("q")
        for s, compiled in enumerate(schedules):
            occurrences = window[compiled]
            if not occurrences:
                continue
            members = by_schedule[s]
            width = windows[s]
            for slot in occurrences:
                jobs.extend(members)
                slots.extend([slot] * len(members))
                fires.extend(
                    [slot + jitter_offset_from_seed(seeds[j], slot, width) for j in members]
                )
        return slots, fires, jobs

    slots, fires, jobs = timed("expand", expand, t)
    n_occ = len(slots)
    distinct_slots = sum(len(v) for v in window.values())
    say("# tickwheel core benchmark\n")
    say(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores "
        f"(shared), single thread\n")  # fmt: skip
    say("## Materialising the next hour")
    say(f"- jobs: {opts.jobs:,} over {len(schedules):,} distinct (cron, zone) pairs "
        f"in {len(ZONES)} zones")  # fmt: skip
    say(f"- compile the distinct schedules (once, at restore): {t['compile']:.3f} s")
    say(f"- per-job jitter seeds (once per job, at load): {t['seeds']:.3f} s")
    say(f"- occurrences per distinct schedule for the hour: {t['window']:.3f} s "
        f"({distinct_slots:,} distinct slots)")  # fmt: skip
    say(f"- expand to every job with jitter, into flat arrays: {t['expand']:.3f} s "
        f"({n_occ:,} job occurrences, {n_occ / t['expand']:,.0f}/s)")  # fmt: skip
    say(f"- **next hour for {opts.jobs:,} jobs: {t['window'] + t['expand']:.2f} s**\n")

    bench_single_calls(schedules, pair_list, rng, say)
    bench_kinds(rng, say)
    bench_wheel(fires, t, say)
    del slots, fires, jobs
    bench_memory(opts.wheel_entries, rng, say)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    print(f"\nwrote {REPORT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

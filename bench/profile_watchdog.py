"""cProfile of one watchdog evaluation tick (every job healthy), a smaller job count.

Run: `.venv/bin/python bench/profile_watchdog.py [--jobs N] [--against REV]`; prints the top
costs. `--against REV`: the evaluator of git revision REV is loaded beside the working tree's
(as a package of its own: bench/_revisions.py) and both tick over the same jobs, in turns, in
this one process — an A/B on a shared machine, where runs apart in time are not comparable.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._revisions import modules_at  # noqa: E402
from bench.bench_watchdog import CRONS, T0, definition, slot_events  # noqa: E402
from tickwheel.core.watchdog import Thresholds, WatchdogState, evaluate  # noqa: E402


def healthy_state(jobs: int, package: ModuleType | None = None) -> WatchdogState:
    state = WatchdogState() if package is None else package.WatchdogState()
    for n in range(jobs):
        state.apply(definition(n))
    latest: dict[str, int] = {}
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
    (evaluate if package is None else package.evaluate)(state, T0 - 1, Thresholds())
    return state


def against(rev: str, jobs: int, rounds: int) -> None:
    (old,) = modules_at(rev, "tickwheel.core.watchdog")
    states = {"old": (healthy_state(jobs, old), old.evaluate, old.Thresholds()),
              "new": (healthy_state(jobs), evaluate, Thresholds())}  # fmt: skip
    best = {"old": float("inf"), "new": float("inf")}
    for tick in range(rounds):
        for which, (state, run, thresholds) in states.items():
            started = time.process_time()
            transitions, _ = run(state, T0 + (tick + 1) * 1000, thresholds)
            best[which] = min(best[which], time.process_time() - started)
            assert not transitions, (which, transitions[:3])
    print(
        f"tick, {jobs:,} jobs, best of {rounds} in turns: {rev} {best['old'] * 1000:.0f} ms, "
        f"working tree {best['new'] * 1000:.0f} ms CPU ({best['old'] / best['new']:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--against", help="a git revision to compare the tick with, A/B")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.against:
        against(args.against, args.jobs, args.rounds)
        return
    state = healthy_state(args.jobs)
    thresholds = Thresholds()
    ticks = []
    for tick in range(3):
        started = time.process_time()
        evaluate(state, T0 + (tick + 1) * 1000, thresholds)
        ticks.append(time.process_time() - started)
    print(f"tick, {args.jobs:,} jobs: {min(ticks) * 1000:.0f} ms CPU (best of 3)")
    profiler = cProfile.Profile()
    profiler.enable()
    evaluate(state, T0 + 10_000, thresholds)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

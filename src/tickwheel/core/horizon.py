"""Materialising a horizon window for many jobs at once.

Occurrences depend only on the compiled schedule, and compiled schedules are shared per
(expression, zone, policy), so a window is computed once per *distinct* schedule and
then handed to every job on it. A million jobs over a few thousand distinct schedules
cost a few thousand schedule computations; the per-job work is a lookup (and jitter).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from tickwheel.core.schedule import CompiledSchedule

J = TypeVar("J")


def materialize_window(
    schedules: Iterable[CompiledSchedule], start_ms: int, end_ms: int
) -> dict[CompiledSchedule, list[int]]:
    """Occurrences in (start_ms, end_ms] for each distinct schedule (duplicates computed once)."""
    window: dict[CompiledSchedule, list[int]] = {}
    for compiled in schedules:
        if compiled not in window:
            window[compiled] = compiled.occurrences(start_ms, end_ms)
    return window


def group_by_schedule(
    jobs: Iterable[tuple[J, CompiledSchedule]],
) -> dict[CompiledSchedule, list[J]]:
    """Group (job, compiled schedule) pairs by schedule, keeping job order."""
    groups: dict[CompiledSchedule, list[J]] = {}
    for job, compiled in jobs:
        groups.setdefault(compiled, []).append(job)
    return groups


def expand_window(
    groups: Mapping[CompiledSchedule, Sequence[J]], start_ms: int, end_ms: int
) -> Iterator[tuple[int, Sequence[J]]]:
    """Yield (scheduled_ms, jobs due then) per schedule and slot in (start_ms, end_ms].

    Order is by schedule, then slot — not global time order (a timing wheel sorts).
    """
    window = materialize_window(groups, start_ms, end_ms)
    for compiled, slots in window.items():
        jobs = groups[compiled]
        for slot in slots:
            yield slot, jobs

"""Materialising a horizon window for many jobs at once (what `bench/bench_core.py` measures).

Occurrences depend only on the compiled schedule, and compiled schedules are shared per
(expression, zone, policy), so a window is computed once per *distinct* schedule and
then handed to every job on it. A million jobs over a few thousand distinct schedules
cost a few thousand schedule computations; the per-job work is a lookup (and jitter).
"""

from __future__ import annotations

from collections.abc import Iterable

from tickwheel.core.schedule import CompiledSchedule


def materialize_window(
    schedules: Iterable[CompiledSchedule], start_ms: int, end_ms: int
) -> dict[CompiledSchedule, list[int]]:
    """Occurrences in (start_ms, end_ms] for each distinct schedule (duplicates computed once)."""
    window: dict[CompiledSchedule, list[int]] = {}
    for compiled in schedules:
        if compiled not in window:
            window[compiled] = compiled.occurrences(start_ms, end_ms)
    return window

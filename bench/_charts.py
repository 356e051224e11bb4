"""PNG charts beside the benchmark reports (matplotlib, headless). Each function writes one
file in bench/reports/ and returns its name, for the report's Markdown to link."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: benchmarks run in terminals and CI

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

REPORTS = Path(__file__).resolve().parent / "reports"


def _save(figure: Figure, name: str) -> str:
    REPORTS.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(REPORTS / name, dpi=110)
    plt.close(figure)
    return name


def histogram(
    series: dict[str, Sequence[float]], name: str, title: str, unit: str = "ms", bins: int = 50
) -> str:
    """One histogram per labelled series, overlaid, with p50/p99 in each label."""
    figure, axes = plt.subplots(figsize=(7, 3.6))
    for label, values in series.items():
        if not values:
            continue
        ordered = sorted(values)
        p50 = ordered[len(ordered) // 2]
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        axes.hist(ordered, bins=bins, alpha=0.6, label=f"{label} (p50 {p50:.0f}, p99 {p99:.0f})")
    axes.set_xlabel(unit)
    axes.set_ylabel("count")
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _save(figure, name)


def rate_over_time(
    series: dict[str, Sequence[float]], name: str, title: str, bucket_s: float = 0.25
) -> str:
    """Events per second over time, one line per labelled series of event times (seconds);
    time 0 is the earliest event of all series."""
    figure, axes = plt.subplots(figsize=(7, 3.6))
    starts = [min(times) for times in series.values() if times]
    origin = min(starts) if starts else 0.0
    for label, times in series.items():
        if not times:
            continue
        counts: dict[int, int] = {}
        for t in times:
            bucket = int((t - origin) / bucket_s)
            counts[bucket] = counts.get(bucket, 0) + 1
        last = max(counts)
        xs = [b * bucket_s for b in range(last + 1)]
        ys = [counts.get(b, 0) / bucket_s for b in range(last + 1)]
        axes.step(xs, ys, where="post", label=label)
    axes.set_xlabel("seconds")
    axes.set_ylabel("per second")
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _save(figure, name)


def points(
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    name: str,
    title: str,
    xlabel: str,
    ylabel: str,
) -> str:
    """Measured points joined by lines, one per labelled (xs, ys) series."""
    figure, axes = plt.subplots(figsize=(7, 3.6))
    for label, (xs, ys) in series.items():
        axes.plot(xs, ys, marker="o", label=label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(fontsize=8)
    return _save(figure, name)

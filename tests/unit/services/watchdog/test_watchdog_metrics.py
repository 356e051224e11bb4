"""The watchdog's Prometheus metrics are aggregates: the number of series does not grow with
the number of jobs, and the ages are the oldest per priority and overall."""

from __future__ import annotations

from prometheus_client import generate_latest

from tests.unit.core.watchdog.test_watchdog_golden import (
    QUICK,
    T0,
    S,
    definition,
    event,
    request,
    run,
)
from tickwheel.core.watchdog import WatchdogState
from tickwheel.core.watchdog.parents import ages
from tickwheel.services.watchdog.metrics import WatchdogMetrics


def scrape(metrics: WatchdogMetrics) -> list[str]:
    text = generate_latest(metrics.registry).decode()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def series_for(jobs: int) -> tuple[list[str], WatchdogState]:
    state = WatchdogState()
    log = [definition(f"j{n}") for n in range(jobs)]
    log += [request(f"r{n}", T0, T0 + n * S, priority="low") for n in range(jobs)]
    log += [event("d", T0, "dead_lettered", T0 + S)]
    run([(T0 + 70 * S, log)], QUICK, state)
    metrics = WatchdogMetrics()
    metrics.observe_open(state.open_incidents())
    metrics.observe_ages(*ages(state.facts, T0 + 70 * S))
    return scrape(metrics), state


def test_series_do_not_grow_with_jobs_and_name_no_job() -> None:
    few, _ = series_for(3)
    many, state = series_for(300)
    assert len(few) == len(many)
    assert not any("job_id=" in line or "subject=" in line for line in many)
    assert "tickwheel_watchdog_overdue_jobs 300.0" in many
    assert sum(1 for i in state.open_incidents() if i.kind == "job_overdue") == 300


def test_ages_are_the_oldest_per_priority_and_overall() -> None:
    lines, _ = series_for(3)
    assert 'tickwheel_watchdog_oldest_ready_age_seconds{priority="low"} 70.0' in lines
    assert 'tickwheel_watchdog_oldest_ready_age_seconds{priority="high"} 0.0' in lines
    assert "tickwheel_watchdog_oldest_dead_letter_age_seconds 69.0" in lines
    assert 'tickwheel_alerts_open{kind="no_live_worker"} 1.0' in lines
    assert 'tickwheel_alerts_suppressed{kind="oldest_ready_age"} 1.0' in lines

"""The timer's batch-fed fire-lag histogram, as Prometheus reads it."""

from __future__ import annotations

from prometheus_client import generate_latest

from tickwheel.services.timer.metrics import LAG_BUCKETS, TimerMetrics


def test_the_fire_lag_histogram_counts_each_value_in_its_le_bucket() -> None:
    metrics = TimerMetrics()
    metrics.fire_lag.observe_many([0.005, 0.0051, 0.3, 120.0])
    metrics.fire_lag.observe_many([])
    text = generate_latest(metrics.registry).decode()
    assert 'tickwheel_timer_fire_lag_seconds_bucket{le="0.005"} 1.0' in text  # le is inclusive
    assert 'tickwheel_timer_fire_lag_seconds_bucket{le="0.01"} 2.0' in text
    assert 'tickwheel_timer_fire_lag_seconds_bucket{le="0.5"} 3.0' in text
    assert f'tickwheel_timer_fire_lag_seconds_bucket{{le="{LAG_BUCKETS[-1]}"}} 3.0' in text
    assert 'tickwheel_timer_fire_lag_seconds_bucket{le="+Inf"} 4.0' in text
    assert "tickwheel_timer_fire_lag_seconds_count 4.0" in text
    assert "tickwheel_timer_fire_lag_seconds_sum 120.3101" in text


def test_values_observed_counted_fill_the_buckets_as_observed_one_by_one() -> None:
    one_by_one, counted = TimerMetrics(), TimerMetrics()
    values = {0.0: 3, 0.005: 1, 0.3: 2500, 61.0: 2}
    one_by_one.fire_lag.observe_many(v for v, n in values.items() for _ in range(n))
    counted.fire_lag.observe_counted(values)
    assert counted.fire_lag.counts == one_by_one.fire_lag.counts
    assert abs(counted.fire_lag.total - one_by_one.fire_lag.total) < 1e-6

"""The judge's figures (its log, every 10 s, and its `/metrics`): commands, transactions,
verdict latency."""

from __future__ import annotations

import contextlib
import logging

import pytest

from tests.unit.services.jobwriter.test_jobwriter import Cluster
from tickwheel.services.jobwriter.figures import JudgeFigures
from tickwheel.services.jobwriter.judge import Batch


def test_an_interval_logs_its_transactions_and_the_verdict_latency_then_starts_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    figures = JudgeFigures(log_every_s=10)
    figures.maybe_log(0.0)
    batch = Batch(outcomes={"created": 2, "exists": 1}, requested_at=[900, 950, 990], commands=3)
    figures.committed(batch, 0.040, now_ms=1000)
    figures.failed_with("fenced")
    with caplog.at_level(logging.INFO, logger="tickwheel.jobwriter"):
        figures.maybe_log(5.0)  # not due yet
        figures.maybe_log(10.0)
        figures.maybe_log(20.0)  # due, but nothing committed since: no line
    lines = [r for r in caplog.records if getattr(r, "action", "") == "jobwriter_figures"]
    assert len(lines) == 1
    line = lines[0].__dict__
    assert line["commands"] == 3 and line["transactions_in_interval"] == 1
    assert line["verdict_latency_ms_max"] == 100.0 and line["verdict_latency_ms_p50"] == 50.0
    assert line["transaction_ms_p50"] == 40.0
    assert line["judged_total"] == {"created": 2, "exists": 1}
    assert line["failed_transactions_total"] == {"fenced": 1}


def test_the_service_counts_what_its_transactions_committed() -> None:
    cluster = Cluster()
    service = cluster.judge()
    from tickwheel.sdk.job_commands import JobCommandWriter

    writer = JobCommandWriter(clients=cluster.clients, clock=cluster.clock, wait_s=0.01)
    try:
        for job_id in ("a", "b"):
            with contextlib.suppress(TimeoutError):  # judged below, on this thread
                writer.submit("create", job_id, cluster.definition(job_id))
        for _ in range(200):  # bounded
            service.step()
            if service.figures.judged["created"] == 2:
                break
        assert service.figures.judged["created"] == 2 and service.figures.transactions >= 1
    finally:
        service.close()
        writer.close()


def test_the_figures_are_served_as_prometheus_metrics() -> None:
    import urllib.request

    from tickwheel.stack.broker import free_port

    figures = JudgeFigures()
    batch = Batch(outcomes={"created": 2, "exists": 1}, requested_at=[900, 950, 990], commands=3)
    figures.committed(batch, 0.040, now_ms=1000)
    figures.failed_with("fenced")
    figures.metrics.partitions.set(6)
    port = free_port()
    figures.metrics.serve(port)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    assert 'tickwheel_jobwriter_commands_total{outcome="created"} 2.0' in text
    assert 'tickwheel_jobwriter_commands_total{outcome="exists"} 1.0' in text
    assert 'tickwheel_jobwriter_transactions_total{outcome="committed"} 1.0' in text
    assert 'tickwheel_jobwriter_transactions_total{outcome="fenced"} 1.0' in text
    assert "tickwheel_jobwriter_verdict_latency_seconds_count 3.0" in text
    assert 'tickwheel_jobwriter_verdict_latency_seconds_bucket{le="0.1"} 3.0' in text
    assert 'tickwheel_jobwriter_verdict_latency_seconds_bucket{le="0.025"} 1.0' in text
    assert 'tickwheel_jobwriter_verdict_latency_seconds_bucket{le="0.05"} 2.0' in text
    assert "tickwheel_jobwriter_transaction_seconds_count 1.0" in text
    assert "tickwheel_jobwriter_partitions 6.0" in text

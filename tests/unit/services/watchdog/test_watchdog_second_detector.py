"""The second detector never takes the embedded history store for itself: with no owner
answering it skips its round (said once) and leaves the directory alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.core.watchdog.test_watchdog_golden import QUICK, T0, S, definition
from tickwheel.core.watchdog import WatchdogState
from tickwheel.services.watchdog.second_detector import SecondDetector


def test_without_a_history_owner_the_round_is_skipped_and_the_store_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    history = tmp_path / "history"
    monkeypatch.setenv("TICKWHEEL_HISTORY_DIR", str(history))
    monkeypatch.delenv("CLICKHOUSE_URL", raising=False)
    state = WatchdogState()
    state.apply(definition("j"))
    detector = SecondDetector(every_ms=1000, lookback_ms=3600 * S, per_round=10)
    for second in range(5):
        assert detector.conditions(state, T0 + second * S, QUICK) == []
    assert not history.exists()  # not created, not opened, not owned
    said = [r for r in caplog.records if getattr(r, "action", "") == "audit_unreachable"]
    assert len(said) == 1


def test_an_audit_every_zero_is_off() -> None:
    opened: list[int] = []
    detector = SecondDetector(0, 3600 * S, 10, open_reader=lambda: opened.append(1))
    state = WatchdogState()
    state.apply(definition("j"))
    assert detector.conditions(state, T0 + 10_000 * S, QUICK) == [] and opened == []

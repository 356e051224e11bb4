"""Numbers from environment variables: a bad value is refused with one line naming the
variable and what it accepts, through every service's settings and the CLI's entry point."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable, Mapping

import pytest

from tickwheel.adapters.clickhouse._limits import MAX_ROWS_VAR, QueryLimits
from tickwheel.environment import env_int, env_ms, env_seconds
from tickwheel.errors import InvalidInput
from tickwheel.services.environment import from_env
from tickwheel.services.history.settings import MAX_BATCH_VAR, HistorySinkSettings
from tickwheel.services.orchestrator.settings import OrchestratorSettings
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.services.watchdog.settings import WatchdogSettings

VAR = "TICKWHEEL_TEST_NUMBER"


@pytest.mark.parametrize(("text", "expected"), [("", 7.0), ("2.5", 2.5), (" 30 ", 30.0)])
def test_seconds_read_or_default(
    monkeypatch: pytest.MonkeyPatch, text: str, expected: float
) -> None:
    monkeypatch.setenv(VAR, text)
    assert env_seconds(VAR, 7.0) == expected


@pytest.mark.parametrize("text", ["abc", "0", "-1", "nan", "inf", "5s"])
def test_seconds_above_zero_refuse_anything_else_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv(VAR, text)
    with pytest.raises(InvalidInput) as caught:
        env_seconds(VAR, 7.0)
    assert caught.value.field == VAR
    assert repr(text) in caught.value.message and "above 0" in caught.value.message


def test_zero_seconds_where_zero_means_something(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, "0")
    assert env_seconds(VAR, 7.0, zero_ok=True) == 0.0
    assert env_ms(VAR, 7.0) == 0
    monkeypatch.setenv(VAR, "-0.5")
    with pytest.raises(InvalidInput, match="0 or more"):
        env_ms(VAR, 7.0)


def test_milliseconds_from_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, "1.5")
    assert env_ms(VAR, 2.0) == 1500
    monkeypatch.delenv(VAR)
    assert env_ms(VAR, 2.0) == 2000


@pytest.mark.parametrize(("text", "minimum", "expected"), [("", 1, 9), ("12", 1, 12), ("0", 0, 0)])
def test_whole_numbers_read_or_default(
    monkeypatch: pytest.MonkeyPatch, text: str, minimum: int, expected: int
) -> None:
    monkeypatch.setenv(VAR, text)
    assert env_int(VAR, 9, minimum) == expected


@pytest.mark.parametrize("text", ["1.5", "ten", "0"])
def test_whole_numbers_refuse_fractions_words_and_too_small(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv(VAR, text)
    with pytest.raises(InvalidInput, match=f"{VAR}: '{text}' is not a whole number of at least 1"):
        env_int(VAR, 9)


def test_whole_numbers_come_from_the_given_mapping_not_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VAR, "7")
    assert env_int(VAR, 9, environ={VAR: "12"}) == 12
    assert env_int(VAR, 9, environ={}) == 9


@pytest.mark.parametrize(
    ("build", "variable"),
    [
        (lambda env: from_env(HistorySinkSettings, env), MAX_BATCH_VAR),
        (lambda env: QueryLimits.from_env(env), MAX_ROWS_VAR),
    ],
)
def test_settings_built_from_a_mapping_refuse_a_bad_number_in_one_line(
    build: Callable[[Mapping[str, str]], object], variable: str
) -> None:
    # The history sink and the query limits read a given mapping; a bad value there is
    # refused with the same line as every other service's variable.
    with pytest.raises(
        InvalidInput, match=f"^{variable}: '0' is not a whole number of at least 1$"
    ):
        build({variable: "0"})


@pytest.mark.parametrize(
    ("settings", "variable", "value"),
    [
        (TimerSettings, "TICKWHEEL_TIMER_TICK_MS", "fast"),
        (TimerSettings, "TICKWHEEL_TIMER_HORIZON_S", "0"),
        (TimerSettings, "TICKWHEEL_LEASE_SECONDS", "30s"),
        (WatchdogSettings, "TICKWHEEL_WATCHDOG_LATENESS_S", "two"),
        (WatchdogSettings, "TICKWHEEL_WATCHDOG_AUDIT_JOBS", "-3"),
        (WatchdogSettings, "TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_S", "0"),
        (OrchestratorSettings, "TICKWHEEL_ORCHESTRATOR_MAX_BATCH", "lots"),
    ],
)
def test_each_services_settings_name_the_bad_variable(
    monkeypatch: pytest.MonkeyPatch, settings: type, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidInput) as caught:
        from_env(settings)
    assert caught.value.field == variable


def test_services_take_their_defaults_when_nothing_is_set() -> None:
    timer = from_env(TimerSettings, {})
    assert (timer.tick_ms, timer.horizon_ms, timer.dispatch_timeout_ms) == (50, 3_600_000, 900_000)
    assert from_env(WatchdogSettings, {}).audit[0] == 300_000
    # The dataclass's own defaults are the declared ones: building one reads no variable.
    assert TimerSettings() == dataclasses.replace(timer, bootstrap=TimerSettings().bootstrap)


@pytest.mark.parametrize(
    ("variable", "argv"),
    [
        ("TICKWHEEL_WORKER_SHUTDOWN_GRACE_S", ["worker"]),
        ("TICKWHEEL_BROKER_PROBE_TIMEOUT_S", ["jobs", "list"]),
    ],
)
def test_the_cli_says_one_line_for_a_bad_variable(variable: str, argv: list[str]) -> None:
    # The worker's settings are read before anything starts; the broker probe reads its
    # timeout before it connects. Neither may end in a traceback.
    env = {"PATH": "/usr/bin:/bin", variable: "soon", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    done = subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", *argv],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"tickwheel: error: {variable}: 'soon' is not a number of seconds "
        + ("0 or more" if "GRACE" in variable else "above 0")
        + ", e.g. '30', '2.5'"
    ]


@pytest.mark.parametrize(
    ("service", "variable", "value"),
    [
        ("timer", "TICKWHEEL_TIMER_TICK_MS", "fast"),
        ("worker", "TICKWHEEL_WORKER_SHUTDOWN_GRACE_S", "soon"),
        ("watchdog", "TICKWHEEL_WATCHDOG_LATENESS_S", "two"),
        ("orchestrator", "TICKWHEEL_ORCHESTRATOR_POLL_MS", "0"),
        ("jobwriter", "TICKWHEEL_JOBWRITER_MAX_BATCH", "lots"),
    ],
)
def test_a_service_started_with_a_bad_variable_says_one_line_and_exits_2(
    service: str, variable: str, value: str
) -> None:
    env = {"PATH": "/usr/bin:/bin", variable: value, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    done = subprocess.run(
        [sys.executable, "-m", f"tickwheel.services.{service}"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tickwheel {service}: error: {variable}: "), (
        lines
    )
    assert repr(value) in lines[0]


IMPORT_PROBE = """
import importlib, os, pkgutil, sys
read = set()
class Recording(os._Environ):
    def __getitem__(self, key):
        read.add(key)
        return super().__getitem__(key)
os.environ.__class__ = Recording
for package in ("tickwheel.core", "tickwheel.adapters", "tickwheel.sdk"):
    module = importlib.import_module(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)
print(sorted(n for n in read if n.startswith(("TICKWHEEL_", "KAFKA_", "CLICKHOUSE_URL"))))
"""


def test_core_adapters_and_sdk_read_no_variable_at_import() -> None:
    # They take parameters; the environment is read at the entry points (decision 0215).
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_payload_limit_is_read_when_a_job_is_validated() -> None:
    from tickwheel.sdk.job_records import payload_limit

    assert payload_limit({}) == 64 * 1024
    assert payload_limit({"TICKWHEEL_MAX_PAYLOAD_BYTES": "1024"}) == 1024
    with pytest.raises(InvalidInput, match=r"^TICKWHEEL_MAX_PAYLOAD_BYTES: 'big'"):
        payload_limit({"TICKWHEEL_MAX_PAYLOAD_BYTES": "big"})

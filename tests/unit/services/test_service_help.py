"""Every service's `--help` names every environment variable it reads (issue 10 item 7), and
its settings are declared once: flags, `--help` and docs/deploy.md come from one declaration
(issue 32 item 6, decision 0215).

The oracle of the first test is independent of `tickwheel.services.environment` (which makes
the help from the settings): a plain text search of the service package's source for a
variable's name as a string.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SERVICES = Path(__file__).resolve().parents[3] / "src" / "tickwheel" / "services"
RUNNABLE = sorted(p.parent.name for p in SERVICES.glob("*/__main__.py"))
SPELLED = re.compile(r"(?:TICKWHEEL|KAFKA|CLICKHOUSE)_[A-Z0-9_]*[A-Z0-9]")
# A variable's name as a whole string literal in the source ("TICKWHEEL_TIMER_TICK_MS").
QUOTED = re.compile(r"""["']((?:TICKWHEEL|KAFKA|CLICKHOUSE)_[A-Z0-9_]*[A-Z0-9])["']""")


@pytest.mark.parametrize("service", RUNNABLE)
def test_help_names_every_variable_the_service_reads(service: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"tickwheel.services.{service}", "--help"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    source = "\n".join(p.read_text(encoding="utf-8") for p in (SERVICES / service).rglob("*.py"))
    spelled = set(QUOTED.findall(source)) | {"KAFKA_BOOTSTRAP_SERVERS", "TICKWHEEL_TOPIC_PREFIX"}
    missing = sorted(name for name in spelled if name not in result.stdout)
    assert not missing, f"python -m tickwheel.services.{service} --help omits {missing}"


def test_a_flag_wins_over_its_variable_and_is_refused_by_its_own_name() -> None:
    from tickwheel.errors import InvalidInput
    from tickwheel.services.environment import from_args, from_env, service_parser
    from tickwheel.services.watchdog.settings import WatchdogSettings

    parser = service_parser(WatchdogSettings, "tickwheel.services.watchdog")
    environ = {"TICKWHEEL_WATCHDOG_TICK_MS": "200", "TICKWHEEL_WATCHDOG_GRACE_S": "5"}
    given = parser.parse_args(["--tick-ms", "300", "--run-grace-s", "7"])
    settings = from_args(WatchdogSettings, given, environ)
    assert settings.tick_ms == 300  # the flag
    assert settings.thresholds.derived_grace_ms == 5_000  # the variable, in a group
    assert settings.thresholds.run_grace_ms == 7_000  # the flag, in a group
    assert from_env(WatchdogSettings, environ).tick_ms == 200
    with pytest.raises(InvalidInput, match=r"^--tick-ms: 'x' is not a whole number"):
        from_args(WatchdogSettings, parser.parse_args(["--tick-ms", "x"]), {})


def test_every_variable_is_declared_once_with_help() -> None:
    from tickwheel.services.environment import variables
    from tickwheel.services.variables import SERVICES

    for name, cls in SERVICES.items():
        declared = [v.env for _, v in variables(cls)]
        assert len(declared) == len(set(declared)), f"{name} declares a variable twice"
        assert all(SPELLED.fullmatch(env) for env in declared), name
        assert all(v.help for _, v in variables(cls)), f"{name}: a variable without help"

"""Every service's `--help` names every environment variable it reads (issue 10 item 7).

The oracle is independent of `tickwheel.services.environment` (which parses the code): a
plain text search of the service package's source for a variable's name as a string.
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


def test_the_list_has_defaults_and_only_real_names() -> None:
    from tickwheel.services.environment import environment_epilog, variables_read_by

    timer = variables_read_by("tickwheel.services.timer")
    assert timer["TICKWHEEL_TIMER_TICK_MS"] == "50"
    assert "TICKWHEEL_TIMER_GROUP" in timer  # a default computed at run time: listed bare
    watchdog = variables_read_by("tickwheel.services.watchdog")
    # A refusal that names a variable is not its default.
    assert "is not set" not in (watchdog.get("TICKWHEEL_WATCHDOG_WEBHOOK_SECRET") or "")
    assert "KAFKA_BOOTSTRAP_SERVERS" in environment_epilog("tickwheel.services.worker")
    assert all(SPELLED.fullmatch(name) for name in timer)

"""A verb imports what it uses (issue 10, item 7): `tickwheel schedule preview` is pure schedule
work, so it must load neither a Kafka nor a ClickHouse client, nor any service — checked by
the modules a fresh interpreter holds after it, not by timing it."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("confluent_kafka", "clickhouse_connect", "chdb", "fastapi", "fastavro")

PROBE = """
import json, sys
from tickwheel.cli import main
main(["schedule", "preview", "--cron", "0 2 * * *", "--timezone", "UTC", "--count", "1"])
print(json.dumps(sorted(sys.modules)))
"""


def test_schedule_preview_loads_no_client_and_no_service() -> None:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY
             or m.startswith(("tickwheel.services", "tickwheel.adapters"))]  # fmt: skip
    assert heavy == [], heavy
    assert "02:00" in run.stdout  # it did preview


def test_every_command_is_registered_by_the_module_named_for_it() -> None:
    """`main` registers only the command's own group: each name must be that group's."""
    import argparse
    import importlib

    from tickwheel.cli import COMMANDS, build_parser

    for name, module in COMMANDS.items():
        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        importlib.import_module(module).register(subparsers)
        assert name in subparsers.choices, (name, module)
    full = build_parser()
    assert full.parse_args(["schedule", "preview", "--cron", "0 2 * * *"]).command == "schedule"

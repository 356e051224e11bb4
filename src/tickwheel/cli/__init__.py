"""The `tickwheel` command line.

Each command group lives in a module of this package exposing `register(subparsers)`;
`main` wires them together. Every flag that has a `TICKWHEEL_*` variable names it in --help.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tickwheel.errors import TickwheelError

# (module, help) — order is the order in `tickwheel --help`.
COMMAND_GROUPS: list[str] = [
    "tickwheel.cli.stack",
    "tickwheel.cli.topology",
    "tickwheel.cli.jobs",
    "tickwheel.cli.schedule",
    "tickwheel.cli.history",
    "tickwheel.cli.worker",
    "tickwheel.cli.executions",
    "tickwheel.cli.alerts",
    "tickwheel.cli.demo",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tickwheel",
        description="tickwheel: a Kafka-native job scheduler and durable workflow engine.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_GROUPS:
        module = importlib.import_module(module_name)
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.handler(args)
    except TickwheelError as exc:
        print(f"tickwheel: error: {exc}", file=sys.stderr)
        # Nothing was wrong with the command itself: the cluster is not there (yet).
        return 1 if isinstance(exc, ConnectionError) else 2
    except KeyboardInterrupt:
        return 130
    return result


if __name__ == "__main__":
    sys.exit(main())

"""`tickwheel demo`: the local stack with example jobs and a live account (what `make run` runs)."""

from __future__ import annotations

import argparse
from typing import Any


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not above 0")
    return value


def register(subparsers: Any) -> None:
    """Add the `demo` command to the top-level parser's subparsers."""
    parser = subparsers.add_parser(
        "demo",
        help="start the local stack with example jobs and show what happens, live",
        description=(
            "Start the local stack (or use the running one), create four example jobs and "
            "print each firing, lease, retry, dead letter and outcome as it happens, with a "
            "summary of the history every 15 seconds. Ctrl-C stops it. The stack keeps its "
            "state under TICKWHEEL_HOME (default .tickwheel)."
        ),
    )
    parser.add_argument(
        "--duration", type=_seconds, default=None, help="stop after this many seconds"
    )
    parser.add_argument("--keep", action="store_true", help="leave the stack running afterwards")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from tickwheel.demo import run_demo

    return run_demo(args.duration, args.keep)

"""`tickwheel demo`: the local stack with example jobs and a live account (what `make run` runs)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo", help="start the local stack with example jobs and show what happens, live"
    )
    parser.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--keep", action="store_true", help="leave the stack running afterwards")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    from tickwheel.demo import run_demo

    return run_demo(args.duration, args.keep)

"""`tickwheel history ...` driven in this process, as `tickwheel.cli.main` runs a handler."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys

from tickwheel.cli import history as history_cli
from tickwheel.errors import TickwheelError


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`tickwheel history ...` through the real parser and main's error handling: the exit
    code, stdout and stderr."""
    parser = argparse.ArgumentParser(prog="tickwheel")
    history_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = int(args.handler(args))
        except TickwheelError as exc:  # what tickwheel.cli.main does with it
            print(f"tickwheel: error: {exc}", file=sys.stderr)
            code = 2
    return code, out.getvalue(), err.getvalue()

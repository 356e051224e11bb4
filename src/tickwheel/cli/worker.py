"""`tickwheel worker [--types ...] [--concurrency N] [--priority ...] [--module M ...]`."""

from __future__ import annotations

import argparse
from typing import Any

from tickwheel.services.worker.settings import add_worker_arguments


def register(subparsers: Any) -> None:
    """Add the `worker` command to the top-level parser's subparsers."""
    parser = subparsers.add_parser(
        "worker",
        help="run a worker pool in the foreground (built-in job types plus --module handlers)",
        description=(
            "Run a worker: one consumer and pool per priority (executions.high|normal|low), "
            "leases with heartbeats, outcomes on executions.events, cancellation from "
            "executions.control. At-least-once: see docs/job-authors.md. "
            "KAFKA_BOOTSTRAP_SERVERS names the cluster."
        ),
    )
    add_worker_arguments(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from tickwheel.services.worker.service import run_from_args

    return run_from_args(args)

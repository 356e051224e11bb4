"""`tickwheel stack up|down|status`: the local broker, the topology and the services."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tickwheel.stack import supervisor

_STATE = (
    "State and logs live under TICKWHEEL_HOME (default .tickwheel): the broker's data in "
    "kafka/, one log per process in logs/<name>.log."
)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return value


def _brokers(text: str) -> int:
    value = _count(text)
    if not 1 <= value <= 5:
        raise argparse.ArgumentTypeError(
            f"{value} is not accepted; 1 to 5 Kafka nodes (3 for a replicated cluster)"
        )
    return value


def _port(text: str) -> int:
    value = _count(text)
    if not 1 <= value <= 65534:  # the controller takes the next port
        raise argparse.ArgumentTypeError(f"{value} is not a port in 1-65534")
    return value


def register(subparsers: Any) -> None:
    """Add the `stack` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser("stack", help="run the local stack (Kafka + services)")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    up = verbs.add_parser(
        "up",
        help="start the broker, apply the topology, run the services",
        description=(
            "Start a Kafka broker (one node, or --brokers 3 for a replicated cluster), apply "
            "the topology and run the services under a "
            "supervisor that restarts any that crash. In the foreground until Ctrl-C, or "
            f"--detach. {_STATE} TICKWHEEL_KAFKA_HEAP sets the broker's heap (default 512m)."
        ),
    )
    up.add_argument("--detach", action="store_true", help="return once the stack is up")
    up.add_argument("--timers", type=_count, default=1, help="timer service instances (1)")
    up.add_argument("--workers", type=_count, default=1, help="worker pool instances (1)")
    up.add_argument("--no-history", action="store_true", help="do not run the history sink")
    up.add_argument("--no-watchdog", action="store_true", help="do not run the watchdog")
    up.add_argument(
        "--no-orchestrator", action="store_true", help="do not run the workflow orchestrator"
    )
    up.add_argument("--no-api", action="store_true", help="do not run the HTTP API")
    up.add_argument(
        "--api-port",
        type=_port,
        default=int(os.environ.get("TICKWHEEL_API_PORT", "8780")),
        help="the HTTP API's port on 127.0.0.1 (8780; env: TICKWHEEL_API_PORT)",
    )
    up.add_argument(
        "--kafka-port",
        type=_port,
        default=9092,
        help="local broker port (9092); the controller listens on the next one",
    )
    up.add_argument(
        "--brokers",
        type=_brokers,
        default=1,
        help="Kafka nodes (1): 3 runs a replicated cluster (each node broker and controller, "
        "3 copies of each partition, 2 in sync) on the ports from --kafka-port up",
    )
    up.add_argument(
        "--json", action="store_true", help="with --detach: print the status as JSON once up"
    )
    up.set_defaults(handler=_up, parser=up)

    down = verbs.add_parser("down", help="stop every process the stack started", description=_STATE)
    down.add_argument("--json", action="store_true", help="print the stopped pids as JSON")
    down.set_defaults(handler=_down)

    status = verbs.add_parser(
        "status",
        help="what runs now: role, pid, state, restarts (exit 1 when stopped)",
        description=f"{_STATE} Exits 0 while the stack runs, 1 when it does not.",
    )
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(handler=_status)


def _options(args: argparse.Namespace) -> supervisor.StackOptions:
    from tickwheel.stack import supervisor

    return supervisor.StackOptions(
        timers=args.timers,
        workers=args.workers,
        history=not args.no_history,
        watchdog=not args.no_watchdog,
        orchestrator=not args.no_orchestrator,
        api=not args.no_api,
        api_port=args.api_port,
        kafka_port=args.kafka_port,
        controller_port=args.kafka_port + 1,
        brokers=args.brokers,
    )


def _up(args: argparse.Namespace) -> int:
    from tickwheel.stack import supervisor

    if args.json and not args.detach:
        # Usage, said the way argparse says it (and with its exit code, 2).
        args.parser.error("--json needs --detach (in the foreground the stack prints a log)")
    options = _options(args)
    if args.detach:
        started = time.monotonic()
        status = supervisor.start_detached(options)
        if args.json:
            print(json.dumps(status, indent=2, sort_keys=True))
            return 0
        print(
            f"stack up in {time.monotonic() - started:.1f}s; Kafka at {status['bootstrap_servers']}"
        )
        _print_table(status)
        return 0

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    supervisor.Supervisor(options).run(on_event=log)
    return 0


def _down(args: argparse.Namespace) -> int:
    from tickwheel.stack import supervisor

    stopped = supervisor.stop()
    if args.json:
        print(json.dumps({"stopped": stopped, "was_running": bool(stopped)}))
    else:
        print("stack stopped" if stopped else "the stack was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
    from tickwheel.stack import supervisor

    status = supervisor.read_status()
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        _print_table(status)
    return 0 if status.get("running") else 1


def _print_table(status: dict[str, Any]) -> None:
    broker = status.get("broker", {})
    print(
        f"stack {'running' if status.get('running') else 'stopped'}; "
        f"broker {'healthy' if broker.get('healthy') else 'not healthy'}; "
        f"topology {'applied' if status.get('topology_applied') else 'not applied'}"
    )
    print(f"{'NAME':<12} {'ROLE':<10} {'PID':>8} {'STATE':<11} RESTARTS")
    for process in status.get("processes", []):
        print(
            f"{process['name']:<12} {process['role']:<10} {process['pid'] or '-':>8} "
            f"{process['state']:<11} {process['restarts']}"
        )

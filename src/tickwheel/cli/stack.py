"""`tickwheel stack up|down|status`: the local broker, the topology and the services."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from tickwheel.stack import supervisor


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("stack", help="run the local stack (Kafka + services)")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    up = verbs.add_parser("up", help="start the broker, apply the topology, run the services")
    up.add_argument("--detach", action="store_true", help="return once the stack is up")
    up.add_argument("--timers", type=int, default=1, help="timer service instances")
    up.add_argument("--workers", type=int, default=1, help="worker pool instances")
    up.add_argument("--no-history", action="store_true", help="do not run the history sink")
    up.add_argument("--kafka-port", type=int, default=9092, help="local broker port")
    up.set_defaults(handler=_up)

    down = verbs.add_parser("down", help="stop every process the stack started")
    down.set_defaults(handler=_down)

    status = verbs.add_parser("status", help="what runs now: role, pid, state, restarts")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(handler=_status)


def _options(args: argparse.Namespace) -> supervisor.StackOptions:
    return supervisor.StackOptions(
        timers=args.timers,
        workers=args.workers,
        history=not args.no_history,
        kafka_port=args.kafka_port,
        controller_port=args.kafka_port + 1,
    )


def _up(args: argparse.Namespace) -> int:
    options = _options(args)
    if args.detach:
        started = time.monotonic()
        status = supervisor.start_detached(options)
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
    stopped = supervisor.stop()
    print("stack stopped" if stopped else "the stack was not running")
    return 0


def _status(args: argparse.Namespace) -> int:
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

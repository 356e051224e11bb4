"""`tickwheel topology apply|resize|show`: create, verify or grow the declared Kafka topics."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

_ENV = (
    "TICKWHEEL_TOPOLOGY_FILE reads another topics file, TICKWHEEL_TOPIC_PREFIX prefixes every "
    "name, TICKWHEEL_REPLICATION_FACTOR overrides the file's replication factor."
)


def register(subparsers: Any) -> None:
    """Add the `topology` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser("topology", help="the declared Kafka topics")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    apply = verbs.add_parser(
        "apply",
        help="create missing topics and verify the rest (KAFKA_BOOTSTRAP_SERVERS names the cluster)",
        description=(
            "Create the declared topics that are missing and verify the rest against "
            "topology/topics.toml; a difference is an error listing each. "
            f"KAFKA_BOOTSTRAP_SERVERS names the cluster. {_ENV}"
        ),
    )
    apply.add_argument(
        "--json", action="store_true", help="print the created topics as JSON once verified"
    )
    apply.set_defaults(handler=_apply)
    resize = verbs.add_parser(
        "resize",
        help="grow the jobs group to more partitions, moving every record to its owner",
        description=(
            "Add partitions to every topic of the co-partitioned `jobs` group and move each "
            "definition, timer state and workflow snapshot to the partition that owns it under "
            "the new count (docs/decisions/0211). Stop the timer, orchestrator and job writer "
            "first; the API, workers, history sink and watchdog may keep running. A resize "
            "killed part-way is finished by running the same command again; no partitioned "
            f"service starts until it is. {_ENV}"
        ),
    )
    resize.add_argument(
        "--partitions", type=int, required=True, help="the new partition count (more than now)"
    )
    resize.add_argument(
        "--json", action="store_true", help="print the outcome as JSON (progress goes to stderr)"
    )
    resize.set_defaults(handler=_resize)
    show = verbs.add_parser(
        "show", help="print the declared topology", description=f"The declared topics. {_ENV}"
    )
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=_show)


def _apply(args: argparse.Namespace) -> int:
    from tickwheel.adapters.kafka.admin import apply_topology
    from tickwheel.cli._kafka import connect

    created = apply_topology(bootstrap=connect())
    if args.json:
        print(json.dumps({"created": list(created), "verified": True}))
        return 0
    print(f"created: {', '.join(created)}" if created else "nothing to create")
    print("topology verified")
    return 0


def _resize(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.clock import SystemClock
    from tickwheel.services.resize import Resize

    clock = SystemClock()
    say = (lambda line: print(line, file=sys.stderr)) if args.json else print
    report = Resize(
        connect(), args.partitions, now_ms=lambda: int(clock.now() * 1000), say=say
    ).run()
    if args.json:
        print(json.dumps(asdict(report)))
    return 0


def _show(args: argparse.Namespace) -> int:
    from tickwheel.topology import load_topology

    specs = load_topology()
    if args.json:
        print(json.dumps([asdict(s) for s in specs], indent=2))
        return 0
    for spec in specs:
        print(
            f"{spec.name:<20} partitions={spec.partitions:<3} cleanup={spec.cleanup_policy:<8} "
            f"schema={spec.value_schema:<16} group={spec.co_partition or '-'}"
        )
    return 0

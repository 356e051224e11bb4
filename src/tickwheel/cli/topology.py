"""`tickwheel topology apply|show`: create or verify the declared Kafka topics."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from tickwheel.topology import load_topology


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("topology", help="the declared Kafka topics")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    apply = verbs.add_parser(
        "apply",
        help="create missing topics and verify the rest (KAFKA_BOOTSTRAP_SERVERS names the cluster)",
    )
    apply.set_defaults(handler=_apply)
    show = verbs.add_parser("show", help="print the declared topology")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=_show)


def _apply(args: argparse.Namespace) -> int:
    from tickwheel.adapters.kafka.admin import apply_topology
    from tickwheel.cli._kafka import connect

    created = apply_topology(bootstrap=connect())
    print(f"created: {', '.join(created)}" if created else "nothing to create")
    print("topology verified")
    return 0


def _show(args: argparse.Namespace) -> int:
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

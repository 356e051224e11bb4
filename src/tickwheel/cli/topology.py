"""`tickwheel topology apply|show`: create or verify the declared Kafka topics."""

from __future__ import annotations

import argparse
import json
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

"""`tickwheel executions VERB ...`: commands about one execution.

Each verb is a function adding its own subparser to `VERBS`; add a verb by writing one more
`_add_<verb>(verbs)` and listing it there.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from tickwheel.cli.history_location import add_location_flags, history_settings


def _add_cancel(verbs: Any) -> None:
    cancel = verbs.add_parser(
        "cancel",
        help="cancel an execution: a queued attempt never starts, a running one is signalled",
        description=(
            "Publish a cancel instruction to executions.control, which every worker reads. "
            "A queued attempt is skipped (recorded as cancelled); a running handler sees "
            "ctx.cancelled and its outcome is cancelled. KAFKA_BOOTSTRAP_SERVERS names the "
            "cluster, TICKWHEEL_TOPIC_PREFIX the topic prefix."
        ),
    )
    cancel.add_argument("execution_id", metavar="EXECUTION_ID")
    cancel.add_argument("--job-id", help="the execution's job, recorded with the instruction")
    cancel.add_argument("--reason", help="why, recorded with the instruction and the outcome")
    cancel.add_argument("--json", action="store_true", help="print the published record as JSON")
    cancel.set_defaults(handler=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.sdk.executions import cancel, require_execution_id

    # A blank id is refused before the broker is looked for: no wait, and the right message.
    require_execution_id(args.execution_id)
    record = cancel(args.execution_id, job_id=args.job_id, reason=args.reason, bootstrap=connect())
    if args.json:
        print(json.dumps(record, indent=2, sort_keys=True))
    else:
        print(
            f"cancel requested for execution {record['execution_id']} "
            f"(control {record['control_id']}); workers skip it if queued and signal it if running"
        )
    return 0


def _add_get(verbs: Any) -> None:
    get = verbs.add_parser(
        "get",
        help="the timeline of one execution: every attempt, lease, heartbeat and outcome",
        description=(
            "Read from the history store (the embedded store through the history sink that owns "
            "it, or the server at CLICKHOUSE_URL). Exits 1 when the history holds nothing "
            "about the execution."
        ),
    )
    get.add_argument("execution_id", metavar="EXECUTION_ID")
    get.add_argument("--json", action="store_true", help="print JSON")
    add_location_flags(get)
    get.set_defaults(handler=_get)


def _get(args: argparse.Namespace) -> int:
    from tickwheel.history import execution_timeline, open_history_reader

    reader = open_history_reader(history_settings(args))
    try:
        timeline = execution_timeline(reader, args.execution_id)
    finally:
        reader.close()
    if args.json:
        print(json.dumps(timeline, indent=2, sort_keys=True, default=str))
        return 0
    print(f"execution {args.execution_id}")
    for key in ("job_id", "job_type", "tenant_id", "scheduled_time", "fire_time", "status"):
        if key in timeline:
            print(f"  {key:<15} {timeline[key]}")
    for attempt in timeline.get("attempts", []):
        print(f"  attempt {attempt.get('attempt')}: {json.dumps(attempt, default=str)}")
    return 0


VERBS: list[Callable[[Any], None]] = [_add_cancel, _add_get]


def register(subparsers: Any) -> None:
    """Add the `executions` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser("executions", help="inspect and cancel executions")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for add_verb in VERBS:
        add_verb(verbs)

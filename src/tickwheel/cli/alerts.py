"""`tickwheel alerts VERB ...`: the watchdog's incidents, read from the `alerts` topic, and
`tickwheel jobs disabled`. Reading and folding them is `tickwheel.sdk.alerts`'s, shared with
the API and the console; this module prints them and sends an acknowledgement.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from tickwheel.sdk.alerts import (
    UnknownAlert,
    ack_command,
    disabled_jobs,
    find_incident,
    incidents,
    publish_ack,
    read_transitions,
)


def _add_list(verbs: Any) -> None:
    parser = verbs.add_parser(
        "list",
        help="every incident the watchdog raised (or only the open ones)",
        description=(
            "Read the alerts topic to its end and list one line per incident. "
            "KAFKA_BOOTSTRAP_SERVERS names the cluster, TICKWHEEL_TOPIC_PREFIX the topic prefix."
        ),
    )
    parser.add_argument("--open", action="store_true", help="only incidents still open")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_list)


def _list(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect

    found = incidents(read_transitions(connect()))
    if args.open:
        found = [i for i in found if i["state"] == "open"]
    if args.json:
        print(json.dumps(found, indent=2, sort_keys=True))
        return 0
    print(f"{'INCIDENT':<22} {'KIND':<23} {'STATE':<9} {'SEVERITY':<9} SUBJECT")
    for i in found:
        # A child is shown, never hidden: with the parent that explains it.
        under = f"  (suppressed by {i['suppressed_by']})" if i.get("suppressed_by") else ""
        acked = f"  (acknowledged by {i['acknowledged']['by']})" if i.get("acknowledged") else ""
        print(
            f"{i['incident_id']:<22} {i['kind']:<23} {i['state']:<9} {i['severity']:<9} "
            f"{i['subject']}{under}{acked}"
        )
    return 0


def _add_get(verbs: Any) -> None:
    parser = verbs.add_parser(
        "get",
        help="one incident: its evidence and every transition",
        description="ID is an incident id (as `alerts list` shows) or one transition's id.",
    )
    parser.add_argument("alert_id", metavar="ID")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_get)


def _get(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect

    incident = find_incident(incidents(read_transitions(connect())), args.alert_id)
    print(json.dumps(incident, indent=2, sort_keys=True))
    return 0


def _add_ack(verbs: Any) -> None:
    parser = verbs.add_parser(
        "ack",
        help="acknowledge an open incident (who, and a note)",
        description=(
            "Send an acknowledgement to the watchdog, which applies it in its next evaluation: "
            "the incident gets an `acknowledged` transition and `alerts get` shows who and the "
            "note. ID is an incident id or one of its transitions' ids."
        ),
    )
    parser.add_argument("alert_id", metavar="ID")
    parser.add_argument("--note", required=True, help="what is being done about it")
    parser.add_argument(
        "--by",
        default=None,
        help="who acknowledges (default: TICKWHEEL_USER, else the login name)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=_ack)


def _ack(args: argparse.Namespace) -> int:
    import getpass
    import os
    import uuid

    from tickwheel.cli._kafka import connect
    from tickwheel.clock import SystemClock
    from tickwheel.errors import InvalidInput

    note = args.note.strip()
    if not note:
        raise InvalidInput("--note", "is empty; accepted: a few words on what is being done")
    by = args.by or os.environ.get("TICKWHEEL_USER") or getpass.getuser()
    bootstrap = connect()
    incident = find_incident(incidents(read_transitions(bootstrap)), args.alert_id)
    if incident["state"] != "open":
        raise UnknownAlert(
            f"incident {incident['incident_id']} is resolved; accepted: an open incident "
            "(`tickwheel alerts list --open`)"
        )
    at_ms = int(SystemClock().now() * 1000)
    command = ack_command(incident["incident_id"], by, note, at_ms, str(uuid.uuid4()))
    publish_ack(bootstrap, command)
    sent = {
        "incident_id": incident["incident_id"],
        "command_id": command["alert_id"],
        "by": by,
        "note": note,
        "at": at_ms,
    }
    if args.json:
        print(json.dumps(sent, indent=2, sort_keys=True))
    else:
        print(
            f"acknowledgement of {incident['incident_id']} sent by {by}; "
            "the watchdog applies it at its next evaluation"
        )
    return 0


def disabled_command(args: argparse.Namespace) -> int:
    """`tickwheel jobs disabled` (registered by `tickwheel.cli.jobs`)."""
    from tickwheel.cli._kafka import connect
    from tickwheel.core.timefmt import format_utc

    found = disabled_jobs(connect())
    if args.json:
        print(json.dumps(found, indent=2, sort_keys=True))
        return 0
    print(f"{'JOB':<36} {'OWNER':<16} {'BY':<12} {'SINCE':<21} {'REVIEW BY':<21} REASON")
    for job in found:
        review = format_utc(job["review_by"]) if job["review_by"] is not None else "-"
        print(
            f"{job['job_id']:<36} {job['owner'] or '-':<16} {job['by'] or '-':<12} "
            f"{format_utc(job['since']):<21} {review:<21} {job['reason'] or '-'}"
        )
    return 0


VERBS: list[Callable[[Any], None]] = [_add_list, _add_get, _add_ack]


def register(subparsers: Any) -> None:
    """Add the `alerts` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser("alerts", help="the watchdog's incidents: list, get, ack")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for add_verb in VERBS:
        add_verb(verbs)

"""`tickwheel alerts VERB ...`: the watchdog's incidents, read from the `alerts` topic.

Every transition the watchdog wrote is read to the end (read_committed) and folded per
incident: an incident is open until its `resolved` transition.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from tickwheel.errors import TickwheelError

if TYPE_CHECKING:
    from tickwheel.records import Alert


class UnknownAlert(TickwheelError, LookupError):
    """No incident (or transition) has the id asked for."""


def read_transitions(bootstrap: str | None = None) -> list[dict[str, Any]]:
    """Every watchdog transition on the `alerts` topic, oldest first, lifecycle unpacked."""
    from tickwheel.adapters.avro import UndecodableRecord, decode_as
    from tickwheel.adapters.kafka.reader import read_to_end
    from tickwheel.records import Alert
    from tickwheel.topology import topic_name

    out = []
    for record in read_to_end(topic_name("alerts"), None, bootstrap):
        if record.value is None:
            continue
        try:
            alert = decode_as(Alert, record.value)
        except UndecodableRecord:
            continue
        try:
            details = json.loads(alert["details"] or "{}")
        except ValueError:
            details = {}
        if not isinstance(details, dict) or "incident_id" not in details:
            continue  # an alert from before the watchdog's lifecycle: not an incident's
        out.append({**alert, **details, "details": details.get("evidence", {})})
    return out


def incidents(transitions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per incident: its latest state and every transition's id, in order. A
    transition read twice (the same id) counts once."""
    by_id: dict[str, dict[str, Any]] = {}
    for t in transitions:
        entry = by_id.setdefault(t["incident_id"], {
            "incident_id": t["incident_id"], "fingerprint": t["fingerprint"], "kind": t["kind"],
            "subject": t["subject"], "job_id": t.get("job_id"), "tenant_id": t.get("tenant_id"),
            "opened_at": t.get("opened_at"), "transitions": [],
        })  # fmt: skip
        if any(seen["alert_id"] == t["alert_id"] for seen in entry["transitions"]):
            continue
        entry["transitions"].append({"alert_id": t["alert_id"], "transition": t["transition"],
                                     "event_time": t["event_time"]})  # fmt: skip
        if t["transition"] == "acknowledged":
            # The acknowledgement is the news; the evidence stays the condition's.
            entry["acknowledged"] = t.get("acknowledged")
            continue
        entry.update(
            state="resolved" if t["transition"] == "resolved" else "open",
            severity=t["severity"], message=t["message"], resolved_at=t.get("resolved_at"),
            acknowledged=t.get("acknowledged"), suppressed_by=t.get("suppressed_by"),
            evidence=t["details"],
        )  # fmt: skip
    return sorted(by_id.values(), key=lambda i: (i["opened_at"] or 0, i["incident_id"]))


def describe_alert(alert: Alert) -> str:
    """One line for one transition (what `tickwheel demo` prints as the watchdog writes it)."""
    from tickwheel.core.timefmt import format_utc

    transition = alert["transition"] or "raised"
    when = format_utc(int(alert["event_time"]))[11:19]
    under = f" (suppressed by {alert['suppressed_by']})" if alert["suppressed_by"] else ""
    return (f"[{when}] ALERT {transition.upper()} {alert['kind']} {alert['incident_id'] or ''}"
            f"{under}: {alert['message']}")  # fmt: skip


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
        print(f"{i['incident_id']:<22} {i['kind']:<23} {i['state']:<9} {i['severity']:<9} "
              f"{i['subject']}{under}{acked}")  # fmt: skip
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


def find_incident(found: Iterable[dict[str, Any]], wanted: str) -> dict[str, Any]:
    """The incident `wanted` names (its id, or one of its transitions' ids)."""
    for incident in found:
        ids = {incident["incident_id"], *(t["alert_id"] for t in incident["transitions"])}
        if wanted in ids:
            return incident
    raise UnknownAlert(
        f"no incident or transition {wanted!r}; accepted: an id that `tickwheel alerts list` shows"
    )


def ack_command(
    incident_id: str, by: str, note: str, at_ms: int, command_id: str
) -> dict[str, Any]:
    """The `Alert`-shaped record on `watchdog.commands` that acknowledges an incident."""
    return {
        "alert_id": command_id,
        "event_time": at_ms,
        "kind": "acknowledge",
        "severity": "info",
        "job_id": None,
        "tenant_id": None,
        "message": note,
        "details": json.dumps({"incident_id": incident_id, "by": by}, sort_keys=True),
    }


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

    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.cli._kafka import connect
    from tickwheel.clock import SystemClock
    from tickwheel.errors import InvalidInput
    from tickwheel.topology import topic_name

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
    producer = EventProducer(bootstrap)
    producer.send(topic_name("watchdog.commands"), incident["incident_id"],
                  encode("Alert", command))  # fmt: skip
    producer.flush(10.0)
    sent = {"incident_id": incident["incident_id"], "command_id": command["alert_id"], "by": by,
            "note": note, "at": at_ms}  # fmt: skip
    if args.json:
        print(json.dumps(sent, indent=2, sort_keys=True))
    else:
        print(f"acknowledgement of {incident['incident_id']} sent by {by}; "
              "the watchdog applies it at its next evaluation")  # fmt: skip
    return 0


def disabled_jobs(bootstrap: str | None = None) -> list[dict[str, Any]]:
    """Every disabled job with its owner, reason, who disabled it and since when, folded from
    `jobs.definitions` by the watchdog's own code (`since`: the first disabled version of the
    current disable that the topic still holds)."""
    from tickwheel.adapters.avro import UndecodableRecord, decode_as
    from tickwheel.adapters.kafka.reader import read_to_end
    from tickwheel.core.watchdog import Observed, WatchdogState
    from tickwheel.core.watchdog.runs import disabled_report
    from tickwheel.records import JobDefinition
    from tickwheel.topology import topic_name

    state = WatchdogState()
    for record in read_to_end(topic_name("jobs.definitions"), None, bootstrap):
        if record.key is None or not record.key_is_text:
            continue
        try:
            value = None if record.value is None else decode_as(JobDefinition, record.value)
        except UndecodableRecord:
            continue
        state.apply(Observed("definition", record.key, value))
    reports = (disabled_report(job) for _, job in sorted(state.facts.jobs.items()))
    return [r for r in reports if r is not None]


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
        print(f"{job['job_id']:<36} {job['owner'] or '-':<16} {job['by'] or '-':<12} "
              f"{format_utc(job['since']):<21} {review:<21} {job['reason'] or '-'}")  # fmt: skip
    return 0


VERBS: list[Callable[[Any], None]] = [_add_list, _add_get, _add_ack]


def register(subparsers: Any) -> None:
    """Add the `alerts` command group to the top-level parser's subparsers."""
    parser = subparsers.add_parser("alerts", help="the watchdog's incidents: list, get, ack")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for add_verb in VERBS:
        add_verb(verbs)

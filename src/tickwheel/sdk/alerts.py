"""The watchdog's reports as a reader sees them: its incidents, folded from the `alerts` topic,
and the jobs it reports disabled, folded from `jobs.definitions`.

    from tickwheel.sdk.alerts import incidents, read_transitions
    for incident in incidents(read_transitions()):
        print(incident["incident_id"], incident["state"], incident["message"])

Every transition the watchdog wrote is read to the end (read_committed) and folded per
incident: an incident is open until its `resolved` transition. Acknowledging one is a command
on `watchdog.commands` (`ack_command`), which the watchdog applies at its next evaluation.
The CLI (`tickwheel alerts`, `tickwheel jobs disabled`), the API and the console all read
through here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tickwheel.errors import TickwheelError

if TYPE_CHECKING:
    from tickwheel.records import Alert

__all__ = [
    "UnknownAlert",
    "ack_command",
    "describe_alert",
    "disabled_jobs",
    "find_incident",
    "incidents",
    "read_transitions",
]


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
        entry = by_id.setdefault(
            t["incident_id"],
            {
                "incident_id": t["incident_id"],
                "fingerprint": t["fingerprint"],
                "kind": t["kind"],
                "subject": t["subject"],
                "job_id": t.get("job_id"),
                "tenant_id": t.get("tenant_id"),
                "opened_at": t.get("opened_at"),
                "transitions": [],
            },
        )
        if any(seen["alert_id"] == t["alert_id"] for seen in entry["transitions"]):
            continue
        entry["transitions"].append(
            {
                "alert_id": t["alert_id"],
                "transition": t["transition"],
                "event_time": t["event_time"],
            }
        )
        if t["transition"] == "acknowledged":
            # The acknowledgement is the news; the evidence stays the condition's.
            entry["acknowledged"] = t.get("acknowledged")
            continue
        entry.update(
            state="resolved" if t["transition"] == "resolved" else "open",
            severity=t["severity"],
            message=t["message"],
            resolved_at=t.get("resolved_at"),
            acknowledged=t.get("acknowledged"),
            suppressed_by=t.get("suppressed_by"),
            evidence=t["details"],
        )
    return sorted(by_id.values(), key=lambda i: (i["opened_at"] or 0, i["incident_id"]))


def describe_alert(alert: Alert) -> str:
    """One line for one transition (what `tickwheel demo` prints as the watchdog writes it)."""
    from tickwheel.core.timefmt import format_utc

    transition = alert["transition"] or "raised"
    when = format_utc(int(alert["event_time"]))[11:19]
    under = f" (suppressed by {alert['suppressed_by']})" if alert["suppressed_by"] else ""
    return (
        f"[{when}] ALERT {transition.upper()} {alert['kind']} {alert['incident_id'] or ''}"
        f"{under}: {alert['message']}"
    )


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


def publish_ack(bootstrap: str | None, command: Mapping[str, Any]) -> None:
    """Publish an `ack_command` to `watchdog.commands`, keyed by its incident, and wait for
    it to be acknowledged (the CLI, the API and the console all acknowledge this way)."""
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.topology import topic_name

    incident_id = json.loads(command["details"])["incident_id"]
    producer = EventProducer(bootstrap)
    producer.send(topic_name("watchdog.commands"), incident_id, encode("Alert", command))
    producer.flush(10.0)


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

"""Incidents: an alert's identity is (kind, subject); an incident is one open period of it.

One incident gives exactly one `opened` transition, `updated` ones only when its summary
(severity, diagnosis) changes and at most every `update_every_ms`, and one `resolved` once
the condition has stayed clear for `resolve_after_ms`. A condition that comes back within
that window is the same incident (counted in `flaps`), never a new one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from tickwheel.core.watchdog.conditions import Condition
from tickwheel.core.watchdog.facts import Acknowledgement
from tickwheel.core.watchdog.thresholds import Thresholds
from tickwheel.records import Alert, AlertSeverity

TransitionKind = Literal["opened", "updated", "acknowledged", "resolved"]


def fingerprint(kind: str, subject: str) -> str:
    """The stable identity of an alert (kind + subject), 16 hex digits."""
    digest = hashlib.sha256(f"{kind}\x00{subject}".encode()).hexdigest()
    return digest[:16]


@dataclass(slots=True)
class Incident:
    """The current (or last) incident of one fingerprint; persisted as it changes."""

    fingerprint: str
    kind: str
    subject: str
    number: int  # incidents of this fingerprint so far: the id is fingerprint-number
    seq: int  # transitions of this incident so far
    state: Literal["open", "resolved"]
    severity: AlertSeverity
    opened_at: int
    last_transition_at: int
    summary: str
    message: str
    job_id: str | None = None
    tenant_id: str | None = None
    cleared_since: int | None = None
    resolved_at: int | None = None
    flaps: int = 0
    # The last acknowledgement applied (who, note, when, and its command id: acknowledgements
    # apply in (at, id) order, so a replayed one is recognised as already applied).
    acknowledged_by: str | None = None
    acknowledged_note: str | None = None
    acknowledged_at: int | None = None
    acknowledged_id: str | None = None
    # The parent incident explaining this one right now (`parents`), and whether anyone has
    # been notified of this incident: one opened under a parent is not, until the parent no
    # longer explains it; its later transitions are sent only if its open was.
    suppressed_by: str | None = None
    notified: bool = True

    @property
    def incident_id(self) -> str:
        return f"{self.fingerprint}-{self.number}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def copy(self) -> Incident:
        return Incident.from_dict(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Incident:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in fields})


@dataclass(frozen=True, slots=True)
class Transition:
    """One notification: the `Alert` record it is written as is `record()`."""

    incident: Incident
    transition: TransitionKind
    at: int
    evidence: Mapping[str, Any]
    notify: bool = True  # whether sinks that notify people (webhooks) send it

    def record(self) -> Alert:
        """The `Alert` v2 record of this transition. Its id is stable (a receiver or a replay
        de-duplicates by it). The lifecycle is in v2's own fields (`incident_id`,
        `fingerprint`, `transition`, `state` firing|resolved, `subject`, `opened_at`,
        `resolved_at`, `acknowledged_*`, `suppressed_by`, `notify`) and, for readers of v1,
        also in `details`, beside the `evidence` (docs/decisions/0056, 0076)."""
        incident = self.incident
        record: Alert = {
            "alert_id": f"{incident.incident_id}:{incident.seq}",
            "event_time": self.at,
            "kind": incident.kind,
            "severity": incident.severity,
            "job_id": incident.job_id,
            "tenant_id": incident.tenant_id,
            "message": incident.message,
            "details": None,  # below: it repeats the lifecycle fields
            "incident_id": incident.incident_id,
            "fingerprint": incident.fingerprint,
            "transition": self.transition,
            "state": "resolved" if incident.state == "resolved" else "firing",
            "subject": incident.subject,
            "opened_at": incident.opened_at,
            "resolved_at": incident.resolved_at,
            "acknowledged_by": incident.acknowledged_by,
            "acknowledged_note": incident.acknowledged_note,
            "acknowledged_at": incident.acknowledged_at,
            "suppressed_by": incident.suppressed_by,
            "notify": self.notify,
        }
        details = {name: value for name, value in record.items() if name in _LIFECYCLE_FIELDS}
        details["acknowledged"] = _acknowledgement(incident)
        details["evidence"] = dict(self.evidence)
        record["details"] = json.dumps(details, sort_keys=True, default=str)
        return record


def plain_alert(
    alert_id: str,
    event_time: int,
    kind: str,
    severity: AlertSeverity,
    message: str,
    *,
    job_id: str | None = None,
    tenant_id: str | None = None,
    details: str | None = None,
) -> Alert:
    """An `Alert` that is no incident's transition (a workflow's alert, the watchdog's state
    and checkpoint records): its v2 lifecycle fields keep the schema's defaults."""
    return {
        "alert_id": alert_id,
        "event_time": event_time,
        "kind": kind,
        "severity": severity,
        "job_id": job_id,
        "tenant_id": tenant_id,
        "message": message,
        "details": details,
        "incident_id": None,
        "fingerprint": None,
        "transition": None,
        "state": None,
        "subject": None,
        "opened_at": None,
        "resolved_at": None,
        "acknowledged_by": None,
        "acknowledged_note": None,
        "acknowledged_at": None,
        "suppressed_by": None,
        "notify": True,
    }


# The Alert v2 fields that `details` repeats for readers of v1 (decision 0076).
_LIFECYCLE_FIELDS = frozenset(
    {
        "incident_id",
        "fingerprint",
        "transition",
        "state",
        "subject",
        "opened_at",
        "resolved_at",
        "suppressed_by",
        "notify",
    }
)


def advance(
    incidents: dict[str, Incident],
    current: Iterable[Condition],
    watermark: int,
    thresholds: Thresholds,
    clear_evidence: Any = None,
) -> tuple[list[Transition], set[str]]:
    """Move every incident to `watermark` given the conditions true there. Returns the
    transitions and the fingerprints whose incident changed (to be persisted).
    `clear_evidence(incident)` says why a resolved condition cleared (or None)."""
    transitions: list[Transition] = []
    changed: set[str] = set()
    seen: set[str] = set()
    for condition in current:
        fp = fingerprint(condition.kind, condition.subject)
        if fp in seen:
            continue
        seen.add(fp)
        incident = incidents.get(fp)
        parent = _parent_id(incidents, condition.suppressed_by)
        if incident is None or incident.state == "resolved":
            incident = Incident(
                fp,
                condition.kind,
                condition.subject,
                number=(incident.number + 1) if incident else 1,
                seq=1,
                state="open",
                severity=condition.severity,
                opened_at=watermark,
                last_transition_at=watermark,
                summary=condition.summary,
                message=condition.message,
                job_id=condition.job_id,
                tenant_id=condition.tenant_id,
                suppressed_by=parent,
                notified=parent is None,
            )
            incidents[fp] = incident
            transitions.append(
                Transition(
                    incident.copy(),
                    "opened",
                    watermark,
                    condition.evidence,
                    notify=incident.notified,
                )
            )
            changed.add(fp)
            continue
        if parent != incident.suppressed_by:
            incident.suppressed_by = parent
            changed.add(fp)
            if parent is None and not incident.notified:
                # Its parent no longer explains it: now it is news of its own.
                incident.notified = True
                incident.seq += 1
                incident.last_transition_at = watermark
                transitions.append(
                    Transition(
                        incident.copy(),
                        "updated",
                        watermark,
                        {**condition.evidence, "unsuppressed": True},
                    )
                )
                continue
        if incident.cleared_since is not None:
            incident.cleared_since = None
            incident.flaps += 1
            changed.add(fp)
        escalated = _rank(condition.severity) > _rank(incident.severity)
        material = condition.summary != incident.summary
        due = watermark - incident.last_transition_at >= thresholds.update_every_ms
        if escalated or (material and due):
            incident.seq += 1
            incident.severity = condition.severity
            incident.summary, incident.message = condition.summary, condition.message
            incident.last_transition_at = watermark
            update = {**condition.evidence, "flaps": incident.flaps}
            transitions.append(
                Transition(incident.copy(), "updated", watermark, update, notify=incident.notified)
            )
            changed.add(fp)
    for fp in sorted(incidents):
        incident = incidents[fp]
        if incident.state != "open" or fp in seen:
            continue
        if incident.cleared_since is None:
            incident.cleared_since = watermark
            changed.add(fp)
        if watermark - incident.cleared_since >= thresholds.resolve_after_ms:
            incident.seq += 1
            incident.state = "resolved"
            incident.resolved_at = watermark
            incident.last_transition_at = watermark
            evidence: dict[str, Any] = {
                "cleared_since": incident.cleared_since,
                "flaps": incident.flaps,
            }
            if clear_evidence is not None:
                evidence.update(clear_evidence(incident) or {})
            transitions.append(
                Transition(
                    incident.copy(), "resolved", watermark, evidence, notify=incident.notified
                )
            )
            changed.add(fp)
    return transitions, changed


def acknowledge(
    incidents: Mapping[str, Incident], acks: Iterable[Acknowledgement], watermark: int
) -> tuple[list[Transition], set[str]]:
    """Apply the acknowledgements given by `watermark` (in (at, id) order) to the open
    incident each names: one `acknowledged` transition each. One naming an incident that is
    resolved, superseded or unknown, or one applied already (a replay), changes nothing."""
    transitions: list[Transition] = []
    changed: set[str] = set()
    for ack in sorted(acks, key=lambda a: (a.at, a.command_id)):
        if ack.at > watermark:
            continue
        fp, _, number = ack.incident_id.rpartition("-")
        incident = incidents.get(fp)
        if incident is None or str(incident.number) != number or incident.state != "open":
            continue
        if incident.acknowledged_at is not None and (ack.at, ack.command_id) <= (
            incident.acknowledged_at,
            incident.acknowledged_id or "",
        ):
            continue
        incident.seq += 1
        incident.acknowledged_by, incident.acknowledged_note = ack.by, ack.note
        incident.acknowledged_at, incident.acknowledged_id = ack.at, ack.command_id
        evidence = {"by": ack.by, "note": ack.note, "acknowledged_at": ack.at}
        transitions.append(
            Transition(
                incident.copy(), "acknowledged", watermark, evidence, notify=incident.notified
            )
        )
        changed.add(fp)
    return transitions, changed


def _acknowledgement(incident: Incident) -> dict[str, Any] | None:
    if incident.acknowledged_at is None:
        return None
    return {
        "by": incident.acknowledged_by,
        "note": incident.acknowledged_note,
        "at": incident.acknowledged_at,
    }


def _parent_id(incidents: Mapping[str, Incident], parent_fp: str | None) -> str | None:
    parent = incidents.get(parent_fp) if parent_fp is not None else None
    return parent.incident_id if parent is not None and parent.state == "open" else None


def _rank(severity: AlertSeverity) -> int:
    return {"info": 0, "warning": 1, "critical": 2}.get(severity, 0)

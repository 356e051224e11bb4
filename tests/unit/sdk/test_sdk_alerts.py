"""`describe_alert`: one line per watchdog transition, from the Alert record the demo reads."""

from __future__ import annotations

from tickwheel.core.watchdog import Incident, Transition, plain_alert
from tickwheel.sdk.alerts import describe_alert

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def test_a_transition_says_what_happened_to_which_incident_and_what_explains_it() -> None:
    incident = Incident(
        fingerprint="f" * 16, kind="job_overdue", subject="job-1", number=1, seq=1,
        state="open", severity="warning", opened_at=T0, last_transition_at=T0, summary="late",
        message="job-1 is late", job_id="job-1", suppressed_by="p" * 16 + "-1",
    )  # fmt: skip
    line = describe_alert(Transition(incident, "opened", T0 + 61_000, {}).record())
    assert line == (
        f"[00:01:01] ALERT OPENED job_overdue {'f' * 16}-1 (suppressed by {'p' * 16}-1): "
        "job-1 is late"
    )


def test_an_alert_that_is_no_incidents_transition_reads_as_raised() -> None:
    line = describe_alert(plain_alert("a-1", T0, "workflow_alert", "warning", "step stuck"))
    assert line == "[00:00:00] ALERT RAISED workflow_alert : step stuck"

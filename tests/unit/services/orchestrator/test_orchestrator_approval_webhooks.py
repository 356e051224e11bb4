"""Approval webhooks' bodies and settings (decision 0132): an opened round's notice carries
the link for exactly that round, a timeout and an escalation name the round they end, every
other event sends nothing; approval webhooks without a secret, or to a URL the SSRF guard
refuses, stop the service with one line naming the variable."""

from __future__ import annotations

import pytest

from tests.unit.services.orchestrator.test_orchestrator import _catalog
from tests.unit.services.orchestrator.test_orchestrator_pruning import T0, Feed
from tickwheel.core.workflow import Start, TimerFired
from tickwheel.core.workflow.approval import verify_approval
from tickwheel.errors import InvalidInput
from tickwheel.services.environment import from_env
from tickwheel.services.orchestrator.approval_webhooks import approval_payload
from tickwheel.services.orchestrator.notices import ApprovalNotifier
from tickwheel.services.orchestrator.partition import PartitionOrchestrator
from tickwheel.services.orchestrator.service import OrchestratorService
from tickwheel.services.orchestrator.settings import OrchestratorSettings

ESCALATING = {"definitionId": "esc", "version": 1, "steps": [
    {"id": "ok", "kind": "approval", "assignees": ["ana"], "timeout": "1h",
     "onTimeout": "escalate", "escalateTo": ["bo"], "maxEscalations": 1}]}  # fmt: skip
KEYS = {"k1": b"first-secret"}
HOUR = 3_600_000


def test_an_escalated_round_posts_its_opening_timeout_escalation_and_next_opening() -> None:
    partition = PartitionOrchestrator(0, 6, _catalog(ESCALATING))
    feed = Feed(partition)
    feed.send("wf-e", Start(T0, None), ESCALATING)
    feed.send("wf-e", TimerFired(T0 + HOUR, "approval:ok:1"))
    notifier = ApprovalNotifier(KEYS)
    events = partition.take().events
    bodies = [b for b in (approval_payload(e, notifier) for e in events) if b is not None]
    assert [(b["type"], b["data"]["round"]) for b in bodies] == [
        ("approval.requested", 1), ("approval.timed_out", 1), ("approval.escalated", 1),
        ("approval.requested", 2)]  # fmt: skip
    assert len(events) > len(bodies)  # workflow_started and the like send nothing
    opened = bodies[-1]["data"]
    assert opened["assignees"] == ["bo"] and opened["event_id"] == f"wf:wf-e:{opened['seq']}"
    claim = verify_approval(opened["link"].split()[-1], KEYS, T0 + HOUR)
    assert (claim.workflow_id, claim.step, claim.round) == ("wf-e", "ok", 2)
    assert claim.expires_at_ms == T0 + 2 * HOUR  # the round's own timeout
    assert "link" not in bodies[1]["data"]  # a timed-out round has no link to send
    assert bodies[0]["timestamp"].startswith("20")  # the event's time, ISO 8601 UTC


def test_without_keys_an_opened_round_is_posted_without_a_link() -> None:
    partition = PartitionOrchestrator(0, 6, _catalog(ESCALATING))
    Feed(partition).send("wf-n", Start(T0, None), ESCALATING)
    opened = [approval_payload(e, ApprovalNotifier({})) for e in partition.take().events]
    requested = [b for b in opened if b is not None]
    assert [b["type"] for b in requested] == ["approval.requested"]
    assert requested[0]["data"]["link"] is None


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"TICKWHEEL_APPROVAL_WEBHOOKS": "https://hooks.example/a"},
         "TICKWHEEL_APPROVAL_WEBHOOK_SECRET"),
        ({"TICKWHEEL_APPROVAL_WEBHOOKS": "http://127.0.0.1:9/a",
          "TICKWHEEL_APPROVAL_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
         "TICKWHEEL_APPROVAL_WEBHOOKS"),
        ({"TICKWHEEL_APPROVAL_WEBHOOK_ALLOWED_NETWORKS": "10.0.0.0/33"},
         "TICKWHEEL_APPROVAL_WEBHOOK_ALLOWED_NETWORKS"),
        ({"TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_S": "soon"}, "TICKWHEEL_APPROVAL_WEBHOOK_BACKOFF_S"),
    ],
)  # fmt: skip
def test_bad_webhook_settings_are_refused_in_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], variable: str
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(InvalidInput) as raised:
        OrchestratorService(from_env(OrchestratorSettings))
    assert raised.value.field == variable

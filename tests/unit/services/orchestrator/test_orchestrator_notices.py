"""Approval notices: each round a committed batch opened gets one log line whose link carries
a token that verifies for exactly that round and expires with it; without keys the line still
comes, saying how to sign a link; a link template without `{token}` is refused in one line."""

from __future__ import annotations

import logging

import pytest

from tests.unit.services.orchestrator.test_orchestrator import _catalog
from tests.unit.services.orchestrator.test_orchestrator_pruning import T0, Feed
from tickwheel.core.workflow import Reassign, Start
from tickwheel.core.workflow.approval import verify_approval
from tickwheel.errors import InvalidInput
from tickwheel.services.orchestrator.notices import ApprovalNotifier
from tickwheel.services.orchestrator.partition import PartitionOrchestrator

SIGN_OFF = {"definitionId": "sign_off", "version": 1, "steps": [
    {"id": "ok", "kind": "approval", "assignees": ["ana"], "timeout": "1h",
     "onTimeout": "fail"}]}  # fmt: skip
KEYS = {"k2": b"second-secret", "k1": b"first-secret"}


def opened_round(reassign: bool = False) -> PartitionOrchestrator:
    partition = PartitionOrchestrator(0, 6, _catalog(SIGN_OFF))
    feed = Feed(partition)
    feed.send("wf-a", Start(T0, None), SIGN_OFF)
    if reassign:
        partition.take()
        feed.send("wf-a", Reassign(T0 + 5, "ok", "ops", ("bo",)))
    return partition


def test_each_opened_round_is_logged_once_with_a_link_for_that_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notifier = ApprovalNotifier(KEYS, "https://ops.example/approve?token={token}")
    batch = opened_round(reassign=True).take()  # the reassignment opened round 2
    with caplog.at_level(logging.INFO, logger="tickwheel.orchestrator"):
        notifier.announce(batch)
    lines = [r for r in caplog.records if getattr(r, "action", None) == "approval_link"]
    assert len(lines) == 1
    line = lines[0]
    assert (line.workflow_id, line.step_id, line.round, line.assignees) == (  # type: ignore[attr-defined]
        "wf-a", "ok", 2, ["bo"])  # fmt: skip
    assert line.link.startswith("https://ops.example/approve?token=v1.k2.")  # type: ignore[attr-defined]
    token = line.link.split("token=", 1)[1]  # type: ignore[attr-defined]
    claim = verify_approval(token, KEYS, T0 + 6)
    assert (claim.workflow_id, claim.step, claim.round) == ("wf-a", "ok", 2)
    assert claim.expires_at_ms == T0 + 5 + 3_600_000  # the round's own timeout
    # Replayed after a crash, the batch names the very same link (deterministic signing).
    assert notifier.notices(batch)[0]["link"] == line.link  # type: ignore[attr-defined]


def test_without_keys_the_notice_still_comes_and_says_how_to_sign(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="tickwheel.orchestrator"):
        ApprovalNotifier({}).announce(opened_round().take())
    (line,) = [r for r in caplog.records if getattr(r, "action", None) == "approval_link"]
    assert line.link is None and "tickwheel workflows token" in line.getMessage()  # type: ignore[attr-defined]
    assert (
        ApprovalNotifier(KEYS)
        .notices(opened_round().take())[0]["link"]
        .startswith("tickwheel workflows approve --token v1.k2.")
    )


def test_a_link_template_without_a_token_placeholder_is_refused() -> None:
    with pytest.raises(InvalidInput, match="TICKWHEEL_APPROVAL_LINK"):
        ApprovalNotifier(KEYS, "https://ops.example/approve")

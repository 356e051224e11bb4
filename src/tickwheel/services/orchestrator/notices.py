"""Approval notices: once the transaction that opened an approval round has committed, the
round's link is logged, one structured line per round (`action: approval_link`), where the
people on call (or the log pipeline's alerting) see it. The `approval_requested` event on
`workflows.events` is the durable notice; the link itself — a bearer token — is never written
to a topic, since every topic lands in ClickHouse for as long as history is kept.

The token is signed with the first key of `TICKWHEEL_APPROVAL_KEYS` for the round's own
expiry (the round's timeout, else `DEFAULT_APPROVAL_TTL_MS`), so a batch replayed after a crash
logs the very same link again: the notice is at-least-once, the decision stays single-use.
`TICKWHEEL_APPROVAL_LINK` makes the link a URL (`https://.../approve?token={token}`); without
it the line carries the CLI command. Without keys the line says how to sign a link by hand.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from tickwheel.core.workflow.approval import ApprovalClaim, sign_approval
from tickwheel.errors import InvalidInput
from tickwheel.records import WorkflowEvent
from tickwheel.sdk.workflows import DEFAULT_APPROVAL_TTL_MS
from tickwheel.services.orchestrator.partition import Batch
from tickwheel.services.orchestrator.settings import LINK_VAR

log = logging.getLogger("tickwheel.orchestrator")


class ApprovalNotifier:
    def __init__(self, keys: Mapping[str, bytes], link_template: str | None = None) -> None:
        if link_template is not None and "{token}" not in link_template:
            raise InvalidInput(LINK_VAR, f"{link_template!r}; accepted: a URL with {{token}}")
        self.keys = dict(keys)
        self.link_template = link_template

    def link(self, workflow_id: str, step_id: str, round_: int, expires_at_ms: int) -> str | None:
        """The round's approval link (a URL, or the CLI command), signed with the first key;
        None without keys. The same round and expiry always give the same link."""
        if not self.keys:
            return None
        kid, secret = next(iter(self.keys.items()))
        token = sign_approval(
            ApprovalClaim(workflow_id, step_id, round_, expires_at_ms), kid, secret
        )
        if self.link_template:
            return self.link_template.format(token=token)
        return f"tickwheel workflows approve --token {token}"

    def notice(self, event: WorkflowEvent) -> dict[str, Any]:
        """The notice of one `approval_requested` event (a `WorkflowEvent` record): who, what,
        until when, the link."""
        step_id = event["step_id"]
        if step_id is None:  # the fold always names the step it asks approval for
            raise ValueError(f"{event['event_id']}: an approval_requested event without step_id")
        data = json.loads(event["data"] or "{}")
        expires = data.get("expires_at_ms") or event["event_time"] + DEFAULT_APPROVAL_TTL_MS
        return {
            "workflow_id": event["workflow_id"],
            "step_id": step_id,
            "round": data["round"],
            "assignees": data.get("assignees", []),
            "expires_at_ms": expires,
            "link": self.link(event["workflow_id"], step_id, data["round"], expires),
        }

    def notices(self, batch: Batch) -> list[dict[str, Any]]:
        """One notice per approval round the batch opened."""
        return [self.notice(e) for e in batch.events if e["event_type"] == "approval_requested"]

    def announce(self, batch: Batch) -> None:
        for notice in self.notices(batch):
            message = (
                "approval requested"
                if notice["link"]
                else (
                    "approval requested; no TICKWHEEL_APPROVAL_KEYS here, sign a link with "
                    "`tickwheel workflows token`"
                )
            )
            log.info(message, extra={"action": "approval_link", **notice})

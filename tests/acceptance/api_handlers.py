"""Job types of seed 000's `video_publish` workflow, for the API's acceptance tests
(`tickwheel worker --module tests.acceptance.api_handlers`)."""

from __future__ import annotations

from typing import Any

from tickwheel.sdk.worker import ExecutionContext, PermanentError, job

RETRIED_PREFIX = "wf-retry-"


@job("probe_source")
def probe_source(ctx: ExecutionContext) -> dict[str, Any]:
    return {"probed": True, "attempt": ctx.attempt}


@job("encode")
def encode(ctx: ExecutionContext) -> dict[str, Any]:
    """An instance named `wf-retry-*` fails its first attempt for good, as a broken encoder
    does; a later attempt — an operator's retry — succeeds, as does every other instance's."""
    if (ctx.workflow_id or "").startswith(RETRIED_PREFIX) and ctx.attempt == 1:
        raise PermanentError("encoder crashed on the source")
    return {"encoded": "480p", "attempt": ctx.attempt, "execution_id": ctx.execution_id}

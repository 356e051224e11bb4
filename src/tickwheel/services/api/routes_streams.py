"""An execution's timeline as Server-Sent Events: `curl -N /v1/executions/{id}/events`.

The stream (event_streams.py) sends the timeline (`event: timeline`, the JSON of
`GET /executions/{id}`) at once and again each time it changes, polling the history every
`interval` seconds; it ends with `event: end` when the execution has finished
(`reason: finished`) or after `timeout` seconds (`reason: timeout`). A history read that fails
mid-stream is an `event: error` and the stream goes on.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import StreamingResponse

from tickwheel.services.api.event_streams import EVENT_STREAM, Interval, Timeout, stream
from tickwheel.services.api.problems import problem_responses
from tickwheel.services.api.routes_executions import TIMELINE_EXAMPLE, read_timeline
from tickwheel.services.api.routes_jobs import BackendDep

router = APIRouter(tags=["executions"])

FINAL_STATUSES = {"failed", "skipped"}
STREAM_EXAMPLE = (
    f"event: timeline\nid: 0\ndata: {json.dumps(TIMELINE_EXAMPLE)}\n\n"
    'event: end\ndata: {"reason": "finished"}\n\n'
)
STREAM_RESPONSES: dict[int | str, Any] = {
    200: {
        "description": "The timeline as it changes, then `end`",
        "content": {EVENT_STREAM: {"schema": {"type": "string"}, "example": STREAM_EXAMPLE}},
    },
    **problem_responses(404, 422, 503),
}


def finished(timeline: dict[str, Any]) -> bool:
    return timeline.get("outcome") is not None or timeline.get("status") in FINAL_STATUSES


ExecutionId = Annotated[str, Path(min_length=1, max_length=200)]


@router.get(
    "/executions/{execution_id}/events",
    summary="An execution's timeline as SSE",
    responses=STREAM_RESPONSES,
    response_class=StreamingResponse,
)
async def execution_events(
    b: BackendDep, execution_id: ExecutionId, timeout: Timeout = 60, interval: Interval = 1.0
) -> StreamingResponse:
    return await stream(partial(read_timeline, b, execution_id), timeout, interval, finished)


@router.get(
    "/runs/{run_id}/events",
    summary="A run's timeline as SSE (seed 003's name)",
    responses=STREAM_RESPONSES,
    response_class=StreamingResponse,
)
async def run_events(
    b: BackendDep, run_id: ExecutionId, timeout: Timeout = 60, interval: Interval = 1.0
) -> StreamingResponse:
    return await stream(partial(read_timeline, b, run_id), timeout, interval, finished)

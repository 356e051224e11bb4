"""An execution's timeline as Server-Sent Events: `curl -N /v1/executions/{id}/events`.

The stream sends the timeline (`event: timeline`, the JSON of `GET /executions/{id}`) at once
and again each time it changes, polling the history every `interval` seconds; it ends with
`event: end` when the execution has finished (`reason: finished`) or after `timeout` seconds
(`reason: timeout`): every stream is bounded, so a forgotten client holds nothing for long.
A history read that fails mid-stream is an `event: error` and the stream goes on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from tickwheel.services.api.problems import problem_responses
from tickwheel.services.api.routes_executions import TIMELINE_EXAMPLE, read_timeline
from tickwheel.services.api.routes_jobs import BackendDep

router = APIRouter(tags=["executions"])

EVENT_STREAM = "text/event-stream"
MAX_STREAM_S = 300
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


def _event(name: str, data: Any, event_id: int | None = None) -> str:
    head = f"event: {name}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {json.dumps(data, sort_keys=True)}\n\n"


async def timeline_events(
    read: Callable[[], dict[str, Any]],
    first: dict[str, Any],
    timeout: float,
    interval: float,
    done: Callable[[dict[str, Any]], bool] = finished,
) -> AsyncIterator[str]:
    """`first`, then each changed result of `read()` polled every `interval` s, until
    `done(timeline)` (`end: finished`) or `timeout` s (`end: timeout`)."""
    timeline, last = first, ""
    polls = max(1, int(timeout / interval))
    for poll in range(polls + 1):
        text = json.dumps(timeline, sort_keys=True)
        if text != last:
            yield _event("timeline", timeline, poll)
            last = text
        if done(timeline):
            yield _event("end", {"reason": "finished"})
            return
        if poll == polls:
            break
        await asyncio.sleep(interval)
        try:
            timeline = await run_in_threadpool(read)
        except Exception as exc:
            yield _event("error", {"detail": str(exc)})
    yield _event("end", {"reason": "timeout"})


async def stream(
    read: Callable[[], dict[str, Any]],
    timeout: float,
    interval: float,
    done: Callable[[dict[str, Any]], bool] = finished,
) -> StreamingResponse:
    """The SSE response of `read`'s timeline. It is read once before answering, so an unknown
    object is a 404 problem, not a stream."""
    first = await run_in_threadpool(read)
    return StreamingResponse(
        timeline_events(read, first, timeout, interval, done),
        media_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


ExecutionId = Annotated[str, Path(min_length=1, max_length=200)]
Timeout = Annotated[int, Query(ge=1, le=MAX_STREAM_S)]
Interval = Annotated[float, Query(ge=0.2, le=10)]


@router.get("/executions/{execution_id}/events", summary="An execution's timeline as SSE",
            responses=STREAM_RESPONSES, response_class=StreamingResponse)  # fmt: skip
async def execution_events(
    b: BackendDep, execution_id: ExecutionId, timeout: Timeout = 60, interval: Interval = 1.0
) -> StreamingResponse:
    return await stream(partial(read_timeline, b, execution_id), timeout, interval)


@router.get("/runs/{run_id}/events", summary="A run's timeline as SSE (seed 003's name)",
            responses=STREAM_RESPONSES, response_class=StreamingResponse)  # fmt: skip
async def run_events(
    b: BackendDep, run_id: ExecutionId, timeout: Timeout = 60, interval: Interval = 1.0
) -> StreamingResponse:
    return await stream(partial(read_timeline, b, run_id), timeout, interval)

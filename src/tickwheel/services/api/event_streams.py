"""A timeline as Server-Sent Events: what `GET /executions/{id}/events` (routes_streams.py)
and `GET /workflows/{id}/events` (routes_workflows.py) answer with.

The stream sends the timeline (`event: timeline`) at once and again each time it changes,
polling every `interval` seconds; it ends with `event: end` when the caller's `done` says the
object has finished (`reason: finished`) or after `timeout` seconds (`reason: timeout`): every
stream is bounded, so a forgotten client holds nothing for long. A read that fails mid-stream
is an `event: error` and the stream goes on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

EVENT_STREAM = "text/event-stream"
MAX_STREAM_S = 300

Timeout = Annotated[int, Query(ge=1, le=MAX_STREAM_S)]
Interval = Annotated[float, Query(ge=0.2, le=10)]


def _event(name: str, data: Any, event_id: int | None = None) -> str:
    head = f"event: {name}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return f"{head}data: {json.dumps(data, sort_keys=True)}\n\n"


async def timeline_events(
    read: Callable[[], dict[str, Any]],
    first: dict[str, Any],
    timeout: float,
    interval: float,
    done: Callable[[dict[str, Any]], bool],
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
    done: Callable[[dict[str, Any]], bool],
) -> StreamingResponse:
    """The SSE response of `read`'s timeline. It is read once before answering, so an unknown
    object is a 404 problem, not a stream."""
    first = await run_in_threadpool(read)
    return StreamingResponse(
        timeline_events(read, first, timeout, interval, done),
        media_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )

"""Built-in job types (DESIGN §13): `noop`, `sleep`, `fail`, and `http` behind the SSRF guard.

`builtin_registry()` returns them as a `HandlerRegistry`; the `http` guard reads its allow-list
from the environment unless one is passed in.
"""

from __future__ import annotations

from functools import partial

from tickwheel.jobtypes.basic import MAX_SLEEP_SECONDS, fail, noop, sleep
from tickwheel.jobtypes.http import http_handler
from tickwheel.sdk.ssrf import SsrfGuard
from tickwheel.sdk.worker import HandlerRegistry, JobType

BUILTIN_TYPES = ("fail", "http", "noop", "sleep")

__all__ = ["BUILTIN_TYPES", "builtin_registry"]


def builtin_registry(guard: SsrfGuard | None = None) -> HandlerRegistry:
    """A registry holding the built-ins; `guard` defaults to `SsrfGuard.from_env()`."""
    http_guard = guard or SsrfGuard.from_env()
    return HandlerRegistry(
        [
            JobType("noop", noop, description="do nothing and succeed"),
            # It may sleep a day: the worker's default run limit (an hour) must not cut it.
            JobType(
                "sleep",
                sleep,
                description="sleep payload.seconds, heartbeating",
                max_run_seconds=int(MAX_SLEEP_SECONDS) + 60,
            ),
            JobType("fail", fail, description="fail the first payload.times attempts"),
            JobType(
                "http",
                partial(http_handler, guard=http_guard),
                description="one HTTP request to an allow-listed host",
            ),
        ]
    )

"""`GET /schedules/preview` in the unit tier: the route alone on an app, over an in-memory job
client (no broker; `tests/integration/test_api.py` drives it over the real one)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.console.fakes import MemoryJobs
from tickwheel.clock import FakeClock
from tickwheel.core.cron import MAX_CRON_LENGTH, parse_cron
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.problems import install
from tickwheel.services.api.routes_schedules import router

NOW_S = datetime(2026, 12, 7, 12, tzinfo=UTC).timestamp()  # a Monday


def _client() -> TestClient:
    clock = FakeClock(NOW_S)
    app = FastAPI()
    app.state.backend = Backend(jobs=MemoryJobs(clock), clock=clock, calendars=object())  # type: ignore[arg-type]
    install(app)
    app.include_router(router)
    return TestClient(app)


def test_the_preview_of_a_sunday_range_lists_sundays_and_says_so() -> None:
    """Issue 34: `0 0 * * 7-7` was previewed as every day."""
    answer = _client().get("/schedules/preview", params={"cron": "0 0 * * 7-7", "count": 3})
    assert answer.status_code == 200, answer.text
    assert answer.json()["description"] == "at 00:00 on Sunday"
    assert [o["utc"] for o in answer.json()["occurrences"]] == [
        "2026-12-13T00:00:00Z",
        "2026-12-20T00:00:00Z",
        "2026-12-27T00:00:00Z",
    ]


def test_the_preview_takes_every_expression_the_core_accepts_up_to_its_length() -> None:
    """The query's limit is the parser's: a longest accepted expression is previewed, one
    character more is refused (it was cut at 200 characters, below the parser's 256)."""
    longest = "0 0 01" + ",1" * 123 + " * *"
    assert len(longest) == MAX_CRON_LENGTH and parse_cron(longest).days_of_month == (1,)
    client = _client()
    assert client.get("/schedules/preview", params={"cron": longest}).status_code == 200
    too_long = client.get("/schedules/preview", params={"cron": longest + "0"})
    assert too_long.status_code == 422

"""Every console template compiles, and the pure view-models of the pages added for dead
letters and execution retries shape what they are given (the operations panel's are in
`tests/unit/services/api/console/test_console_groups.py`)."""

from __future__ import annotations

import pytest

from tickwheel.services.api.console.dead_letters import letters_model
from tickwheel.services.api.console.render import TEMPLATES, env


@pytest.mark.parametrize("name", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_every_template_compiles(name: str) -> None:
    env.get_template(name)


def _letter(letter_id: str, at: int, job_id: str | None, execution: str | None,
            reason: str, resolution: dict[str, str] | None = None) -> dict[str, object]:  # fmt: skip
    return {"dead_letter_id": letter_id, "event_time": at, "job_id": job_id,
            "execution_id": execution, "reason": reason, "resolution": resolution}  # fmt: skip


def test_the_letters_model_lists_unresolved_oldest_first_and_counts_by_reason() -> None:
    letters = [
        _letter("dlq:b", 2_000, "nightly", "b", "max_attempts_exhausted"),
        _letter("dlq:a", 1_000, "nightly", "a", "max_attempts_exhausted"),
        _letter("undecodable:jobs.definitions:0:1", 1_500, None, None, "undecodable: bad magic"),
        _letter("dlq:c", 500, "__wf/wf-1/0", "c", "permanent_error",
                {"action": "discarded", "by": "ops"}),
    ]  # fmt: skip
    jobs = [{"jobId": "nightly", "type": "http"}]
    model = letters_model(letters, jobs, 61_000, "unresolved", "")
    assert [r["dead_letter_id"] for r in model["letters"]] == [
        "dlq:a", "undecodable:jobs.definitions:0:1", "dlq:b"]  # fmt: skip
    assert (model["unresolved_count"], model["resolved_count"]) == (3, 1)
    assert model["reasons"] == [("max_attempts_exhausted", 2), ("undecodable", 1)]
    first = model["letters"][0]
    assert (first["job_type"], first["kind"], first["state"]) == ("http", "execution", "unresolved")
    narrowed = letters_model(letters, jobs, 61_000, "all", "undecodable")
    assert [r["kind"] for r in narrowed["letters"]] == ["undecodable record"]
    resolved = letters_model(letters, jobs, 61_000, "resolved", "")["letters"]
    assert [(r["kind"], r["state"], r["workflow"]) for r in resolved] == [
        ("workflow step", "discarded", "wf-1")]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [("GET", "/jobs", "read"), ("GET", "/dead-letters", "read"), ("GET", "/admin", "admin"),
     ("POST", "/jobs/x/pause", "write"), ("POST", "/dead-letters/bulk", "admin"),
     ("POST", "/dead-letters/dlq:1/retry", "admin"), ("POST", "/admin/keys", "admin"),
     ("POST", "/workflows/w/steps/s/approve", "approve"), ("POST", "/executions/e/retry", "write")],
)  # fmt: skip
def test_each_console_request_needs_the_scope_the_api_would_ask(
    method: str, path: str, scope: str
) -> None:
    from tickwheel.services.api.console.access import console_scope

    assert console_scope(method, path) == scope


@pytest.mark.parametrize(
    ("asked", "goes"),
    [("/console/jobs?q=a", "/console/jobs?q=a"), ("https://evil.example/", "/console"),
     ("//evil.example/console", "/console"), ("/v1/jobs", "/console")],
)  # fmt: skip
def test_after_sign_in_the_browser_goes_only_to_a_console_page(asked: str, goes: str) -> None:
    from tickwheel.services.api.console.sign_in import _next

    assert _next(asked) == goes


def test_the_dead_letters_page_offers_retry_only_where_a_retry_can_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import re

    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from tests.console.fakes import MemoryJobs
    from tickwheel.clock import FakeClock
    from tickwheel.sdk.dead_letters import with_resolutions
    from tickwheel.services.api.backend import Backend
    from tickwheel.services.api.console import mount

    monkeypatch.setenv("TICKWHEEL_API_AUTH", "off")
    clock = FakeClock(1_800_000_000)
    jobs = MemoryJobs(clock)
    jobs.create({"jobId": "nightly", "type": "noop", "cron": "0 2 * * *", "timezone": "UTC"})
    letters = with_resolutions([
        _letter("dlq:a", 1_000, "nightly", "a", "max_attempts_exhausted"),
        _letter("rejected:timers.commands:0:4", 2_000, "nightly", None, "rejected: bad range"),
        _letter("dlq:s", 3_000, "__wf/wf-1/0", "s", "permanent_error"),
    ], {})  # fmt: skip
    app = FastAPI()
    app.state.backend = Backend(jobs=jobs, clock=clock)
    mount(app)
    app.state.console_dead_letters = lambda _request, _backend: letters
    with TestClient(app) as client:
        html = client.get("/console/dead-letters").text
    rows = dict(
        re.findall(r'<tr data-letter="([^"]+)" data-state="unresolved">(.*?)</tr>', html, re.S)
    )
    assert set(rows) == {"dlq:a", "rejected:timers.commands:0:4", "dlq:s"}
    assert "/dead-letters/dlq%3Aa/retry" in rows["dlq:a"]
    assert "Retry" not in rows["rejected:timers.commands:0:4"]
    assert "would be again unchanged" in rows["rejected:timers.commands:0:4"]
    assert 'href="/console/workflows/wf-1"' in rows["dlq:s"] and "Retry<" not in rows["dlq:s"]
    assert all("/discard" in row for row in rows.values())

"""A workflow step repaired and approved under a tenant's key (Debian's Chromium through
Playwright; the real timer, worker, orchestrator, history and API on loopback, keys required).

Tenant `acme` starts a workflow through the API with its key; its first step fails and the
instance fails. Signed in to the console with acme's key, the operator retries the failed step
(the instance reopens, the step succeeds on its next attempt), approves the sign-off that
follows, and watches the instance succeed. Tenant `globex`, signed in with its own key, does
not see the instance in its list, gets a 404 for its page, and its approve and retry are 404s
that change nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console.browser import chromium, screenshot, watched_page
from tests.console.stack import ConsoleStack, console_stack
from tickwheel.services.api.keys import create_key

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
pytest_plugins = ["tests.console.browser_fixtures"]  # `driver`, Debian's Chromium

WORKFLOW = "wf-acme-release"
WAIT_S = 120


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    home = tmp_path_factory.mktemp("tenant-workflow")
    with console_stack(kafka_bootstrap, home, runs=True,
                       env={"TICKWHEEL_API_AUTH": "keys"}) as running:  # fmt: skip
        yield running


def sign_in(page: Any, base: str, token: str, then: str) -> None:
    page.goto(f"{base}/console{then}")
    page.wait_for_url(re.compile(r"/console/sign-in\?next="))
    page.fill("#sign-in-key", token)
    page.click("#sign-in button")
    page.wait_for_url(re.compile(rf"/console{re.escape(then)}$"))


def step_state(page: Any, step: str) -> str | None:
    state: str | None = page.get_attribute(f'#steps tr[data-step="{step}"]', "data-state")
    return state


def reload_until(page: Any, done: Any, what: str) -> None:
    """Reload the page (JavaScript off: nothing refreshes it) until `done(page)`, bounded."""
    deadline = time.monotonic() + WAIT_S
    while not done(page):
        assert time.monotonic() < deadline, f"{what} within {WAIT_S} s: " + page.inner_text(
            "#steps"
        )
        page.wait_for_timeout(1000)
        page.reload()


def test_a_tenant_repairs_and_approves_its_workflow_and_another_tenant_cannot_see_it(
    stack: ConsoleStack, driver: Any
) -> None:
    bootstrap = stack.jobs.bootstrap
    scopes = ["read", "write", "approve"]
    acme = create_key("acme", scopes, bootstrap=bootstrap, now_ms=1)[0]
    globex = create_key("globex", scopes, bootstrap=bootstrap, now_ms=1)[0]
    body = {"definitionId": "acme-release", "definitionVersion": 1, "onFailure": "fail",
            "workflowId": WORKFLOW, "steps": [
                # Fails its first attempt; one attempt allowed, so the instance fails.
                {"id": "build", "type": "fail", "maxAttempts": 1,
                 "payload": {"mode": "retryable", "times": 1}},
                {"id": "sign-off", "type": "human_approval", "dependsOn": ["build"]},
                {"id": "ship", "type": "noop", "dependsOn": ["sign-off"]}]}  # fmt: skip
    # The API's door answers 401 until its key ring has read the new keys (within ~2 s).
    deadline = time.monotonic() + 60
    while True:
        started = httpx.post(f"{stack.base}/v1/workflows", json=body,
                             headers={"Authorization": f"Bearer {acme}"}, timeout=30)  # fmt: skip
        if started.status_code != 401:
            break
        assert time.monotonic() < deadline, "acme's key accepted within 60 s"
        time.sleep(0.5)
    assert started.status_code == 202, started.text
    url = f"{stack.base}/console/workflows/{WORKFLOW}"

    # Actions posted with JavaScript off (forms, post/redirect/get): the page's own refresh
    # cannot swap the form away between filling the note and pressing the button.
    with chromium(driver, javascript=False) as plain:
        page, watch = watched_page(plain)
        sign_in(page, stack.base, acme, "/workflows")
        assert page.inner_text("#signed-in") == "tenant acme"
        assert page.locator(f'a[href="/console/workflows/{WORKFLOW}"]').count() == 1
        page.goto(url)
        reload_until(page, lambda p: p.inner_text("#workflow-status") == "failed",
                     "the instance failing on its first step")  # fmt: skip
        assert step_state(page, "build") == "failed"
        page.fill("#note-build", "transient build failure")
        page.fill("#by-build", "ana")
        page.click('#steps tr[data-step="build"] button:has-text("Retry")')
        page.wait_for_url(re.compile(r"done=retry"))
        reload_until(page, lambda p: step_state(p, "sign-off") == "waiting",
                     "the retried build succeeding and the sign-off waiting")  # fmt: skip
        assert step_state(page, "build") == "succeeded"
        assert page.inner_text("#workflow-status") == "running"
        screenshot(page, "workflow-tenant-waiting")
        page.fill("#note-sign-off", "release notes checked")
        page.fill("#by-sign-off", "ana")
        page.click('#steps tr[data-step="sign-off"] button:has-text("Approve")')
        page.wait_for_url(re.compile(r"done=approve"))
        watch.assert_clean()
        cookies = {c["name"]: c["value"] for c in plain.cookies()}

    # With JavaScript on, the page refreshes itself (htmx) until the approval is folded.
    with chromium(driver) as browser:
        page, watch = watched_page(browser)
        sign_in(page, stack.base, acme, f"/workflows/{WORKFLOW}")
        deadline = time.monotonic() + WAIT_S
        while page.inner_text("#workflow-status") != "succeeded" or step_state(page, "ship") != (
            "succeeded"
        ):
            assert time.monotonic() < deadline, "succeeded: " + page.inner_text("#steps")
            page.wait_for_timeout(1000)
        events = page.inner_text("#workflow-events")
        assert "workflow_reopened" in events and "console:ana" in events
        screenshot(page, "workflow-tenant")
        watch.assert_clean()

    with chromium(driver, javascript=False) as other:
        page, watch = watched_page(other)
        sign_in(page, stack.base, globex, "/workflows")
        assert page.inner_text("#signed-in") == "tenant globex"
        assert WORKFLOW not in page.inner_text("main")
        watch.assert_clean()
        theirs = {c["name"]: c["value"] for c in other.cookies()}
    # Looked at outside the browser: a 404 page would be logged as a console error.
    seen = httpx.get(url, cookies=theirs, timeout=30)
    assert seen.status_code == 404 and "release notes checked" not in seen.text
    for action in ("sign-off/reject", "build/retry"):
        refused = httpx.post(f"{url}/steps/{action}", data={"note": "mine now", "by": "eve"},
                             cookies=theirs, timeout=30)  # fmt: skip
        assert refused.status_code == 404, refused.text
    after = httpx.get(url, cookies=cookies, timeout=30)
    assert after.status_code == 200 and "console:eve" not in after.text
    assert 'id="workflow-status">succeeded<' in after.text

"""The console watching real runs: a timer and a worker beside the history and the API, so an
execution triggered from the console is leased, fails, is retried and succeeds, and its page
shows each attempt as it appears (Debian's Chromium through Playwright)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.browser import screenshot, watched_page
from tests.console.stack import ConsoleStack, console_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
pytest_plugins = ["tests.console.browser_fixtures"]  # `driver` and `browser`, Debian's Chromium


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    with console_stack(kafka_bootstrap, tmp_path_factory.mktemp("runs"), runs=True) as running:
        yield running


def test_an_executions_attempts_appear_after_a_retry(stack: ConsoleStack, browser: Any) -> None:
    # Fails its first attempt (retryable), succeeds on the second.
    stack.jobs.create({"jobId": "flaky", "type": "fail", "cron": "0 0 1 1 *",
                       "payload": {"mode": "retryable", "times": 1}})  # fmt: skip
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/jobs/flaky")
    page.click("text=Trigger now")
    page.wait_for_url(re.compile(r"done=triggered"))
    deadline = time.monotonic() + 120
    link = page.locator("#executions a")
    while link.count() == 0:
        assert time.monotonic() < deadline, "no execution listed within 120 s"
        page.wait_for_timeout(1000)
        page.reload()
    link.first.click()
    page.wait_for_url(re.compile(r"/console/executions/"))
    # The page refreshes its timeline by itself (htmx): no reload from here on.
    attempts = page.locator("#attempts tbody tr")
    while not (attempts.count() == 2 and "succeeded" in attempts.nth(1).inner_text()):
        assert time.monotonic() < deadline, "attempts: " + page.inner_text("#attempts")
        page.wait_for_timeout(1000)
    assert "failed" in attempts.nth(0).inner_text()
    assert page.locator("svg.execution-timeline g.attempt").count() == 2
    page.reload()
    assert page.inner_text("#execution-status") == "succeeded"
    screenshot(page, "execution")
    watch.assert_clean()


def test_approving_a_workflow_step_in_the_console_lets_the_workflow_finish(
    stack: ConsoleStack, browser: Any
) -> None:
    from tickwheel.sdk.workflows import WorkflowsClient

    flows = WorkflowsClient(stack.jobs.bootstrap)
    flows.define({"definitionId": "console-approve", "version": 1, "steps": [
        {"id": "sign-off", "kind": "approval"},
        {"id": "after", "type": "noop", "dependsOn": ["sign-off"]},
    ]})  # fmt: skip
    workflow_id = flows.start("console-approve", {}, workflow_id="wf-console-approve")
    deadline = time.monotonic() + 120
    # The orchestrator folds the start on its own time: the page is opened once it has.
    while _step_state(flows, workflow_id, "sign-off") != "waiting":
        assert time.monotonic() < deadline, "sign-off never waited"
        time.sleep(0.5)
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/workflows/{workflow_id}")
    assert page.locator('#steps tr[data-step="sign-off"][data-state="waiting"]').count() == 1
    assert (
        page.locator('svg.workflow-dag g[data-step="sign-off"]').get_attribute("data-state")
        == "waiting"
    )
    screenshot(page, "workflow-waiting")
    page.fill("#note-sign-off", "checked the numbers")
    page.fill("#by-sign-off", "ana")
    page.click('#steps tr[data-step="sign-off"] button:has-text("Approve")')
    page.wait_for_url(re.compile(r"done=approve"))
    # The page refreshes itself (htmx) until the orchestrator has folded the approval.
    while (
        flows.get(workflow_id).status != "succeeded"
        or page.locator("#workflow-events td", has_text="console:ana").count() == 0
    ):
        assert time.monotonic() < deadline, "status " + flows.get(workflow_id).status
        page.wait_for_timeout(1000)
    assert flows.get(workflow_id).steps["after"]["status"] == "succeeded"
    page.reload()
    assert page.inner_text("#workflow-status") == "succeeded"
    screenshot(page, "workflow")
    watch.assert_clean()


def _step_state(flows: Any, workflow_id: str, step: str) -> str | None:
    from tickwheel.sdk.workflows import UnknownWorkflow

    try:
        return str(flows.get(workflow_id).steps.get(step, {}).get("status"))
    except UnknownWorkflow:
        return None


def test_acknowledging_an_alert_in_the_console_reaches_the_watchdog(
    stack: ConsoleStack, browser: Any
) -> None:
    # A permanent failure is dead-lettered; past a second the watchdog opens an alert. A job
    # every 2 s keeps the watchdog's event-time watermark moving.
    stack.jobs.create({"jobId": "ticker", "type": "noop", "cron": "*/2 * * * * *"})
    stack.jobs.create({"jobId": "doomed", "type": "fail", "cron": "0 0 1 1 *",
                       "payload": {"mode": "permanent"}})  # fmt: skip
    stack.jobs.trigger("doomed")
    page, watch = watched_page(browser)
    deadline = time.monotonic() + 150
    form = page.locator("form.ack-form")
    while True:
        page.goto(f"{stack.base}/console/alerts?state=open")
        if form.count() > 0:
            break
        assert time.monotonic() < deadline, "no open alert: " + page.inner_text("main")
        page.wait_for_timeout(1000)
    row = page.locator("tr[data-incident]", has=form).first
    incident_id = row.get_attribute("data-incident")
    screenshot(page, "alerts-open")
    row.locator("input[name=note]").fill("replaying the letter after the fix")
    row.locator("input[name=by]").fill("ana")
    row.locator("button", has_text="Acknowledge").click()
    page.wait_for_url(re.compile(r"done=acknowledgement"))
    acknowledged = page.locator(f'tr[data-incident="{incident_id}"] p.acknowledged')
    while acknowledged.count() == 0:
        assert time.monotonic() < deadline, "the watchdog never applied the acknowledgement"
        page.wait_for_timeout(1000)
        page.goto(f"{stack.base}/console/alerts")
    assert "acknowledged by ana: replaying the letter after the fix" in acknowledged.inner_text()
    screenshot(page, "alerts")
    stack.jobs.pause("ticker")
    watch.assert_clean()


def test_the_overview_shows_the_oldest_ready_execution_of_its_priority(
    stack: ConsoleStack, browser: Any
) -> None:
    # No worker serves the queue `nobody`: the request waits, ready, until the test ends.
    stack.jobs.create({"jobId": "unserved", "type": "noop", "cron": "0 0 1 1 *",
                       "queue": "nobody", "priority": "low"})  # fmt: skip
    stack.jobs.trigger("unserved")
    page, watch = watched_page(browser)
    deadline = time.monotonic() + 120
    entry = page.locator("#ready-by-priority li", has_text="unserved")
    while entry.count() == 0:
        assert time.monotonic() < deadline, "not shown as ready: " + page.inner_text("main")
        page.wait_for_timeout(1000)
        page.goto(f"{stack.base}/console")
    assert entry.inner_text().startswith("low: ")
    screenshot(page, "overview-ready")
    stack.jobs.delete("unserved")
    watch.assert_clean()


def test_the_demos_jobs_and_workflow_are_visible_in_the_console(
    stack: ConsoleStack, browser: Any
) -> None:
    # What `make run` creates (tickwheel.demo), created the same way.
    from tickwheel.demo import example_jobs
    from tickwheel.demo_workflows import DEFINITION, start_demo_workflow

    specs = example_jobs(int(time.time() * 1000))
    for spec in specs:
        stack.jobs.create(spec)
    _, workflow_id = start_demo_workflow(stack.jobs.bootstrap)
    page, watch = watched_page(browser)
    try:
        page.goto(f"{stack.base}/console/jobs?q=demo-")
        listed = {r.get_attribute("data-job") for r in page.locator("tr[data-job]").all()}
        assert listed == {s["jobId"] for s in specs}
        screenshot(page, "demo-jobs")
        link = page.locator(f'a[href="/console/workflows/{workflow_id}"]')
        deadline = time.monotonic() + 120
        while link.count() == 0:  # listed once the orchestrator has folded the start
            assert time.monotonic() < deadline, "demo workflow: " + page.inner_text("main")
            page.wait_for_timeout(1000)
            page.goto(f"{stack.base}/console/workflows")
        link.click()
        page.wait_for_url(re.compile(rf"/console/workflows/{workflow_id}$"))
        steps = [s["id"] for s in DEFINITION["steps"]]
        drawn = page.locator("svg.workflow-dag g.step")
        assert sorted(g.get_attribute("data-step") or "" for g in drawn.all()) == sorted(steps)
        assert [r.get_attribute("data-step") for r in page.locator("#steps tr[data-step]").all()
                ] == steps  # fmt: skip
        screenshot(page, "demo-workflow")
        watch.assert_clean()
    finally:
        for spec in specs:  # the demo's jobs fire every few seconds: not past this test
            stack.jobs.delete(spec["jobId"])

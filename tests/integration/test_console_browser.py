"""The web console in Debian's Chromium (Playwright), against a real API process and a real
history service on loopback, over the real broker: what an operator does, checked in what the
page shows and in what the broker then holds.

Every test fails if a page asks for anything outside loopback or logs a console error
(`tests/console/browser.py`), and writes a screenshot under `.tickwheel/screenshots/` (or `$TICKWHEEL_SCREENSHOTS_DIR`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.request import urlopen

import pytest

from tests.console.browser import chromium, screenshot, watched_page
from tests.console.stack import ConsoleStack, console_stack
from tests.integration.timer_harness import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
pytest_plugins = ["tests.console.browser_fixtures"]  # `driver` and `browser`, Debian's Chromium


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    """History and API processes, no timer: no slot of a job here ever fires."""
    with console_stack(kafka_bootstrap, tmp_path_factory.mktemp("console")) as running:
        yield running


def test_create_a_job_in_the_console_and_see_its_next_runs(
    stack: ConsoleStack, browser: Any
) -> None:
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/jobs/new")
    page.fill("#jobId", "nightly")
    page.fill("#cron", "0 2 * * *")
    page.fill("#timezone", "Europe/London")
    page.fill("#expectedMaxInterval", "26h")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/console/jobs/nightly\?done="))
    assert "created nightly (v1)" in page.inner_text("p.flash")
    rows = page.locator("#next-runs tbody tr")
    assert rows.count() == 10
    assert re.search(r"T02:00:00\+0[01]:00", rows.first.inner_text())  # local, London
    assert "02:00" in page.inner_text("#schedule-words")
    assert stack.jobs.get("nightly")["cron"] == "0 2 * * *"
    screenshot(page, "job")
    watch.assert_clean()


def test_a_slot_that_never_fired_shows_as_missing_in_the_grid(
    stack: ConsoleStack, browser: Any
) -> None:
    # Every 3 seconds, and no timer runs here: every owed slot is missing.
    stack.jobs.create({"jobId": "every-3s", "type": "noop", "cron": "*/3 * * * * *"})
    page, watch = watched_page(browser)
    deadline = time.monotonic() + 90
    while True:
        page.goto(f"{stack.base}/console/jobs/every-3s")
        if page.locator("rect.slot-missing").count() > 0:
            break
        assert time.monotonic() < deadline, "no missing cell within 90 s: " + page.inner_text(
            "main"
        )
        page.wait_for_timeout(1000)
    missing = int(page.inner_text('[data-status-count="missing"]'))
    assert missing >= 1
    assert page.inner_text('[data-status-count="fired"]') == "0"
    assert page.locator('#problem-slots tr[data-status="missing"]').count() == min(missing, 200)
    screenshot(page, "job-grid-missing")
    watch.assert_clean()


def test_pausing_without_a_reason_is_refused(stack: ConsoleStack, browser: Any) -> None:
    stack.jobs.create({"jobId": "no-reason", "type": "noop", "cron": "0 3 * * *"})
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/jobs/no-reason")
    page.click("#pause-form button")  # the browser refuses an empty required field
    assert page.url.endswith("/console/jobs/no-reason")
    assert page.evaluate("document.querySelector('#pause-reason').validity.valueMissing")
    # Past the browser's check (a hand-made request), the server refuses it too.
    page.eval_on_selector("#pause-reason", "e => { e.required = false; e.value = '   '; }")
    with page.expect_response(lambda r: r.url.endswith("/pause")) as answer:
        page.click("#pause-form button")
    assert answer.value.status == 422
    assert "reason: required" in page.inner_text("#error")
    watch.errors = [e for e in watch.errors if "422" not in e]  # the refusal itself
    record = stack.jobs.get("no-reason")
    assert record["version"] == 1 and record["enabled"]
    screenshot(page, "pause-refused")
    watch.assert_clean()


def test_an_edit_of_a_job_that_moved_on_shows_the_version_conflict_dialog(
    stack: ConsoleStack, browser: Any
) -> None:
    stack.jobs.create({"jobId": "contested", "type": "noop", "cron": "0 4 * * *"})
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/jobs/contested")
    stack.jobs.update("contested", {"cron": "15 4 * * *"})  # someone else, meanwhile: v2
    # The dialog lists what changed from the history store, which the sink fills a moment
    # later: wait (in another request, the open page keeps its version 1) until v2 is there.
    assert wait_until(
        lambda: (
            "<strong>v2</strong>"
            in urlopen(f"{stack.base}/console/jobs/contested", timeout=10).read().decode()
        ),
        60,
    ), "the history never recorded v2"
    page.fill("#edit-cron", "0 5 * * *")
    with page.expect_response(lambda r: r.url.endswith("/edit")) as answer:
        page.click("#edit-form button")
    assert answer.value.status == 409
    dialog = page.locator("dialog#version-conflict")
    assert dialog.is_visible()
    assert "You started from version 1; the job is now at version 2" in dialog.inner_text()
    assert 'v2: cron "0 4 * * *" → "15 4 * * *"' in dialog.inner_text()
    assert stack.jobs.get("contested")["cron"] == "15 4 * * *"
    screenshot(page, "version-conflict")
    watch.errors = [e for e in watch.errors if "409" not in e]
    page.click("dialog#version-conflict button")
    page.wait_for_url(re.compile(r"done=saved"))
    assert stack.jobs.get("contested")["cron"] == "0 5 * * *"
    assert stack.jobs.get("contested")["version"] == 3
    watch.assert_clean()


def test_bulk_pause_of_three_jobs_with_a_reason_bumps_each_version_once(
    stack: ConsoleStack, browser: Any
) -> None:
    names = ["bulk-a", "bulk-b", "bulk-c"]
    for name in [*names, "bulk-untouched"]:
        stack.jobs.create({"jobId": name, "type": "noop", "cron": "0 6 * * *"})
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/jobs?q=bulk-")
    for name in names:
        page.check(f'input[name=job][value="{name}"]')
    page.fill("#bulk-reason", "warehouse migration")
    page.click("button[name=action][value=pause]")
    page.wait_for_url(re.compile(r"done=paused"))
    assert "paused 3" in page.inner_text("p.flash")
    for name in names:
        record = stack.jobs.get(name)
        assert record["version"] == 2 and not record["enabled"]
        assert record["labels"]["tickwheel/paused-reason"] == "warehouse migration"
    assert stack.jobs.get("bulk-untouched")["version"] == 1
    # The page itself shows the three bumps: each paused row at v2, the untouched one at v1.
    for name in names:
        row = page.locator(f'tr[data-job="{name}"]')
        assert row.get_attribute("data-status") == "paused"
        assert row.locator("small").inner_text() == "v2"
    assert page.locator('tr[data-job="bulk-untouched"] small').inner_text() == "v1"
    screenshot(page, "jobs")
    watch.assert_clean()


@pytest.mark.parametrize(
    ("path", "name"),
    [("", "overview"), ("/alerts", "alerts-none"), ("/dead-letters", "dead-letters"),
     ("/jobs/new", "new-job"), ("/disabled", "disabled"), ("/workflows", "workflows"),
     ("/operations", "operations"), ("/admin", "admin-keys")],
)  # fmt: skip
def test_every_page_renders_with_no_console_error_and_nothing_from_outside(
    stack: ConsoleStack, browser: Any, path: str, name: str
) -> None:
    page, watch = watched_page(browser)
    response = page.goto(f"{stack.base}/console{path}")
    assert response is not None and response.status == 200
    assert page.locator("main h1").count() == 1
    page.wait_for_load_state("networkidle")
    screenshot(page, name)
    watch.assert_clean()


# Each page and what it lists when it has read its facts (a heading and a table or its "none").
READABLE = [("", "#figures-h"), ("/jobs", "table.jobs"), ("/jobs/js-off-read", "#next-runs"),
            ("/alerts", "main p"), ("/dead-letters", "main p"), ("/disabled", "main p, main table"),
            ("/workflows", "main p, main table"), ("/operations", "#timer-partitions"),
            ("/jobs/new", "main form")]  # fmt: skip


def test_with_javascript_off_every_page_reads(stack: ConsoleStack, driver: Any) -> None:
    if "js-off-read" not in {j["jobId"] for j in stack.jobs.list()}:
        stack.jobs.create({"jobId": "js-off-read", "type": "noop", "cron": "0 9 * * *"})
    with chromium(driver, javascript=False) as plain:
        page, watch = watched_page(plain)
        for path, content in READABLE:
            response = page.goto(f"{stack.base}/console{path}")
            assert response is not None and response.status == 200, path
            assert page.locator("main h1").count() == 1, path
            assert page.locator(content).count() >= 1, f"{path}: {page.inner_text('main')[:500]}"
        watch.assert_clean()


def test_the_guard_fails_a_page_that_reaches_off_loopback_or_logs_an_error(browser: Any) -> None:
    # The check every browser test ends with must itself be able to fail.
    page, watch = watched_page(browser)
    page.set_content('<img src="http://example.invalid/pixel.png"><p>x</p>'
                     '<script>console.error("boom")</script>')  # fmt: skip
    page.wait_for_load_state("load")
    assert watch.external == ["http://example.invalid/pixel.png"]
    assert any("boom" in e for e in watch.errors)
    with pytest.raises(AssertionError, match="outside loopback"):
        watch.assert_clean()


def test_with_javascript_off_pages_read_and_a_pause_still_works(
    stack: ConsoleStack, driver: Any
) -> None:
    stack.jobs.create({"jobId": "no-js", "type": "noop", "cron": "0 7 * * *"})
    with chromium(driver, javascript=False) as plain:
        page, watch = watched_page(plain)
        page.goto(f"{stack.base}/console/jobs?q=no-js")
        assert page.locator('tr[data-job="no-js"] .chip').inner_text() == "ok"
        page.click('a[href="/console/jobs/no-js"]')
        assert page.locator("#next-runs tbody tr").count() == 10
        page.fill("#pause-reason", "testing without JavaScript")
        page.click("#pause-form button")
        page.wait_for_url(re.compile(r"done=paused"))
        assert page.inner_text("#job-status") == "paused"
        watch.assert_clean()
    assert stack.jobs.get("no-js")["labels"]["tickwheel/paused-reason"] == (
        "testing without JavaScript"
    )


def test_the_job_actions_are_reachable_and_usable_from_the_keyboard(
    stack: ConsoleStack, browser: Any
) -> None:
    stack.jobs.create({"jobId": "keys-only", "type": "noop", "cron": "0 8 * * *"})
    page, watch = watched_page(browser)
    page.goto(f"{stack.base}/console/jobs/keys-only")
    # Tab from the top of the page to the trigger button, then press Enter: no mouse.
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Trigger now":
            break
    else:
        pytest.fail("Tab never reached the Trigger now button")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"done=triggered"))
    assert "triggered" in page.inner_text("p.flash")
    watch.assert_clean()

"""The console's operator actions end to end (Debian's Chromium through Playwright, the real
timer, worker, orchestrator, watchdog, history and API on loopback):

- an execution out of attempts is dead-lettered, its job is fixed, a click on Retry runs it
  again through the timer and the worker until it succeeds; a bulk discard, posted with
  JavaScript off, resolves the rest with its reason;
- a running execution is cancelled from its page, then retried as a new execution;
- the overview shows who owns each timer partition, the worker groups' and the history sink's
  consumer lag, and the watchdog's lag.
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
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.core.identity import execution_id
from tickwheel.sdk.dead_letters import DeadLettersClient
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
pytest_plugins = ["tests.console.browser_fixtures"]  # `driver`, Debian's Chromium


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    with console_stack(kafka_bootstrap, tmp_path_factory.mktemp("dlq"), runs=True) as running:
        yield running


def unresolved_of(stack: ConsoleStack, job_ids: set[str], timeout: float) -> dict[str, str]:
    """job id → its unresolved dead letter's id, once every job in `job_ids` has one."""
    letters = DeadLettersClient(stack.jobs.bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        found = {d["job_id"]: d["dead_letter_id"] for d in letters.letters(include_resolved=False)
                 if d.get("job_id") in job_ids}  # fmt: skip
        if set(found) == job_ids:
            return found
        assert time.monotonic() < deadline, f"dead letters within {timeout} s: {found}"
        time.sleep(0.5)


def test_retry_reruns_a_fixed_job_and_a_bulk_discard_resolves_the_rest(
    stack: ConsoleStack, driver: Any
) -> None:
    for job_id in ("doomed-a", "doomed-b"):
        stack.jobs.create({"jobId": job_id, "type": "fail", "cron": "0 0 1 1 *",
                           "maxAttempts": 1, "payload": {"mode": "retryable"}})  # fmt: skip
        stack.jobs.trigger(job_id)
    letters = unresolved_of(stack, {"doomed-a", "doomed-b"}, 120)
    junk = dead_letter_record("jobs.definitions", 0, 7, "junk", b"\x00not avro", "bad magic",
                              "undecodable", int(time.time() * 1000))  # fmt: skip
    producer = EventProducer(stack.jobs.bootstrap)
    producer.send(topic_name("executions.dlq"), "junk", encode("DeadLetter", junk))
    producer.flush()
    # The cause is fixed: from now on the job succeeds.
    stack.jobs.update("doomed-a", {"payload": {"mode": "retryable", "times": 0}})

    with chromium(driver) as browser:
        page, watch = watched_page(browser)
        page.goto(f"{stack.base}/console/dead-letters")
        rows = page.locator("#dead-letters tbody tr")
        assert rows.count() == 3, page.inner_text("#dead-letters")
        junk_row = page.locator(f'tr[data-letter="{junk["dead_letter_id"]}"]')
        assert "could not be decoded" in junk_row.inner_text()
        assert junk_row.locator("button", has_text="Retry").count() == 0
        screenshot(page, "dead-letters")
        page.locator(f'tr[data-letter="{letters["doomed-a"]}"] button', has_text="Retry").click()
        page.wait_for_url(re.compile(r"done=retried"))
        assert page.locator(f'tr[data-letter="{letters["doomed-a"]}"]').count() == 0
        watch.assert_clean()

    with chromium(driver, javascript=False) as plain:
        page, watch = watched_page(plain)
        page.goto(f"{stack.base}/console/dead-letters")
        page.check(f'input[value="{letters["doomed-b"]}"]')
        page.check(f'input[value="{junk["dead_letter_id"]}"]')
        page.fill("#bulk-reason", "known junk")
        page.click("text=Discard selected")
        page.wait_for_url(re.compile(r"done=discarded"))
        assert "No unresolved dead letter" in page.inner_text("main")
        page.goto(f"{stack.base}/console/dead-letters?state=resolved")
        states = {r.get_attribute("data-letter"): r.get_attribute("data-state")
                  for r in page.locator("#dead-letters tbody tr").all()}  # fmt: skip
        assert states == {letters["doomed-a"]: "retried", letters["doomed-b"]: "discarded",
                          junk["dead_letter_id"]: "discarded"}  # fmt: skip
        assert "known junk" in page.inner_text(f'tr[data-letter="{junk["dead_letter_id"]}"]')
        screenshot(page, "dead-letters-resolved")
        watch.assert_clean()

    # The retried execution runs through the timer and the worker and succeeds; its page is
    # looked at once the history has it (a 404 on the way would be a console error).
    [retried] = [d for d in DeadLettersClient(stack.jobs.bootstrap).letters()
                 if d["dead_letter_id"] == letters["doomed-a"]]  # fmt: skip
    execution = retried["resolution"]["retry_execution_id"]
    deadline = time.monotonic() + 120
    while 'id="execution-status">succeeded<' not in _text(
        f"{stack.base}/console/executions/{execution}"
    ):
        assert time.monotonic() < deadline, "the retried execution succeeded within 120 s"
        time.sleep(1)
    with chromium(driver) as browser:
        page, watch = watched_page(browser)
        page.goto(f"{stack.base}/console/dead-letters?state=resolved")
        page.locator(f'tr[data-letter="{letters["doomed-a"]}"] a', has_text="new execution").click()
        page.wait_for_url(re.compile(rf"/console/executions/{execution}"))
        assert page.inner_text("#execution-status") == "succeeded"
        page.goto(f"{stack.base}/console")
        assert page.inner_text("#oldest-dead-letter") == "none unresolved"
        watch.assert_clean()


def _text(url: str) -> str:
    response = httpx.get(url, timeout=10)
    return response.text if response.status_code == 200 else ""


def wait_for_page(url: str, marker: str, timeout: float, what: str) -> None:
    """Until the page at `url` answers 200 with `marker` in it (looked at outside the browser,
    so a 404 on the way is no console error)."""
    deadline = time.monotonic() + timeout
    while marker not in _text(url):
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(1)


def test_an_execution_is_cancelled_then_retried_from_its_page(
    stack: ConsoleStack, driver: Any
) -> None:
    created = stack.jobs.create({"jobId": "sleepy", "type": "sleep", "cron": "0 0 1 1 *",
                                 "maxAttempts": 1, "payload": {"seconds": 120}})  # fmt: skip
    command = stack.jobs.trigger("sleepy")
    running = execution_id("sleepy", created["version"], command["requested_at"])
    url = f"{stack.base}/console/executions/{running}"
    wait_for_page(url, 'id="execution-status">running<', 120, "the execution running")
    with chromium(driver) as browser:
        page, watch = watched_page(browser)
        page.goto(url)
        assert page.locator("#retry-form").count() == 0  # a running execution is cancelled
        page.fill("#cancel-reason", "wrong day")
        page.click("text=Cancel this execution")
        page.wait_for_url(re.compile(r"done=cancel"))
        deadline = time.monotonic() + 120
        while page.inner_text("#execution-status") != "cancelled":
            assert time.monotonic() < deadline, "cancelled within 120 s"
            page.wait_for_timeout(1000)
            page.reload()
        screenshot(page, "execution-cancelled")
        # Fixed (it no longer sleeps), then retried: a new execution that succeeds.
        stack.jobs.update("sleepy", {"payload": {"seconds": 0}})
        page.fill("#retry-reason", "shorter sleep")
        page.click("text=Retry as a new execution")
        page.wait_for_url(re.compile(r"retried="))
        retried = page.locator("#retried a").inner_text()
        assert retried != running
        wait_for_page(f"{stack.base}/console/executions/{retried}",
                      'id="execution-status">succeeded<', 120, "the retried execution succeeding")  # fmt: skip
        page.click("#retried a")
        page.wait_for_url(re.compile(rf"/executions/{retried}$"))
        assert page.inner_text("#execution-status") == "succeeded"
        assert (
            page.locator("#cancel-form").count() == 0 and page.locator("#retry-form").count() == 0
        )
        watch.assert_clean()


def test_the_overview_shows_timer_partitions_worker_groups_and_the_watchdog(
    stack: ConsoleStack, driver: Any
) -> None:
    # The watchdog commits its first checkpoint once it has read an input: a job of its own,
    # so that the test does not lean on the module's earlier tests to have made one.
    stack.jobs.create({"jobId": "overview-probe", "type": "noop", "cron": "0 0 1 1 *"})
    wait_for_page(f"{stack.base}/console/operations", 'id="watchdog-lag"', 120,
                  "the watchdog's first checkpoint")  # fmt: skip
    with chromium(driver) as browser:
        page, watch = watched_page(browser)
        page.goto(f"{stack.base}/console")
        # Pulled in by htmx once the page has loaded.
        page.wait_for_selector("#timer-partitions", timeout=30_000)
        partitions = page.locator("#timer-partitions tbody tr")
        assert partitions.count() == 6
        owned = page.locator('#timer-partitions tr[data-owned="yes"]').count()
        assert owned == 6, page.inner_text("#timer-partitions")
        groups = page.inner_text("#worker-groups")
        assert "default" in groups and "stable" in groups and "/high" in groups
        # Each worker group and the history sink's states its lag, from committed offsets.
        for table in ("#worker-groups", "#service-groups"):
            rows = page.locator(f"{table} tbody tr").all()
            assert rows and all(
                re.fullmatch(r"\d+", r.get_attribute("data-lag") or "") for r in rows
            ), page.inner_text(table)
            assert all(re.search(r"caught up|\d+ behind", r.inner_text()) for r in rows)
        assert "history sink" in page.inner_text("#service-groups")
        assert "behind now" in page.inner_text("#watchdog-lag")
        screenshot(page, "overview-operations")
        watch.assert_clean()
    with chromium(driver, javascript=False) as plain:
        page, watch = watched_page(plain)
        page.goto(f"{stack.base}/console")
        page.click("text=Timer partitions (owner, last checkpoint)")
        assert page.locator("#timer-partitions tbody tr").count() == 6
        watch.assert_clean()

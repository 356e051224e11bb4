"""Dead letters in the console, end to end (Debian's Chromium through Playwright, the real
timer, worker, history and API on loopback): an execution out of attempts is dead-lettered,
its job is fixed, a click on Retry runs it again through the timer and the worker until it
succeeds; a bulk discard, posted with JavaScript off, resolves the rest with its reason."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console.browser import chromium, playwright, screenshot, watched_page
from tests.console.stack import ConsoleStack, console_stack
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.dead_letters import dead_letter_record
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.sdk.dead_letters import DeadLettersClient
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

if shutil.which("chromium") is None:
    pytest.fail(
        "Debian's chromium is not installed: run `make setup` (or apt-get install chromium)",
        pytrace=False,
    )


@pytest.fixture(scope="module")
def stack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    with console_stack(kafka_bootstrap, tmp_path_factory.mktemp("dlq"), runs=True) as running:
        yield running


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with playwright() as running:
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

"""The console with API keys required (Debian's Chromium through Playwright, the real history
and API on loopback): each tenant signs in with its key and sees only its own jobs, alerts and
dead letters; the operators' key runs the admin page — a key issued with its token shown
once, revoked, and a signed test delivery to the watchdog's webhook sink."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import httpx
import pytest
from standardwebhooks import Webhook

from tests.console.browser import chromium, screenshot, watched_page
from tests.console.stack import ConsoleStack, console_stack
from tickwheel.adapters.avro import encode
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.core.timer.execution_records import execution_dead_letter
from tickwheel.services.api.keys import create_key, list_keys
from tickwheel.topology import topic_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
pytest_plugins = ["tests.console.browser_fixtures"]  # `driver`, Debian's Chromium

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class Receiver(BaseHTTPRequestHandler):
    """A webhook receiver on loopback that keeps what it was sent."""

    received: ClassVar[list[tuple[dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        Receiver.received.append((dict(self.headers.items()), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture(scope="module")
def receiver() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


@pytest.fixture(scope="module")
def stack(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, receiver: str
) -> Iterator[ConsoleStack]:
    env = {"TICKWHEEL_API_AUTH": "keys", "TICKWHEEL_WATCHDOG_WEBHOOKS": receiver,
           "TICKWHEEL_WATCHDOG_WEBHOOK_SECRET": SECRET,
           "TICKWHEEL_WATCHDOG_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}  # fmt: skip
    with console_stack(kafka_bootstrap, tmp_path_factory.mktemp("keys"), env=env) as running:
        yield running


def publish(bootstrap: str, topic: str, record: str, key: str, value: dict[str, Any]) -> None:
    producer = EventProducer(bootstrap)
    producer.send(topic_name(topic), key, encode(record, value))
    producer.flush()


def incident(tenant: str, job_id: str) -> dict[str, Any]:
    details = {"incident_id": f"inc-{tenant}", "fingerprint": f"job_absent:{job_id}",
               "transition": "opened", "subject": job_id, "opened_at": 1000,
               "resolved_at": None, "evidence": {}}  # fmt: skip
    return {"alert_id": f"inc-{tenant}:1", "event_time": 1000, "kind": "job_absent",
            "severity": "critical", "job_id": job_id, "tenant_id": tenant,
            "message": f"{job_id} is absent", "details": json.dumps(details)}  # fmt: skip


def sign_in(page: Any, base: str, token: str) -> None:
    page.goto(f"{base}/console/jobs")
    page.wait_for_url(re.compile(r"/console/sign-in\?next="))
    screenshot(page, "sign-in")
    page.fill("#sign-in-key", token)
    page.click("#sign-in button")
    page.wait_for_url(re.compile(r"/console/jobs$"))


def test_each_tenant_sees_only_its_own(stack: ConsoleStack, driver: Any) -> None:
    bootstrap = stack.jobs.bootstrap
    tokens = {}
    for tenant in ("acme", "globex"):
        job_id = f"{tenant}-nightly"
        stack.jobs.create({"jobId": job_id, "type": "noop", "cron": "0 2 * * *",
                           "tenantId": tenant})  # fmt: skip
        publish(bootstrap, "alerts", "Alert", f"inc-{tenant}", incident(tenant, job_id))
        request = {"execution_id": f"exec-{tenant}", "job_id": job_id, "priority": "normal",
                   "payload": "{}"}  # fmt: skip
        letter = execution_dead_letter(request, 3, "max_attempts_exhausted", "boom", 1_000)
        publish(bootstrap, "executions.dlq", "DeadLetter", job_id, letter)
        tokens[tenant] = create_key(tenant, ["read", "write"], bootstrap=bootstrap, now_ms=1)[0]

    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        with chromium(driver) as browser:
            page, watch = watched_page(browser)
            sign_in(page, stack.base, tokens[tenant])
            assert page.inner_text("#signed-in") == f"tenant {tenant}"
            # No link to the operators' page, which answers a tenant's key 403 (below).
            assert page.locator('nav a[href="/console/admin"]').count() == 0
            listed = [r.get_attribute("data-job") for r in page.locator("tr[data-job]").all()]
            assert listed == [f"{tenant}-nightly"]
            page.goto(f"{stack.base}/console/alerts")
            alerts = page.inner_text("main")
            assert f"{tenant}-nightly" in alerts and f"{other}-nightly" not in alerts
            page.goto(f"{stack.base}/console/dead-letters")
            letters = [
                r.get_attribute("data-letter") for r in page.locator("tr[data-letter]").all()
            ]
            assert letters == [f"dlq:exec-{tenant}"]
            # A read-and-write key reads its dead letters but is offered no action on them.
            assert page.locator("#dead-letters button").count() == 0
            screenshot(page, f"signed-in-{tenant}")
            watch.assert_clean()
            # Another tenant's job is as unknown as a job that does not exist.
            cookies = {c["name"]: c["value"] for c in browser.cookies()}
            assert [c for c in browser.cookies() if c["httpOnly"] and c["sameSite"] == "Strict"]
            other_job = httpx.get(f"{stack.base}/console/jobs/{other}-nightly", cookies=cookies)
            assert other_job.status_code == 404
            # Writing keys of a tenant are not operators: no admin page, no dead-letter changes.
            assert httpx.get(f"{stack.base}/console/admin", cookies=cookies).status_code == 403
    refused = httpx.post(f"{stack.base}/console/sign-in", data={"key": "tw_not_a_key"})
    assert refused.status_code == 401 and "not valid" in refused.text


def test_the_operators_issue_and_revoke_a_key_and_test_a_webhook(
    stack: ConsoleStack, driver: Any
) -> None:
    bootstrap = stack.jobs.bootstrap
    operator = create_key("default", ["admin"], bootstrap=bootstrap, now_ms=1)[0]
    with chromium(driver) as browser:
        page, watch = watched_page(browser)
        sign_in(page, stack.base, operator)
        assert page.locator('nav a[href="/console/admin"]').count() == 1
        page.goto(f"{stack.base}/console/admin")
        page.fill("#key-tenant", "initech")
        page.check('input[name="scope"][value="write"]')
        page.fill("#key-description", "nightly exports")
        page.click("text=Issue key")
        token = page.inner_text("#issued-token")
        assert re.fullmatch(r"tw_[0-9a-f]{16}_[A-Za-z0-9_-]{43}_[0-9a-f]{8}", token)
        [issued] = [k for k in list_keys(bootstrap) if k["tenant_id"] == "initech"]
        assert set(issued["scopes"]) == {"read", "write"} and token not in json.dumps(issued)
        screenshot(page, "admin-key-issued")
        page.goto(f"{stack.base}/console/admin")
        assert token not in page.content()  # shown once, never again
        page.locator(f'tr[data-key="{issued["key_id"]}"] button', has_text="Revoke").click()
        page.wait_for_url(re.compile(r"done=revoked"))
        assert page.get_attribute(f'tr[data-key="{issued["key_id"]}"]', "data-state") == "revoked"
        deadline = time.monotonic() + 30
        while (
            httpx.get(
                f"{stack.base}/v1/jobs", headers={"Authorization": f"Bearer {token}"}
            ).status_code
            != 401
        ):
            assert time.monotonic() < deadline, "the revoked key refused within 30 s"
            time.sleep(0.5)

        Receiver.received.clear()
        page.click("text=Send a test delivery")
        page.wait_for_url(re.compile(r"done=test"))
        assert "delivered 204" in page.inner_text(".flash")
        [(headers, body)] = Receiver.received
        sent = json.loads(body)
        assert sent["type"] == "alert.test"
        lowered = {k.lower(): v for k, v in headers.items()}
        assert lowered["webhook-id"].startswith("test-")
        Webhook(SECRET).verify(body, lowered)  # raises unless signed with the sink's secret
        screenshot(page, "admin")
        watch.assert_clean()

"""The watchdog's acknowledgements and signed webhooks against the real broker, with real
timer, worker and watchdog processes and the `tickwheel` CLI in subprocesses.

A loopback receiver verifies every request with the `standardwebhooks` library and refuses
the first delivery of each transition (503), so each one is retried: it must see every
transition the `alerts` topic holds, duplicates only with the same webhook id and body.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from tests.integration.test_watchdog import env_for, spec
from tests.integration.timer_harness import ServiceProcess, publish_jobs, wait_until
from tickwheel.adapters.kafka.producer import EventProducer
from tickwheel.sdk.alerts import incidents, read_transitions
from tickwheel.topology import topic_name

pytestmark = pytest.mark.integration

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class Receiver:
    """Records every request: (webhook-id, verified, body); answers 503 to each id's first."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, dict[str, Any]]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k: v for k, v in self.headers.items()}
                try:
                    Webhook(SECRET).verify(body, headers)
                    verified = True
                except WebhookVerificationError:
                    verified = False
                webhook_id = headers.get("webhook-id", "")
                with receiver.lock:
                    first = all(seen_id != webhook_id for seen_id, _, _ in receiver.seen)
                    receiver.seen.append((webhook_id, verified, json.loads(body or b"{}")))
                self.send_response(503 if first else 204)
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def snapshot(self) -> list[tuple[str, bool, dict[str, Any]]]:
        with self.lock:
            return list(self.seen)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickwheel.cli", *args],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.chaos
def test_an_acknowledged_incident_reaches_a_verifying_receiver_with_every_transition(
    kafka_bootstrap: str, applied_topology: str, tmp_path: Path, receiver: Receiver
) -> None:
    env = env_for(kafka_bootstrap, applied_topology)
    env.update(
        TICKWHEEL_WATCHDOG_WEBHOOKS=receiver.url,
        TICKWHEEL_WATCHDOG_WEBHOOK_SECRET=SECRET,
        TICKWHEEL_WATCHDOG_WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
        TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_S="0.2",
        TICKWHEEL_WATCHDOG_WEBHOOK_BACKOFF_CAP_S="1",
    )
    timer = ServiceProcess("timer", tmp_path / "timer.log", env)
    # The worker serves normal priority only: the low-priority job fires and never starts.
    worker = ServiceProcess("w1", tmp_path / "w1.log", env, "worker",
                            ("--concurrency", "2", "--priority", "normal"))  # fmt: skip
    watchdog = ServiceProcess("wd", tmp_path / "wd.log", env, "watchdog")
    stuck = f"{applied_topology}stuck"
    try:
        timer.start()
        worker.start()
        watchdog.start()
        publish_jobs(kafka_bootstrap, [spec(stuck, priority="low")], int(time.time() * 1000))

        def open_incident() -> dict[str, Any] | None:
            found = incidents(read_transitions(kafka_bootstrap))
            return next((i for i in found if i["job_id"] == stuck and i["state"] == "open"), None)

        assert wait_until(lambda: open_incident() is not None, 40, 1.0)
        incident = open_incident()
        assert incident is not None
        refused = cli(env, "alerts", "ack", "no-such-incident", "--note", "x")
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
        acked = cli(env, "alerts", "ack", incident["incident_id"], "--note", "looking into it",
                    "--by", "ana")  # fmt: skip
        assert acked.returncode == 0, acked.stderr

        def acknowledged() -> bool:
            got = cli(env, "alerts", "get", incident["incident_id"], "--json")
            return got.returncode == 0 and json.loads(got.stdout).get("acknowledged") is not None

        assert wait_until(acknowledged, 30, 1.0)
        shown = json.loads(cli(env, "alerts", "get", incident["incident_id"], "--json").stdout)
        assert shown["acknowledged"]["by"] == "ana"
        assert shown["acknowledged"]["note"] == "looking into it"
        assert shown["state"] == "open"
        # Deleting the job resolves the incident (after the resolve window of quiet).
        producer = EventProducer(kafka_bootstrap)
        producer.send(topic_name("jobs.definitions"), stuck, None)
        producer.flush()

        def resolved_and_delivered() -> bool:
            found = [i for i in incidents(read_transitions(kafka_bootstrap))
                     if i["incident_id"] == incident["incident_id"]]  # fmt: skip
            if not found or found[0]["state"] != "resolved":
                return False
            wanted = {t["alert_id"] for t in found[0]["transitions"]}
            # Delivered: refused once (503), then accepted on a retry, so seen twice at least.
            delivered = {i for i, n in _counts(receiver.snapshot()).items() if n >= 2}
            return wanted <= delivered

        assert wait_until(resolved_and_delivered, 40, 1.0), receiver.snapshot()
    finally:
        for process in (watchdog, worker, timer):
            process.stop()
    written = {t["alert_id"]: t for t in read_transitions(kafka_bootstrap)}
    seen = receiver.snapshot()
    assert seen and all(ok for _, ok, _ in seen), seen  # every signature verified
    assert {webhook_id for webhook_id, _, _ in seen} == set(written)  # each transition, no other
    bodies: dict[str, dict[str, Any]] = {}
    for webhook_id, _, body in seen:
        # A duplicate (here: the retry after a 503) carries the same id and the same body.
        assert bodies.setdefault(webhook_id, body) == body
        assert body["data"]["alert_id"] == webhook_id
    kinds = [bodies[t]["type"] for t in sorted(written, key=lambda a: written[a]["event_time"])]
    # Opened first, resolved last, the acknowledgement between (and perhaps the escalation).
    assert kinds[0] == "alert.opened" and kinds[-1] == "alert.resolved", kinds
    assert "alert.acknowledged" in kinds and set(kinds[1:-1]) <= {"alert.acknowledged",
                                                                  "alert.updated"}, kinds  # fmt: skip
    assert all(n >= 2 for n in _counts(seen).values())  # each was retried after the 503


def _counts(seen: list[tuple[str, bool, dict[str, Any]]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for webhook_id, _, _ in seen:
        counts[webhook_id] = counts.get(webhook_id, 0) + 1
    return counts

"""The door's pure parts: tokens, scopes, token buckets, fingerprints, the SSE generator.

The broker-backed behaviour (keys read from `api.keys`, replays after a restart, 401/403/404,
429, 413, audit) is in tests/integration/test_api_door.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tickwheel.errors import InvalidInput
from tickwheel.services.api.door import needed_scope
from tickwheel.services.api.event_streams import timeline_events
from tickwheel.services.api.idempotency import derived_job_id, fingerprint
from tickwheel.services.api.keys import granted, new_key, parse_token, token_hash
from tickwheel.services.api.limits import RateSettings, TokenBuckets
from tickwheel.services.api.routes_streams import finished


def test_a_token_carries_its_key_id_and_refuses_a_typo_offline() -> None:
    token, record = new_key("acme", ["write"], now_ms=5, token_bytes=lambda n: bytes(range(n)))
    assert token.startswith("tw_") and parse_token(token) == record["key_id"]
    assert record["secret_sha256"] == token_hash(token) and token not in json.dumps(record)
    for position in (5, 25, len(token) - 2):
        typo = token[:position] + ("A" if token[position] != "A" else "B") + token[position + 1 :]
        assert parse_token(typo) is None, position
    assert parse_token("Bearer " + token) is None


def test_keys_refuse_unknown_scopes_and_bad_tenants() -> None:
    with pytest.raises(InvalidInput, match="accepted: one or more of"):
        new_key("acme", ["root"], now_ms=1)
    with pytest.raises(InvalidInput, match="tenant"):
        new_key("Acme Corp", ["read"], now_ms=1)


def test_scopes_imply_the_lesser_ones_and_routes_need_the_right_one() -> None:
    assert granted(["admin"]) == {"admin", "write", "read"}
    assert granted(["read"]) == {"read"} and "approve" not in granted(["admin"])
    assert needed_scope("GET", "/v1/jobs") == "read"
    assert needed_scope("PATCH", "/v1/jobs/x") == "write"
    assert needed_scope("POST", "/v1/dead-letters/x/retry") == "admin"


def test_a_bucket_refills_at_its_rate_and_never_beyond_its_burst() -> None:
    buckets = TokenBuckets(RateSettings(reads_per_s=2, read_burst=3))
    assert [buckets.take("t", "read", 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("t", "read", 0.0) == pytest.approx(0.5)
    assert buckets.take("t", "read", 0.5) == 0.0  # one token back after 1/rate s
    assert buckets.take("other", "read", 0.5) == 0.0  # tenants do not share
    for _ in range(3):
        buckets.take("t", "read", 100.0)  # a long idle refills to the burst, no more
    assert buckets.take("t", "read", 100.0) > 0
    assert buckets.take("t", "read", 99.0) > 0  # a clock stepped back refills nothing
    assert buckets.headers("t", "read", 0.4)["Retry-After"] == "1"


def test_the_fingerprint_ignores_key_order_and_the_v1_prefix_but_not_the_body() -> None:
    one = fingerprint("POST", "/v1/jobs", b'{"a": 1, "b": [2]}')
    assert one == fingerprint("POST", "/jobs", b'{"b":[2],"a":1}')
    assert one != fingerprint("POST", "/v1/jobs", b'{"a": 2, "b": [2]}')
    assert one != fingerprint("POST", "/v1/schedules", b'{"a": 1, "b": [2]}')
    assert derived_job_id("acme", "k") == derived_job_id("acme", "k")
    assert derived_job_id("acme", "k") != derived_job_id("globex", "k")


def _collect(stream: Any) -> list[str]:
    async def run() -> list[str]:
        return [chunk async for chunk in stream]

    return asyncio.run(run())


def test_the_stream_sends_each_change_once_and_ends_when_the_execution_finishes() -> None:
    running = {"execution_id": "e", "status": "running", "outcome": None}
    done = {"execution_id": "e", "status": "succeeded", "outcome": "succeeded"}
    answers = iter([running, done, done])
    chunks = _collect(timeline_events(lambda: next(answers), running, 10, 0.2, finished))
    names = [c.split("\n")[0] for c in chunks]
    assert names == ["event: timeline", "event: timeline", "event: end"]
    assert json.loads(chunks[1].split("data: ")[1]) == done
    assert '"finished"' in chunks[-1]


def test_the_stream_is_bounded_by_its_timeout() -> None:
    pending = {"execution_id": "e", "status": "pending", "outcome": None}
    calls: list[int] = []

    def read() -> dict[str, Any]:
        calls.append(1)
        return pending

    chunks = _collect(timeline_events(read, pending, 1, 0.2, finished))
    assert len(calls) == 5  # timeout / interval polls, then the end
    assert chunks[0].startswith("event: timeline") and '"timeout"' in chunks[-1]
    assert len(chunks) == 2

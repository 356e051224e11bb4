"""The embedded owner's query endpoint and owner.json, against real chDB, without Kafka.

The endpoint serves the store the sink owns: a query must not be able to stall it (caps a
query cannot lift), a malformed request must get an answer rather than an unhandled error,
and owner.json — which holds the token — must be created safely (B20).
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickwheel.adapters.clickhouse import ChdbHistoryStore, QueryLimits
from tickwheel.adapters.clickhouse._limits import MAX_ROWS_VAR
from tickwheel.history import OwnerClient, OwnerInfo, owner_path, read_owner, write_owner
from tickwheel.ports.history import HistoryQueryError, HistoryQueryRejected
from tickwheel.services.history.endpoint import QueryEndpoint

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[OwnerInfo, OwnerClient]]:
    store = ChdbHistoryStore(tmp_path / "history", limits=QueryLimits(max_rows=1000))
    store.migrate()
    info = OwnerInfo.create(port=0, directory=store.directory, instance="test")
    endpoint = QueryEndpoint(store, info.token, location=store.directory)
    info = OwnerInfo(**{**info.__dict__, "port": endpoint.start()})
    try:
        yield info, OwnerClient(info, timeout=30)
    finally:
        endpoint.stop()
        store.close()


def _raw_post(info: OwnerInfo, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
    connection = http.client.HTTPConnection(info.host, info.port, timeout=10)
    try:
        connection.putrequest("POST", "/v1/query", skip_accept_encoding=True)
        connection.putheader("X-Tickwheel-Token", info.token)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("length", ["abc", "1e3", "12, 12", "-5", ""])
def test_a_bad_content_length_gets_400_and_the_endpoint_keeps_serving(
    served: tuple[OwnerInfo, OwnerClient], length: str
) -> None:
    info, client = served
    status, document = _raw_post(info, {"Content-Length": length}, b'{"sql": "SELECT 1"}')
    assert (status, document["error"]) == (400, "bad_request")
    assert client.query("SELECT 7").scalar() == 7


def test_a_capped_query_fails_fast_through_the_endpoint_and_others_still_answer(
    served: tuple[OwnerInfo, OwnerClient],
) -> None:
    _, client = served
    with pytest.raises(HistoryQueryError, match=MAX_ROWS_VAR):
        client.query("SELECT * FROM numbers(100000000)")
    with pytest.raises(HistoryQueryRejected, match="readonly"):
        client.query("SELECT * FROM numbers(100000000) SETTINGS max_result_rows = 0")
    assert client.query("SELECT count() FROM numbers(5000)").scalar() == 5000
    assert len(client.query("SELECT number FROM numbers(1000)").rows) == 1000


def test_escaped_identifiers_are_refused_by_the_owner_itself(
    served: tuple[OwnerInfo, OwnerClient],
) -> None:
    info, _ = served
    # Sent raw, past the client's own check: the owner refuses it on its own.
    body = json.dumps({"sql": "SELECT * FROM `f\\x69le`('/etc/hostname', 'LineAsString')"})
    status, document = _raw_post(info, {"Content-Length": str(len(body))}, body.encode())
    assert (status, document["error"]) == (400, "rejected")
    assert "backslash" in document["reason"]


def test_owner_json_is_private_and_never_written_through_a_planted_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = OwnerInfo.create(port=1234, directory=str(tmp_path), instance="test")
    path = write_owner(tmp_path, info)
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_owner(tmp_path) == info
    assert [p.name for p in tmp_path.iterdir()] == ["owner.json"]  # no temporary left

    # Someone who can write the directory plants a symlink where the temporary file would go.
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    monkeypatch.setattr(secrets, "token_hex", lambda _n=None: "fixed")
    planted = tmp_path / f".owner.json.{info.pid}.fixed.tmp"
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        write_owner(tmp_path, OwnerInfo.create(port=99, directory=str(tmp_path), instance="x"))
    assert victim.read_text() == "untouched"
    assert read_owner(tmp_path) == info  # the announced owner is still the real one

    # A symlink at owner.json itself is replaced, not written through.
    planted.unlink()
    owner_path(tmp_path).unlink()
    owner_path(tmp_path).symlink_to(victim)
    write_owner(tmp_path, info)
    assert victim.read_text() == "untouched"
    assert not os.path.islink(owner_path(tmp_path))

"""The plain ASGI layers (decision 0153): request ids, entity tags, a captured answer."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient
from starlette.types import Message

from tickwheel.services.api.asgi import EntityTags, RequestIds, captured, replaying


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/doc")
    def doc() -> dict[str, int]:
        return {"a": 1}

    @app.get("/versioned")
    def versioned() -> Any:
        from fastapi.responses import JSONResponse

        return JSONResponse({"v": 3}, headers={"ETag": '"3"'})

    @app.get("/stream")
    def stream() -> StreamingResponse:
        return StreamingResponse(iter([b"data: 1\n\n", b"data: 2\n\n"]),
                                 media_type="text/event-stream")  # fmt: skip

    @app.post("/echo")
    async def echo(body: dict[str, Any]) -> dict[str, Any]:
        return body

    app.add_middleware(RequestIds)

    async def tagged(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            send = EntityTags(scope, send)  # as the door wraps a GET's answer
        await app(scope, receive, send)

    return tagged  # type: ignore[return-value]


def test_a_json_get_gets_a_tag_of_its_body_and_a_match_is_a_304_without_a_body() -> None:
    client = TestClient(_app())
    first = client.get("/doc")
    etag = first.headers["etag"]
    assert first.status_code == 200 and first.json() == {"a": 1} and etag.startswith('W/"')
    assert first.headers["content-length"] == str(len(first.content))
    again = client.get("/doc", headers={"If-None-Match": etag.removeprefix("W/")})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert "content-type" not in again.headers
    assert client.get("/doc", headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_routes_own_tag_is_kept_and_a_stream_passes_untouched() -> None:
    client = TestClient(_app())
    assert client.get("/versioned").headers["etag"] == '"3"'
    assert client.get("/versioned", headers={"If-None-Match": '"3"'}).status_code == 304
    streamed = client.get("/stream")
    assert streamed.text == "data: 1\n\ndata: 2\n\n" and "etag" not in streamed.headers


def test_every_answer_has_a_request_id_the_callers_only_when_it_is_short_text() -> None:
    client = TestClient(_app())
    assert client.get("/doc", headers={"X-Request-Id": "abc-1"}).headers["x-request-id"] == "abc-1"
    made = client.get("/doc", headers={"X-Request-Id": "x" * 200}).headers["x-request-id"]
    assert made != "x" * 200 and len(made) == 36
    assert client.post("/echo", json={"k": 2}).headers["x-request-id"]


def test_captured_returns_the_whole_answer_of_a_replayed_body() -> None:
    app = _app()
    scope = {"type": "http", "method": "POST", "path": "/echo", "raw_path": b"/echo",
             "query_string": b"", "headers": [(b"content-type", b"application/json")],
             "http_version": "1.1", "scheme": "http", "server": ("testserver", 80),
             "client": ("c", 1), "root_path": "", "state": {}}  # fmt: skip

    async def disconnect() -> Message:
        return {"type": "http.disconnect"}

    answer = asyncio.run(captured(app, scope, replaying(b'{"k": 5}', disconnect)))  # type: ignore[arg-type]
    assert answer.status_code == 200 and answer.body == b'{"k":5}'
    assert dict(answer.headers)["x-request-id"] == scope["state"]["request_id"]

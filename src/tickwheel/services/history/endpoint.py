"""The owner's read-only query endpoint: a small HTTP server on 127.0.0.1.

POST /v1/query `{"sql": ..., "params": {...}}` → `{"columns", "types", "rows"}` (values in the
tagged JSON of `tickwheel.history._wire`); GET /v1/health → the owner's pid and the sink's
counters. Every request must carry the token of owner.json. Queries go through
`HistoryStore.query`, so the read-only checks (decision 0032) apply unchanged.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tickwheel.history._owner import (
    HEALTH_PATH,
    LOOPBACK,
    MAX_REQUEST_BYTES,
    QUERY_PATH,
    TOKEN_HEADER,
)
from tickwheel.history._reader import HistoryReader
from tickwheel.history._wire import decode_params, encode_result
from tickwheel.ports.history import (
    HistoryQueryError,
    HistoryQueryRejected,
    HistoryStoreError,
)

log = logging.getLogger("tickwheel.history.endpoint")


class QueryEndpoint:
    """Serves `reader.query` to local processes that hold `token`."""

    def __init__(
        self,
        reader: HistoryReader,
        token: str,
        *,
        port: int = 0,
        status: Callable[[], dict[str, Any]] | None = None,
        location: str = "",
    ) -> None:
        self.reader = reader
        self.token = token
        self.status = status or dict
        self.location = location
        self._server = ThreadingHTTPServer((LOOPBACK, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> int:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="history-endpoint", daemon=True
        )
        self._thread.start()
        return self.port

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "tickwheel-history"
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                log.debug(format % args)

            def _reply(self, status: int, document: Any) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _authorised(self) -> bool:
                given = self.headers.get(TOKEN_HEADER, "")
                if hmac.compare_digest(given.encode(), endpoint.token.encode()):
                    return True
                self._reply(401, {"error": "unauthorised", "message": "missing or wrong token"})
                return False

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path != HEALTH_PATH:
                    self._reply(404, {"error": "not_found", "message": self.path})
                    return
                self._reply(
                    200,
                    {
                        "pid": os.getpid(),
                        "location": endpoint.location,
                        "status": endpoint.status(),
                    },
                )

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                if self.path != QUERY_PATH:
                    self._reply(404, {"error": "not_found", "message": self.path})
                    return
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1  # "abc", "1e3", "12, 12": a length we cannot trust
                if not 0 < length <= MAX_REQUEST_BYTES:
                    # The body is left unread, so the connection cannot carry another request.
                    self.close_connection = True
                    self._reply(
                        413 if length > 0 else 400,
                        {
                            "error": "bad_request",
                            "message": f"a query request is 1..{MAX_REQUEST_BYTES} bytes",
                        },
                    )
                    return
                try:
                    request = json.loads(self.rfile.read(length))
                    sql = request["sql"]
                    if not isinstance(sql, str):
                        raise ValueError("sql must be a string")
                    params = decode_params(request.get("params") or {})
                except (ValueError, KeyError, TypeError) as exc:
                    self._reply(400, {"error": "bad_request", "message": str(exc)})
                    return
                try:
                    result = endpoint.reader.query(sql, params)
                except HistoryQueryRejected as exc:
                    self._reply(
                        400, {"error": "rejected", "reason": exc.reason, "message": str(exc)}
                    )
                    return
                except HistoryQueryError as exc:
                    self._reply(422, {"error": "query_failed", "message": str(exc)})
                    return
                except HistoryStoreError as exc:
                    self._reply(503, {"error": "unavailable", "message": str(exc)})
                    return
                try:
                    document = encode_result(result)
                except TypeError as exc:
                    self._reply(500, {"error": "query_failed", "message": str(exc)})
                    return
                self._reply(200, document)

        return Handler

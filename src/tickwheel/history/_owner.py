"""The owner of an embedded history directory, and the client other processes read through.

chDB lets one process own a directory (decision 0033). In the local stack the history sink
owns it and serves read-only queries on a loopback HTTP endpoint; it announces the endpoint
in `<history_dir>/owner.json` (mode 0600: pid, port and a random token, so only users who can
read the directory can query it). `OwnerClient` is what the CLI (and later the API) holds
instead of a store: same `query`, same `QueryResult`, same errors (decision 0035).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tickwheel.adapters.clickhouse import check_read_only
from tickwheel.history._wire import decode_result, encode_params
from tickwheel.ports.history import (
    HistoryQueryError,
    HistoryQueryRejected,
    HistoryStoreError,
    QueryResult,
)

OWNER_FILE = "owner.json"
#: The endpoint binds here and nowhere else: it is for processes of this machine.
LOOPBACK = "127.0.0.1"
TOKEN_HEADER = "X-Tickwheel-Token"
QUERY_PATH = "/v1/query"
HEALTH_PATH = "/v1/health"
MAX_REQUEST_BYTES = 1 << 20


class OwnerUnreachable(HistoryStoreError):
    """owner.json names a process whose endpoint does not answer as the owner."""


@dataclass(frozen=True)
class OwnerInfo:
    """What owner.json holds."""

    pid: int
    host: str
    port: int
    token: str
    directory: str
    instance: str

    @classmethod
    def create(cls, *, port: int, directory: str, instance: str) -> OwnerInfo:
        return cls(
            pid=os.getpid(),
            host=LOOPBACK,
            port=port,
            token=secrets.token_urlsafe(24),
            directory=directory,
            instance=instance,
        )


def owner_path(directory: str | os.PathLike[str]) -> Path:
    return Path(directory) / OWNER_FILE


def write_owner(directory: str | os.PathLike[str], info: OwnerInfo) -> Path:
    """Write owner.json atomically, readable by the directory's user only."""
    path = owner_path(directory)
    # A fresh name opened with O_EXCL | O_NOFOLLOW: a file or symlink planted at a guessable
    # name (by anyone who can write the directory) is never opened, so the token is written
    # to no file but ours, and ours is 0600 from its creation.
    temporary = path.with_name(f".{OWNER_FILE}.{info.pid}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(asdict(info), handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    return path


def remove_owner(directory: str | os.PathLike[str], pid: int) -> None:
    """Remove owner.json if it still names `pid` (a successor may have replaced it)."""
    info = read_owner(directory)
    if info is not None and info.pid == pid:
        with contextlib.suppress(FileNotFoundError):
            owner_path(directory).unlink()


def read_owner(directory: str | os.PathLike[str]) -> OwnerInfo | None:
    """The announced owner, or None if there is no (readable, well-formed) owner.json."""
    try:
        document = json.loads(owner_path(directory).read_text(encoding="utf-8"))
        return OwnerInfo(
            pid=int(document["pid"]),
            host=str(document["host"]),
            port=int(document["port"]),
            token=str(document["token"]),
            directory=str(document["directory"]),
            instance=str(document.get("instance", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OwnerClient:
    """Read-only queries through the owning process's endpoint; a `HistoryReader`."""

    def __init__(self, info: OwnerInfo, *, timeout: float = 60.0) -> None:
        self.info = info
        self._timeout = timeout

    @property
    def location(self) -> str:
        return f"{self.info.directory} (through process {self.info.pid})"

    def __repr__(self) -> str:
        return f"OwnerClient(pid={self.info.pid}, port={self.info.port})"

    def __enter__(self) -> OwnerClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: each request has its own connection."""

    def _request(self, method: str, path: str, body: bytes | None) -> tuple[int, Any]:
        connection = http.client.HTTPConnection(
            self.info.host, self.info.port, timeout=self._timeout
        )
        headers = {TOKEN_HEADER: self.info.token}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise OwnerUnreachable(
                f"the history owner (process {self.info.pid}, port {self.info.port}) did not "
                f"answer: {exc}"
            ) from exc
        finally:
            connection.close()
        try:
            document = json.loads(payload) if payload else None
        except ValueError:
            raise OwnerUnreachable(
                f"port {self.info.port} answered with something other than the history endpoint"
            ) from None
        return response.status, document

    def ping(self) -> None:
        """Check the endpoint is the owner owner.json names; raise `OwnerUnreachable` if not."""
        status, document = self._request("GET", HEALTH_PATH, None)
        if status != 200 or not isinstance(document, dict) or document.get("pid") != self.info.pid:
            raise OwnerUnreachable(
                f"port {self.info.port} is not the history owner of process {self.info.pid}"
            )

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Run one read-only statement in the owner; same contract as `HistoryStore.query`."""
        # Refused here too, so a write never even travels; the owner checks again.
        check_read_only(sql, params)
        body = json.dumps({"sql": sql, "params": encode_params(params)}).encode()
        status, document = self._request("POST", QUERY_PATH, body)
        if status == 200 and isinstance(document, dict):
            return decode_result(document)
        error = document if isinstance(document, dict) else {}
        message = str(error.get("message", f"HTTP {status}"))
        if error.get("error") == "rejected":
            raise HistoryQueryRejected(sql, str(error.get("reason", message)))
        if error.get("error") == "query_failed":
            raise HistoryQueryError(sql, message)
        raise HistoryStoreError(f"the history owner refused the query: {message}")

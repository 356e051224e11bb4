"""Opening the history for reading, wherever it lives.

* `CLICKHOUSE_URL` set: the server, directly.
* Embedded, with a live owner (the history service): through the owner's endpoint.
* Embedded, nobody holding the directory: the directory itself, read-only use.

`HistoryReader` is the one method the query functions need, so they take a store or an
`OwnerClient` alike.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tickwheel.adapters.clickhouse import HISTORY_DIR_VAR, HistorySettings, open_history_store
from tickwheel.history._owner import OwnerClient, OwnerUnreachable, pid_alive, read_owner
from tickwheel.paths import state_home
from tickwheel.ports.history import HistoryStoreBusy, QueryResult


@runtime_checkable
class HistoryReader(Protocol):
    """Anything that answers read-only history queries: a `HistoryStore` or an `OwnerClient`."""

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> QueryResult: ...


@runtime_checkable
class ClosableHistoryReader(HistoryReader, Protocol):
    def close(self) -> None: ...


def history_settings_from_env(environ: Mapping[str, str] | None = None) -> HistorySettings:
    """`HistorySettings.from_env`, with the embedded directory defaulting to the local
    stack's home (`$TICKWHEEL_HOME/history`) so the service and the CLI agree on it."""
    env = os.environ if environ is None else environ
    settings = HistorySettings.from_env(env)
    if not env.get(HISTORY_DIR_VAR, "").strip():
        settings = dataclasses.replace(settings, history_dir=state_home() / "history")
    return settings


def owner_client(directory: str | os.PathLike[str]) -> OwnerClient | None:
    """A client of the live owner of `directory`, or None if nobody announces one that answers."""
    info = read_owner(directory)
    if info is None or not pid_alive(info.pid):
        return None
    client = OwnerClient(info)
    try:
        client.ping()
    except OwnerUnreachable:
        # A stale file whose pid was reused, or an owner still starting up.
        return None
    return client


def open_history_reader(
    settings: HistorySettings | None = None, *, wait_s: float = 10.0
) -> ClosableHistoryReader:
    """A reader of the history the settings name (from the environment if None).

    Embedded: through the owner when one runs, else the directory itself (which must exist).
    If the directory is held but no owner answers yet — the history service is starting —
    wait up to `wait_s` for its endpoint, then raise `HistoryStoreBusy`.
    """
    settings = settings or history_settings_from_env()
    if settings.clickhouse_url:
        return open_history_store(settings, create=False)
    directory = Path(settings.history_dir)
    deadline = time.monotonic() + wait_s
    while True:
        client = owner_client(directory)
        if client is not None:
            return client
        try:
            return open_history_store(settings, create=False)
        except HistoryStoreBusy as exc:
            # Our own process holding another directory will not change by waiting.
            if exc.owner_pid == os.getpid() or time.monotonic() >= deadline:
                raise
            time.sleep(0.2)

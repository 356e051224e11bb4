"""Who owns an embedded chDB directory.

Facts this module is built on (chDB 4.4, read from its source and checked by experiment):

* A process hosts one embedded engine bound to one directory. Any number of connections to
  that directory may coexist in the process and share the engine; asking for a second
  directory while a connection is open fails (`EmbeddedServer already initialized`).
* The engine holds an exclusive `flock` on `<dir>/status` (which records its PID) while it is
  open, so a second process cannot open the directory; the kernel releases the lock when the
  owner dies, even by SIGKILL, so no stale lock is ever left behind.

We keep a per-process count of open stores per directory to report the first case clearly,
and probe the `flock` before connecting to report the second with the owner's PID instead of
the engine's generic start-up error.
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from pathlib import Path

from tickwheel.ports.history import HistoryStoreBusy

_registry_lock = threading.Lock()
_open_counts: dict[str, int] = {}
_migrate_locks: dict[str, threading.Lock] = {}

_STATUS_PID = re.compile(r"^PID:\s*(\d+)", re.MULTILINE)


def status_file(directory: str) -> Path:
    return Path(directory) / "status"


def owner_pid(directory: str) -> int | None:
    """PID recorded in the engine's status file, if any (the owner's, while it is locked)."""
    try:
        text = status_file(directory).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = _STATUS_PID.search(text)
    return int(match.group(1)) if match else None


def held_by_another_process(directory: str) -> bool:
    """True if some engine (not this process's: check the registry first) holds the directory.

    A shared lock is enough to collide with the engine's exclusive one, and is dropped at once.
    """
    path = status_file(directory)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def busy_error(directory: str) -> HistoryStoreBusy:
    """The error for a directory another process owns."""
    pid = owner_pid(directory)
    owner = f"process {pid}" if pid is not None else "another process"
    return HistoryStoreBusy(
        directory,
        f"the embedded history store {directory} is open in {owner}; chDB lets one process "
        "own a directory (in the local stack, the history service). Stop that process "
        "(e.g. `tickwheel stack down`) or set CLICKHOUSE_URL to use a ClickHouse server",
        owner_pid=pid,
    )


def acquire(directory: str) -> None:
    """Register one more store on `directory` in this process, or raise `HistoryStoreBusy`."""
    with _registry_lock:
        others = [d for d, count in _open_counts.items() if count > 0 and d != directory]
        if others:
            raise HistoryStoreBusy(
                directory,
                f"this process already has the embedded history store {others[0]} open, and "
                f"chDB serves one directory per process; close it before opening {directory}",
                owner_pid=os.getpid(),
            )
        if _open_counts.get(directory, 0) == 0 and held_by_another_process(directory):
            raise busy_error(directory)
        _open_counts[directory] = _open_counts.get(directory, 0) + 1


def release(directory: str) -> None:
    """Undo one `acquire`."""
    with _registry_lock:
        count = _open_counts.get(directory, 0) - 1
        if count > 0:
            _open_counts[directory] = count
        else:
            _open_counts.pop(directory, None)


def migrate_lock(directory: str) -> threading.Lock:
    """One lock per directory, so two stores of one process do not migrate at once."""
    with _registry_lock:
        return _migrate_locks.setdefault(directory, threading.Lock())

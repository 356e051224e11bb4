"""In-memory stand-ins for the console's unit tier and its benchmark: a job client that keeps
definitions in a dict (validated by the same `validate_job` the SDK uses) and a history reader
that answers the documented queries by name from canned rows. The integration tier runs the
console over the real broker and the real history instead.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.clock import FakeClock
from tickwheel.errors import InvalidInput
from tickwheel.ports.history import QueryResult
from tickwheel.sdk.jobs import JobExists, UnknownJob, definition_to_spec, validate_job

_NAME = re.compile(r"^--\s*([a-z0-9_]+):", re.MULTILINE)


class MemoryJobs:
    """`JobsLike` over a dict: create, read, update at an expected version, commands."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.records: dict[str, dict[str, Any]] = {}
        self.commands: list[dict[str, Any]] = []

    def _now(self) -> int:
        return int(self.clock.now() * 1000)

    def get(self, job_id: str) -> dict[str, Any]:
        if job_id not in self.records:
            raise UnknownJob(job_id)
        return dict(self.records[job_id])

    def list(self) -> list[dict[str, Any]]:
        return [dict(self.records[k]) for k in sorted(self.records)]

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        record = validate_job(spec, self._now())
        if record["jobId"] in self.records:
            raise JobExists(record["jobId"])
        self.records[record["jobId"]] = record
        return dict(record)

    def update(
        self, job_id: str, changes: dict[str, Any], expected_version: int | None = None
    ) -> dict[str, Any]:
        current = self.get(job_id)
        if expected_version is not None and expected_version != current["version"]:
            raise InvalidInput("expectedVersion", f"at {current['version']}")
        spec = definition_to_spec(current)
        for key in ("version", "createdAt", "updatedAt"):
            spec.pop(key, None)
        spec.update(changes)
        record = validate_job(spec, self._now(), current["version"] + 1, current["createdAt"])
        self.records[job_id] = record
        return dict(record)

    def delete(self, job_id: str) -> None:
        self.get(job_id)
        del self.records[job_id]

    def _command(
        self, job_id: str, kind: str, lo: int | None, hi: int | None, command_id: str | None = None
    ) -> dict[str, Any]:
        self.get(job_id)
        command = {"command_id": command_id or str(uuid.uuid4()), "job_id": job_id, "kind": kind,
                   "requested_at": self._now(), "range_start": lo, "range_end": hi}  # fmt: skip
        self.commands.append(command)
        return command

    def trigger(self, job_id: str) -> dict[str, Any]:
        return self._command(job_id, "trigger", None, None)

    def backfill(
        self, job_id: str, from_ms: int, to_ms: int, command_id: str | None = None
    ) -> dict[str, Any]:
        return self._command(job_id, "backfill", from_ms, to_ms, command_id)


Answer = Callable[[Mapping[str, Any]], list[dict[str, Any]]]


class CannedHistory:
    """A history reader answering each documented query (by the name in its header) with
    rows from `answers`; a query with no answer returns no row."""

    def __init__(self, answers: Mapping[str, Answer] | None = None) -> None:
        self.answers = dict(answers or {})
        self.asked: list[str] = []

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> QueryResult:
        match = _NAME.search(sql)
        name = match.group(1) if match else "?"
        self.asked.append(name)
        rows = self.answers.get(name, lambda _p: [])(params or {})
        columns = tuple(rows[0]) if rows else ()
        return QueryResult(columns, ("",) * len(columns), [tuple(r.values()) for r in rows])

    def close(self) -> None:
        pass

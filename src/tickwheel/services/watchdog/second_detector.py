"""The second detector: the schedule audit over the history store (`tickwheel history audit`),
run for the recurring jobs, in SQL, beside the streaming evaluator.

The streaming evaluator asks "has the job succeeded within its interval?"; a job whose slots
go missing one at a time while its neighbours succeed never fails that test. The audit asks
"did every slot the schedule owed leave a record?", from what the history sink stored. A slot
missing and older than the job's interval that the streaming evaluator did not raise (no
`job_overdue` incident open, or resolved since that slot) is a `missed_slots` alert.

Every `every_ms`, up to `per_round` jobs are audited (taking turns, so every job is audited
every `jobs / per_round` rounds), each over (now - lookback, now - its interval]. A job's
finding stands until its next audit. No history store reachable (none configured, or its
owner not up yet): the round is skipped and said so once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tickwheel.core.watchdog import Condition, WatchdogState, effective_interval, fingerprint
from tickwheel.core.watchdog.thresholds import Thresholds
from tickwheel.errors import TickwheelError

log = logging.getLogger("tickwheel.watchdog")

SLOTS_SHOWN = 10


class SecondDetector:
    def __init__(
        self,
        every_ms: int,
        lookback_ms: int,
        per_round: int,
        open_reader: Callable[[], Any] | None = None,
    ) -> None:
        self.every_ms, self.lookback_ms, self.per_round = every_ms, lookback_ms, per_round
        self._open_reader = open_reader or _history_reader
        self._reader: Any = None
        self._next_at: int | None = None  # the first round waits one period: start-up first
        self._turn = 0  # where the next round starts in the sorted job ids
        self._said_unreachable = False
        self.found: dict[str, Condition] = {}

    def conditions(
        self, state: WatchdogState, now_ms: int, thresholds: Thresholds
    ) -> list[Condition]:
        """What the last audits found (a round runs first when one is due)."""
        if self.every_ms <= 0:
            return []
        if self._next_at is None:
            self._next_at = now_ms + self.every_ms
        if now_ms >= self._next_at:
            self._next_at = now_ms + self.every_ms
            self._round(state, now_ms, thresholds)
        return [self.found[job_id] for job_id in sorted(self.found)]

    def _round(self, state: WatchdogState, now_ms: int, thresholds: Thresholds) -> None:
        reader = self._connect()
        if reader is None:
            return
        jobs = sorted(state.facts.jobs)
        for job_id in set(self.found) - set(jobs):
            del self.found[job_id]
        if not jobs:
            return
        start = self._turn % len(jobs)
        turn = (jobs[start:] + jobs[:start])[: self.per_round]
        self._turn = start + len(turn)
        for job_id in turn:
            try:
                condition = self._audit(reader, state, job_id, now_ms, thresholds)
            except TickwheelError as exc:  # not in the history yet, a window too long, ...
                log.debug(f"audit of {job_id} skipped: {exc}")
                continue
            if condition is None:
                self.found.pop(job_id, None)
            else:
                self.found[job_id] = condition

    def _audit(
        self, reader: Any, state: WatchdogState, job_id: str, now_ms: int, thresholds: Thresholds
    ) -> Condition | None:
        from tickwheel.history import schedule_audit

        job = state.facts.jobs[job_id]
        spec = job.spec
        if spec is None or job.deleted or not spec.enabled or not spec.recurring:
            return None
        interval = effective_interval(spec, thresholds.derived_grace_ms)
        if interval is None:
            return None
        start, end = max(spec.created_at_ms, now_ms - self.lookback_ms), now_ms - interval.ms
        if end <= start:
            return None
        audit = schedule_audit(reader, job_id, start, end)
        missing = [
            _ms(o["scheduled_time"]) for o in audit["occurrences"] if o["status"] == "missing"
        ]
        if not missing:
            return None
        streaming = state.incidents.get(fingerprint("job_overdue", job_id))
        if streaming is not None and (
            streaming.state == "open" or (streaming.resolved_at or 0) >= missing[0]
        ):
            return None  # the streaming evaluator raised it: one alert, not two
        return Condition(
            "missed_slots",
            job_id,
            "warning",
            f"the history has no record of {len(missing)} slot(s) job {job_id} owed between "
            f"{audit['from']} and {audit['to']} (schedule audit), though it succeeded in time",
            {
                "missing": len(missing),
                "slots": missing[-SLOTS_SHOWN:],
                "from": start,
                "to": end,
                "expected": audit["expected"],
                "fired": audit["fired"],
            },
            summary=f"{len(missing)}",
            job_id=job_id,
            tenant_id=spec.tenant_id,
        )

    def _connect(self) -> Any:
        if self._reader is not None:
            return self._reader
        try:
            self._reader = self._open_reader()
        except (TickwheelError, OSError) as exc:
            if not self._said_unreachable:
                self._said_unreachable = True
                log.warning(
                    f"schedule audit skipped: no history store reachable ({exc})",
                    extra={"action": "audit_unreachable"},
                )
            return None
        return self._reader

    def close(self) -> None:
        if self._reader is not None and hasattr(self._reader, "close"):
            self._reader.close()


def _history_reader() -> Any:
    """A ClickHouse server's store, or the embedded store's owner — never the embedded
    directory itself: opening it would make the watchdog its owner and keep the history
    sink from starting (decision 0033)."""
    from tickwheel.adapters.clickhouse import open_history_store
    from tickwheel.history import history_settings_from_env, owner_client
    from tickwheel.ports.history import HistoryStoreError

    settings = history_settings_from_env()
    if settings.clickhouse_url:
        return open_history_store(settings, create=False)
    client = owner_client(settings.history_dir)
    if client is None:
        raise HistoryStoreError(f"no history owner answers for {settings.history_dir}")
    return client


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).astimezone(UTC).timestamp() * 1000)

"""What the owner of an execution decides about it, without I/O: leases and their deadlines,
fencing of stale attempts, retries with backoff, dead letters, and the counts that overlap
policy and tenant caps need.

An execution is "in flight" from its first request until a terminal outcome (succeeded,
cancelled, dead-lettered). Its state is persisted in the job's TimerState (`pending`), in the
same transaction as the events that changed it, so a new owner picks up every lease deadline
and retry timer where the old one left off.
"""

from __future__ import annotations

import json
import random
from typing import Any

from tickwheel.core.retry import ErrorKind, RetryPolicy, decide_retry
from tickwheel.core.timer.execution_records import execution_dead_letter, fenced_event
from tickwheel.core.timer.flight_book import FlightBook
from tickwheel.core.timer.flights import Decision as Decision  # re-exported
from tickwheel.core.timer.flights import InFlight as InFlight  # re-exported
from tickwheel.core.timer.flights import empty_decision as _empty
from tickwheel.core.timer.step_flights import StepFlights
from tickwheel.core.timer.workflow_steps import is_step, step_outcome
from tickwheel.events import execution_event
from tickwheel.records import ExecutionEvent, ExecutionRequest, ExecutionTrigger

# A lease runs on the owner's clock (now + the lease's length) plus this much: the time an
# event takes to reach the owner.
LEASE_GRACE_MS = 2_000
# The longest lease a worker may ask for in one event (a longer one is cut to this).
MAX_LEASE_MS = 3_600_000
# A request not leased within this long is re-issued as the next attempt, and dead-lettered
# once its attempts run out (docs/decisions/0055): no worker reads its queue, or retention
# deleted it, and a `skip` job must not wait behind it forever.
DISPATCH_TIMEOUT_MS = 900_000
# After a change of owner, leases taken while nobody owned the partition are still unread:
# a queued request gets at least this long before its dispatch deadline passes.
DISPATCH_RESTORE_GRACE_MS = 60_000
# While worker events lag behind, an expired lease waits at most this long past its deadline
# for a heartbeat that may be among them: a worker that is really gone is still replaced.
MAX_LEASE_HOLD_MS = 60_000
# A worker without the job's handler hands the attempt back (reason `no_handler`, a rolling
# deploy): it is offered again after about this long, as a new attempt that spends none of the
# job's `maxAttempts`, up to MAX_UNHANDLED times (decision 0053).
UNHANDLED_RETRY_MS = 10_000
MAX_UNHANDLED = 100
NO_HANDLER = "no_handler"
OUTCOMES = ("succeeded", "failed", "cancelled")
QUEUED_DATA = json.dumps({"state": "queued", "worker_id": None})


class ExecutionTracker(FlightBook, StepFlights):
    def __init__(
        self,
        retry_base_ms: int,
        retry_cap_ms: int,
        rng: random.Random,
        dispatch_timeout_ms: int = DISPATCH_TIMEOUT_MS,
    ) -> None:
        self.dispatch_timeout_ms = dispatch_timeout_ms
        self.retry_base_ms = retry_base_ms
        self.retry_cap_ms = retry_cap_ms
        self.rng = rng
        super().__init__()

    # -- bookkeeping -----------------------------------------------------------------------
    def started(self, request: ExecutionRequest, size: int | None = None) -> InFlight:
        """A first request was emitted: the execution is in flight, queued until its dispatch
        deadline. Returns the flight, whose deadline the caller holds in its wheel. `size`:
        the request's `footprint`, when the caller has it already."""
        flight = self.in_flight.get(request["execution_id"])
        if flight is not None:
            return flight
        flight = InFlight(request, "queued", request["requested_at"] + self.dispatch_timeout_ms)
        self._add(flight, size)
        return flight

    def dispatch_deadline(self, request: ExecutionRequest, now_ms: int) -> int:
        """When a queued request restored by a new owner stops waiting for its lease."""
        due = int(request["requested_at"]) + self.dispatch_timeout_ms
        return max(due, now_ms + min(self.dispatch_timeout_ms, DISPATCH_RESTORE_GRACE_MS))

    def pending_of(self, job_id: str) -> list[dict[str, Any]]:
        """The job's in-flight executions as TimerState `pending` entries. `request` is the
        attempt's request as a dict; the service writes it as the bytes it already encoded for
        the request topic (docs/decisions/0008)."""
        entries = []
        for execution_id in self.ids_of(job_id):
            flight = self.in_flight[execution_id]
            if flight.state == "queued" and flight.worker_id is None and not flight.unhandled:
                entries.append(self.queued_entry(flight.request))  # spares the JSON encoder
                continue
            fields: dict[str, Any] = {"state": flight.state, "worker_id": flight.worker_id}
            if flight.unhandled:
                fields["unhandled"] = flight.unhandled
            data = json.dumps(fields)
            entries.append(
                {
                    "timer_id": execution_id,
                    "kind": "retry" if flight.state == "retry_wait" else "lease_deadline",
                    "fire_at": flight.deadline_ms or 0,
                    "execution_id": execution_id,
                    "attempt": flight.attempt,
                    "data": data,
                    "request": flight.request,
                }
            )
        return entries

    @staticmethod
    def queued_entry(request: ExecutionRequest) -> dict[str, Any]:
        """The `pending` entry of a request not yet leased (as `pending_of` writes it)."""
        execution_id = request["execution_id"]
        return {
            "timer_id": execution_id,
            "kind": "lease_deadline",
            "fire_at": 0,
            "execution_id": execution_id,
            "attempt": request["attempt"],
            "data": QUEUED_DATA,
            "request": request,
        }

    def restore(self, pending: list[dict[str, Any]]) -> list[InFlight]:
        restored = []
        for entry in pending:
            if entry["kind"] not in ("retry", "lease_deadline") or not entry.get("data"):
                continue
            data = json.loads(entry["data"])
            # TimerState v3 holds the request beside the data; v1-v2 held it inside.
            request = entry.get("request") or data.get("request")
            if request is None:
                continue
            flight = InFlight(
                request=request,
                state=data["state"],
                deadline_ms=entry["fire_at"] or None,
                worker_id=data.get("worker_id"),
                unhandled=int(data.get("unhandled") or 0),
            )
            self._add(flight)
            restored.append(flight)
        return restored

    def extend_restored_deadline(self, flight: InFlight, now_ms: int) -> None:
        """A restored flight's deadline as its new owner holds it from `now_ms`: what happened
        while nobody owned the partition is still unread."""
        if flight.state == "running" and flight.deadline_ms is not None:
            # Heartbeats sent meanwhile are among it: give the worker a full lease from now
            # before calling it dead.
            lease_ms = int(flight.request.get("lease_seconds") or 30) * 1000
            flight.deadline_ms = max(flight.deadline_ms, now_ms + lease_ms + LEASE_GRACE_MS)
        elif flight.state == "queued":
            # Leases taken meanwhile are among it, too.
            flight.deadline_ms = self.dispatch_deadline(flight.request, now_ms)

    def lease_held(self, execution_id: str, deadline_ms: int, now_ms: int) -> bool:
        """Whether an expired deadline of `execution_id` waits, while worker events lag behind,
        for a lease or heartbeat that may be among them (at most MAX_LEASE_HOLD_MS past it)."""
        flight = self.in_flight.get(execution_id)
        return (
            flight is not None
            and flight.state != "retry_wait"  # a retry timer is ours alone: it never waits
            and now_ms - deadline_ms < MAX_LEASE_HOLD_MS
        )

    # -- worker events ---------------------------------------------------------------------
    def on_event(self, event: ExecutionEvent, now_ms: int) -> tuple[Decision, InFlight | None]:
        """A worker's leased/heartbeat/outcome event. Returns the decision and, when the
        execution's deadline moved, the flight whose timer must be (re)set."""
        decision = _empty()
        kind = event["event_type"]
        flight = self.in_flight.get(event["execution_id"])
        if flight is None or event["attempt"] != flight.attempt or flight.state == "retry_wait":
            # Not the current attempt (or the execution is finished): recorded, never applied.
            decision.events.append(fenced_event(event, now_ms, flight.attempt if flight else None))
            return decision, None
        job_id = flight.request["job_id"]
        if flight.state == "running" and event.get("worker_id") != flight.worker_id:
            # A second worker got the same attempt (a redelivery): the first lease stands, and
            # nothing the second one reports — lease, heartbeat or outcome — is applied.
            decision.events.append(fenced_event(event, now_ms, flight.attempt if flight else None))
            return decision, None
        if kind in ("leased", "heartbeat"):
            flight.state = "running"
            flight.worker_id = event["worker_id"]
            flight.deadline_ms = now_ms + self.lease_ms(event, flight.request) + LEASE_GRACE_MS
            decision.changed_jobs.add(job_id)
            return decision, flight
        if kind == "succeeded" or kind == "cancelled":
            self._finish(event["execution_id"])
            decision.changed_jobs.add(job_id)
            decision.finished.append(flight)
            if is_step(flight.request):
                decision.workflow_inputs.append(
                    step_outcome(flight.request, kind, now_ms, event=event)
                )
            return decision, None
        if kind == "failed" and is_step(flight.request):
            # The fold decides a step's retries: this attempt is over, whatever the error.
            permanent = event.get("error_kind") == "permanent"
            self._step_failed(flight, event.get("error"), permanent, now_ms, decision)
            return decision, None
        if kind == "failed" and event.get("reason") == NO_HANDLER:
            return self._unhandled(flight, event, now_ms, decision)
        if kind == "failed":
            policy = RetryPolicy(
                self.retry_base_ms, self.retry_cap_ms, int(flight.request["max_attempts"])
            )
            error_kind: ErrorKind = (
                "permanent" if event.get("error_kind") == "permanent" else "retryable"
            )
            retry = decide_retry(policy, flight.spent, error_kind, self.rng)
            decision.changed_jobs.add(job_id)
            if retry.action == "retry" and retry.delay_ms is not None:
                flight.state = "retry_wait"
                flight.deadline_ms = now_ms + retry.delay_ms
                decision.events.append(
                    self._event(
                        flight,
                        "retry_scheduled",
                        now_ms,
                        reason=retry.reason,
                        details={
                            "delay_ms": retry.delay_ms,
                            "next_attempt": retry.next_attempt,
                            "retry_at": flight.deadline_ms,
                        },
                        error=event.get("error"),
                        error_kind=error_kind,
                    )
                )
                return decision, flight
            self._dead_letter(flight, retry.reason, event.get("error"), now_ms, decision)
            return decision, None
        return decision, None

    @staticmethod
    def lease_ms(event: ExecutionEvent, request: ExecutionRequest) -> int:
        """How long the lease an event renews runs, measured on the owner's clock: the worker's
        deadline minus its own event time (both read off the worker's clock, so its skew
        cancels out), else the request's lease terms. A worker clock an hour ahead can then
        neither hide a dead worker nor expire a live one."""
        deadline, sent = event.get("lease_deadline"), event.get("event_time")
        if deadline is not None and sent is not None and deadline > sent:
            return int(min(deadline - sent, MAX_LEASE_MS))
        return int(request.get("lease_seconds") or 30) * 1000

    def _unhandled(
        self, flight: InFlight, event: ExecutionEvent, now_ms: int, decision: Decision
    ) -> tuple[Decision, InFlight | None]:
        """A worker that lacks the handler handed the attempt back: offer it again soon, to
        whichever worker reads it then, without spending one of the job's attempts."""
        decision.changed_jobs.add(flight.request["job_id"])
        if is_step(flight.request):
            # The step's attempt numbers are the fold's fencing tokens: never renumbered here.
            error = event.get("error") or "no worker with this job type's handler took it"
            self._step_failed(flight, error, False, now_ms, decision)
            return decision, None
        flight.unhandled += 1
        if flight.unhandled > MAX_UNHANDLED:
            self._dead_letter(flight, NO_HANDLER, event.get("error"), now_ms, decision)
            return decision, None
        delay = UNHANDLED_RETRY_MS + self.rng.randrange(UNHANDLED_RETRY_MS // 2)
        flight.state = "retry_wait"
        flight.deadline_ms = now_ms + delay
        decision.events.append(
            self._event(
                flight,
                "retry_scheduled",
                now_ms,
                reason=NO_HANDLER,
                details={
                    "delay_ms": delay,
                    "next_attempt": flight.attempt + 1,
                    "retry_at": flight.deadline_ms,
                    "unhandled": flight.unhandled,
                },
                error=event.get("error"),
                error_kind="retryable",
            )
        )
        return decision, flight

    # -- timers ----------------------------------------------------------------------------
    def on_deadline(
        self, execution_id: str, attempt: int, deadline_ms: int, now_ms: int
    ) -> tuple[Decision, InFlight | None]:
        """A lease deadline or retry time was reached."""
        decision = _empty()
        flight = self.in_flight.get(execution_id)
        if flight is None or flight.attempt != attempt or flight.deadline_ms != deadline_ms:
            return decision, None  # superseded by a heartbeat, an outcome or a newer attempt
        job_id = flight.request["job_id"]
        decision.changed_jobs.add(job_id)
        if flight.state == "retry_wait":
            self._reissue(flight, "retry", now_ms, decision)
            return decision, flight
        if flight.state == "queued":
            waited_s = (now_ms - int(flight.request["requested_at"])) // 1000
            error = (
                f"attempt {flight.attempt} was not leased within {waited_s} s: no worker "
                f"reads executions.{flight.request['priority']}, or the request was lost"
            )
            decision.events.append(
                self._event(
                    flight,
                    "failed",
                    now_ms,
                    reason="dispatch_timeout",
                    error=error,
                    error_kind="retryable",
                )
            )
            if is_step(flight.request):
                self._step_failed(flight, error, False, now_ms, decision)
                return decision, None
            if flight.spent >= int(flight.request["max_attempts"]):
                self._dead_letter(flight, "dispatch_timeout_max_attempts", error, now_ms, decision)
                return decision, None
            # The request enum has no dispatch trigger: a lease never taken is a lease expired.
            self._reissue(flight, "lease_expired", now_ms, decision)
            return decision, flight
        if flight.state == "running":
            decision.events.append(
                self._event(
                    flight,
                    "failed",
                    now_ms,
                    reason="lease_expired",
                    error=f"lease of worker {flight.worker_id} expired",
                    error_kind="retryable",
                )
            )
            if is_step(flight.request):
                error = f"the lease of worker {flight.worker_id} expired"
                self._step_failed(flight, error, False, now_ms, decision)
                return decision, None
            if flight.spent >= int(flight.request["max_attempts"]):
                self._dead_letter(
                    flight, "lease_expired_max_attempts", "lease expired", now_ms, decision
                )
                return decision, None
            self._reissue(flight, "lease_expired", now_ms, decision)
            return decision, flight
        return decision, None

    def _reissue(
        self, flight: InFlight, trigger: ExecutionTrigger, now_ms: int, decision: Decision
    ) -> None:
        request: ExecutionRequest = {
            **flight.request,
            "attempt": flight.attempt + 1,
            "trigger": trigger,
            "requested_at": now_ms,
            "late": False,
        }
        flight.request = request
        flight.state = "queued"
        flight.deadline_ms = now_ms + self.dispatch_timeout_ms
        flight.worker_id = None
        decision.requests.append(request)

    def _dead_letter(
        self, flight: InFlight, reason: str, error: str | None, now_ms: int, decision: Decision
    ) -> None:
        self._finish(flight.request["execution_id"])
        decision.finished.append(flight)
        decision.events.append(
            self._event(flight, "dead_lettered", now_ms, reason=reason, error=error)
        )
        decision.dead_letters.append(
            execution_dead_letter(flight.request, flight.attempt, reason, error, now_ms)
        )

    # -- records ---------------------------------------------------------------------------
    def _event(
        self,
        flight: InFlight,
        event_type: str,
        now_ms: int,
        *,
        reason: str | None = None,
        error: str | None = None,
        error_kind: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> ExecutionEvent:
        request = flight.request
        event = execution_event(
            request,
            event_type,
            event_id=f"timer:{event_type}:{request['execution_id']}:{request['attempt']}",
            event_time_ms=now_ms,
            worker_id=flight.worker_id,
            lease_deadline_ms=flight.deadline_ms if flight.state == "running" else None,
            error=error,
            error_kind=error_kind,
            reason=reason,
            details=details,
        )
        return event  # built from the request's own fields

"""What the owner of a workflow step's execution decides beyond a job's (decision 0061): an
attempt is over when it fails, whatever the error (the fold numbers and retries attempts),
and its one accepted outcome is owed to the workflow. Mixed into `ExecutionTracker`, whose
bookkeeping (`_finish`, `_dead_letter`, `_event`) it uses."""

from __future__ import annotations

from tickwheel.core.timer.flights import Decision, InFlight
from tickwheel.core.timer.flights import empty_decision as _empty
from tickwheel.core.timer.workflow_steps import step_outcome
from tickwheel.records import ExecutionEvent


class StepFlights:
    # Provided by ExecutionTracker.
    def _finish(self, execution_id: str) -> InFlight | None:
        raise NotImplementedError

    def _dead_letter(
        self, flight: InFlight, reason: str, error: str | None, now_ms: int, decision: Decision
    ) -> None:
        raise NotImplementedError

    def _event(
        self, flight: InFlight, event_type: str, now_ms: int, *, reason: str | None = None
    ) -> ExecutionEvent:
        raise NotImplementedError

    def _step_failed(
        self,
        flight: InFlight,
        error: str | None,
        permanent: bool,
        now_ms: int,
        decision: Decision,
    ) -> None:
        """A step's attempt failed: over for the timer. Its last attempt (or a permanent
        failure) is dead-lettered like a job's; the fold decides what comes next."""
        request = flight.request
        decision.changed_jobs.add(request["job_id"])
        if permanent or flight.attempt >= int(request["max_attempts"]):
            reason = "permanent_error" if permanent else "max_attempts"
            self._dead_letter(flight, reason, error, now_ms, decision)
        else:
            self._finish(request["execution_id"])
            decision.finished.append(flight)
        decision.workflow_inputs.append(
            step_outcome(request, "failed", now_ms, error=error, permanent=permanent)
        )

    def cancel_queued(self, execution_id: str, now_ms: int) -> Decision:
        """A step's attempt not leased yet is cancelled at once (a running one waits for its
        worker's verdict): recorded as cancelled, its verdict owed to the workflow."""
        decision = _empty()
        flight = self._finish(execution_id)
        if flight is None:
            return decision
        decision.changed_jobs.add(flight.request["job_id"])
        decision.finished.append(flight)
        decision.events.append(
            self._event(flight, "cancelled", now_ms, reason="workflow_cancelled")
        )
        decision.workflow_inputs.append(step_outcome(flight.request, "cancelled", now_ms))
        return decision

    def drop(self, execution_id: str) -> InFlight | None:
        """Forget an attempt replaced by a newer one (an operator's retry): whatever its
        worker still reports is fenced."""
        return self._finish(execution_id)

"""An execution in flight, and what one decision about executions asks for (the
`ExecutionTracker`'s vocabulary; `executions.py` re-exports both)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tickwheel.records import DeadLetter, ExecutionEvent, ExecutionRequest, WorkflowInput

__all__ = ["Decision", "InFlight", "empty_decision"]


@dataclass(slots=True)
class InFlight:
    request: ExecutionRequest  # the current attempt's
    state: str  # queued | running | retry_wait
    deadline_ms: int | None = None  # lease deadline (running) or retry time (retry_wait)
    worker_id: str | None = None
    unhandled: int = 0  # attempts handed back by workers without the handler (no_handler)

    @property
    def attempt(self) -> int:
        return int(self.request["attempt"])

    @property
    def spent(self) -> int:
        """Attempts that count against `maxAttempts`: those a handler ran (or could have)."""
        return self.attempt - self.unhandled


@dataclass
class Decision:
    """What one event or one expired timer asks for."""

    requests: list[ExecutionRequest]
    events: list[ExecutionEvent]
    dead_letters: list[DeadLetter]
    changed_jobs: set[str]
    finished: list[InFlight]
    # For workflow steps: the accepted outcome, as the WorkflowInput the orchestrator is owed.
    workflow_inputs: list[WorkflowInput] = field(default_factory=list)


def empty_decision() -> Decision:
    return Decision([], [], [], set(), [])

"""The watchdog's decision step: fold inputs into facts, then at a watermark decide.

    state = WatchdogState()
    state.apply(observed)                       # any order, any number of times
    transitions, changed = evaluate(state, watermark_ms, thresholds)

No clock is read here: the service passes the event-time watermark it computed from its
inputs. The same inputs, folded before the same sequence of watermarks, give the same
transitions; an input delivered twice, or in another order between two evaluations, changes
nothing (tests/unit/core/watchdog/test_watchdog_properties.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tickwheel.core.watchdog.conditions import Condition, conditions
from tickwheel.core.watchdog.facts import Facts, Observed
from tickwheel.core.watchdog.lifecycle import Incident, Transition, acknowledge, advance
from tickwheel.core.watchdog.parents import PARENT_KINDS, with_parents
from tickwheel.core.watchdog.runs import RUN_KINDS, all_run_conditions
from tickwheel.core.watchdog.thresholds import Thresholds
from tickwheel.core.watchdog.wheel import DeadlineWheel
from tickwheel.core.watchdog.workflows import KIND as STUCK_KIND
from tickwheel.core.watchdog.workflows import stuck_steps
from tickwheel.core.watchdog.workflows import why_clear as why_step_clear


@dataclass(slots=True)
class WatchdogState:
    """Facts folded so far, the incidents of every fingerprint, and the last watermark
    evaluated (evaluations never go back in event time)."""

    facts: Facts = field(default_factory=Facts)
    incidents: dict[str, Incident] = field(default_factory=dict)
    watermark: int | None = None
    # Which jobs an evaluation looks at (decision 0133); None: every job, the full scan the
    # wheel is tested against.
    wheel: DeadlineWheel | None = field(default_factory=DeadlineWheel)

    def apply(self, observed: Observed) -> None:
        self.facts.apply(observed)

    def open_incidents(self) -> list[Incident]:
        return [i for _, i in sorted(self.incidents.items()) if i.state == "open"]


def evaluate(
    state: WatchdogState,
    watermark_ms: int,
    thresholds: Thresholds | None = None,
    extra: Iterable[Condition] = (),
) -> tuple[list[Transition], set[str]]:
    """The transitions at `watermark_ms` and the fingerprints whose incident changed. A
    watermark not past the last one evaluated decides nothing. `extra`: conditions the
    caller observed itself (the service's own lag), put through the same lifecycle."""
    thresholds = thresholds or Thresholds()
    if state.watermark is not None and watermark_ms <= state.watermark:
        return [], set()
    state.watermark = watermark_ms
    if state.wheel is None:
        job_order = run_order = sorted(state.facts.jobs)
    else:
        job_order, run_order = state.wheel.visit(
            state.facts.jobs, watermark_ms, thresholds.derived_grace_ms
        )
    current = [*extra, *conditions(state.facts, watermark_ms, thresholds, job_order)]
    current.extend(all_run_conditions(state.facts.jobs, run_order, watermark_ms, thresholds))
    current.extend(stuck_steps(state.facts.workflows, watermark_ms))
    # Parents first, so a child opened in the same evaluation already names its parent.
    current = with_parents(state.facts, current, watermark_ms, thresholds)
    transitions, changed = advance(
        state.incidents,
        current,
        watermark_ms,
        thresholds,
        clear_evidence=lambda incident: _why_clear(state.facts, incident),
    )
    # After the conditions: an acknowledgement given while its incident was open applies to
    # it, one naming an incident resolved by now is moot.
    acked, acked_changed = acknowledge(state.incidents, state.facts.acks.values(), watermark_ms)
    _prune(state.facts, watermark_ms, thresholds)
    return transitions + acked, changed | acked_changed


def _why_clear(facts: Facts, incident: Incident) -> dict[str, Any]:
    if incident.kind == "watchdog_lagging":
        return {"reason": "caught_up"}
    if incident.kind == "output_stale":
        return {"reason": "fresh_output"}
    if incident.kind == "freshness_query_failed":
        return {"reason": "query_answered"}
    if incident.kind == "missed_slots":
        return {"reason": "audit_clean"}
    if incident.kind == STUCK_KIND:
        return why_step_clear(facts.workflows, incident.subject)
    if incident.kind in PARENT_KINDS:
        return {
            "reason": "advancing" if incident.kind == "timer_partition_stalled" else "worker_taking"
        }
    if incident.kind not in ("job_overdue", "broken_chain", *RUN_KINDS):
        return {}
    job = facts.jobs.get(incident.subject)
    spec = job.spec if job is not None else None
    if job is None or job.deleted or spec is None:
        return {"reason": "job_deleted"}
    if incident.kind == "disabled_past_review":
        return {"reason": "enabled" if spec.enabled else "review_date_moved"}
    if not spec.enabled:
        return {"reason": "paused"}
    if incident.kind in RUN_KINDS:
        return {
            "reason": "run_finished" if incident.kind == "run_too_long" else "longer_run",
            "last_run": job.last_run,
        }
    if incident.kind == "broken_chain":
        return {"reason": "future_occurrence"}
    if job.last_success_ms is not None and job.last_success_ms >= incident.opened_at:
        return {
            "reason": "succeeded",
            "last_success": job.last_success_ms,
            "slot": job.last_success_slot,
            "diagnosis": "succeeded_late",
        }
    return {"reason": "condition_cleared", "last_success": job.last_success_ms}


def _prune(facts: Facts, watermark: int, thresholds: Thresholds) -> None:
    """Forget what no condition can look at again: slots at or before a job's last success,
    the newest run's length of a job that declares no run time to judge it by; executions
    that can raise nothing become settled (their attempt kept, for `settled_after_ms`)."""
    jobs = facts.jobs
    before = len(jobs.slots)
    for job_id in list(jobs.slots):
        job = jobs[job_id]
        done = job.last_success_slot
        if done is not None:
            job.forget_slots_through(done)
    jobs.slots = _compacted(jobs.slots, before)
    before = len(jobs.last_runs)
    for job_id in list(jobs.last_runs):
        spec = jobs[job_id].spec
        # Only run_too_short reads it, and run_too_long's resolve evidence (decision 0106).
        if spec is None or (spec.min_run_ms is None and spec.max_run_ms is None):
            del jobs.last_runs[job_id]
    jobs.last_runs = _compacted(jobs.last_runs, before)
    for command_id in [c for c, ack in facts.acks.items() if ack.at <= watermark]:
        del facts.acks[command_id]  # applied, or moot: a replay is recognised by the incident
    horizon = watermark - thresholds.settled_after_ms
    before = len(facts.executions)
    facts.settle(watermark, thresholds.settled_after_ms)
    facts.executions = _compacted(facts.executions, before)
    facts.workflows.prune(horizon)


_Value = TypeVar("_Value")


def _compacted(table: dict[str, _Value], before: int) -> dict[str, _Value]:
    """`table` copied when most of it was just deleted: a dict never shrinks on deletion, so
    after a burst (a million slots in flight, then succeeded) it would keep its peak size."""
    return dict(table) if before > 2 * len(table) + 1024 else table

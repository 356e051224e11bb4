"""The watchdog's pure evaluator: what each job owed, recomputed with the core's schedule
code, against what the logs say happened; alert incidents that open once and resolve.

* `facts` — the commutative fold of inputs (definitions, requests, events, dead letters).
* `jobs` — a definition as the watchdog needs it; the effective (declared or derived)
  `expectedMaxInterval`.
* `conditions` — overdue (with a per-slot diagnosis), broken chain, dead-letter age, oldest
  ready age, at a watermark.
* `lifecycle` — incidents and their `opened` / `updated` / `resolved` transitions.
* `evaluator` — `WatchdogState` and `evaluate(state, watermark_ms, thresholds)`.
"""

from tickwheel.core.watchdog.conditions import KINDS, Condition, diagnose
from tickwheel.core.watchdog.evaluator import WatchdogState, evaluate
from tickwheel.core.watchdog.facts import Acknowledgement, Facts, Observed
from tickwheel.core.watchdog.jobs import Interval, JobSpec, effective_interval, job_spec
from tickwheel.core.watchdog.lifecycle import Incident, Transition, fingerprint, plain_alert
from tickwheel.core.watchdog.thresholds import Thresholds

__all__ = [
    "KINDS",
    "Acknowledgement",
    "Condition",
    "Facts",
    "Incident",
    "Interval",
    "JobSpec",
    "Observed",
    "Thresholds",
    "Transition",
    "WatchdogState",
    "diagnose",
    "effective_interval",
    "evaluate",
    "fingerprint",
    "job_spec",
    "plain_alert",
]

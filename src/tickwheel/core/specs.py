"""The `schedules` field of a job: several cron/interval specs, their shape checked here and
each spec parsed by `schedule.parse_schedule` like the job's own `cron` or `every`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tickwheel.core.errors import InvalidSchedule

__all__ = ["MAX_SPECS", "spec_list"]

MAX_SPECS = 16
_SPEC_KEYS = frozenset({"cron", "every", "phase"})
_SPEC_HELP = (
    f"a list of at most {MAX_SPECS} specs, each {{'cron': ...}} or {{'every': ..., 'phase': ...}}}}"
)


def spec_list(value: object) -> list[tuple[Any, Any, Any]]:
    """The (cron, every, phase) of each entry of `schedules`, its shape checked."""
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not 1 <= len(value) <= MAX_SPECS:
        raise InvalidSchedule("schedules", f"accepted: {_SPEC_HELP}")
    specs = []
    for i, spec in enumerate(value):
        if not isinstance(spec, Mapping) or set(spec) - _SPEC_KEYS:
            raise InvalidSchedule(f"schedules[{i}]", f"accepted: {_SPEC_HELP}")
        cron, every, phase = spec.get("cron"), spec.get("every"), spec.get("phase")
        if (cron is None) == (every is None):
            raise InvalidSchedule(
                f"schedules[{i}]", "needs exactly one of cron or every; accepted: " + _SPEC_HELP
            )
        specs.append((cron, every, phase))
    return specs

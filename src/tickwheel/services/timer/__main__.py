"""`python -m tickwheel.services.timer`: one timer process, its settings from its flags and the
environment (`--help` lists them), stopped within its deadline by SIGTERM."""

from __future__ import annotations

import gc
import logging

from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import serve
from tickwheel.services.environment import load, log_level
from tickwheel.services.timer.service import TimerService
from tickwheel.services.timer.settings import TimerSettings

log = logging.getLogger("tickwheel.timer")


def main(argv: list[str] | None = None) -> None:
    settings = load(TimerSettings, "timer", argv, description="A tickwheel timer.")
    configure_logging(log_level(settings.log_level))
    # A burst allocates a few dicts per occurrence, nearly all acyclic: young collections every
    # 700 allocations (the default) cost a 300,000-job burst a seventh of its speed.
    gc.set_threshold(100_000, 50, 100)
    serve(log, "timer", lambda deadline: TimerService(settings, deadline=deadline))


if __name__ == "__main__":
    main()

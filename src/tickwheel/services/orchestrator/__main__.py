"""`python -m tickwheel.services.orchestrator`: one orchestrator process, its settings from its
flags and the environment (`--help` lists them), stopped within its deadline by SIGTERM."""

from __future__ import annotations

import logging

from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import serve
from tickwheel.services.environment import load, log_level
from tickwheel.services.orchestrator.service import OrchestratorService
from tickwheel.services.orchestrator.settings import OrchestratorSettings

log = logging.getLogger("tickwheel.orchestrator")


def main(argv: list[str] | None = None) -> None:
    settings = load(
        OrchestratorSettings, "orchestrator", argv, description="A tickwheel orchestrator."
    )
    configure_logging(log_level(settings.log_level))
    serve(log, "orchestrator", lambda deadline: OrchestratorService(settings, deadline=deadline))


if __name__ == "__main__":
    main()

"""`python -m tickwheel.services.orchestrator`: one orchestrator process (its instance name from
`--instance` or TICKWHEEL_INSTANCE), stopped within its deadline by SIGTERM."""

from __future__ import annotations

import logging
import os

from tickwheel.logs import configure_logging
from tickwheel.runtime.shutdown import serve
from tickwheel.services.environment import service_parser
from tickwheel.services.orchestrator.service import OrchestratorService
from tickwheel.services.orchestrator.settings import OrchestratorSettings

log = logging.getLogger("tickwheel.orchestrator")


def main(argv: list[str] | None = None) -> None:
    parser = service_parser("tickwheel.services.orchestrator")
    parser.add_argument(
        "--instance",
        default=os.environ.get("TICKWHEEL_INSTANCE", "orchestrator"),
        help="this instance's name in the group (env TICKWHEEL_INSTANCE)",
    )
    args = parser.parse_args(argv)
    configure_logging(getattr(logging, os.environ.get("TICKWHEEL_LOG_LEVEL", "INFO").upper()))
    serve(
        log,
        "orchestrator",
        lambda deadline: OrchestratorService(
            OrchestratorSettings(instance=args.instance), deadline=deadline
        ),
    )


if __name__ == "__main__":
    main()

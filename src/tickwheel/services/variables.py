"""The variables table of docs/deploy.md, made from every service's settings (decision 0215).

`python -m tickwheel.services.variables` rewrites the table between its markers in
docs/deploy.md; `--check` fails when the file differs from what the settings say (`make lint`),
so the documentation cannot drift from the code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tickwheel.services.api.service import ApiSettings
from tickwheel.services.environment import SHARED, Var, variables
from tickwheel.services.history.settings import HistorySinkSettings
from tickwheel.services.jobwriter.settings import JobWriterSettings
from tickwheel.services.orchestrator.settings import OrchestratorSettings
from tickwheel.services.timer.settings import TimerSettings
from tickwheel.services.watchdog.settings import WatchdogSettings
from tickwheel.services.worker.settings import WorkerSettings

SERVICES: dict[str, type] = {
    "timer": TimerSettings,
    "orchestrator": OrchestratorSettings,
    "jobwriter": JobWriterSettings,
    "worker": WorkerSettings,
    "history": HistorySinkSettings,
    "watchdog": WatchdogSettings,
    "api": ApiSettings,
}
BEGIN = "<!-- BEGIN GENERATED: python -m tickwheel.services.variables -->"
END = "<!-- END GENERATED -->"
DOC = Path(__file__).resolve().parents[3] / "docs" / "deploy.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(flag: str, var: Var) -> str:
    default = var.default_text()
    cells = (
        f"`{var.env}`",
        f"`{flag}`" if flag else "",
        f"`{default}`" if default else "",
        var.help,
    )
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def table() -> str:
    """The generated section: one table per service, then the variables every one reads."""
    head = "| Variable | Flag | Default | Meaning |\n|---|---|---|---|"
    parts = [
        "Generated from each service's settings (`services/<name>/settings.py`): do not edit "
        "by hand; `make lint` checks it. Every service takes `--help`, which says the same.",
    ]
    for name, cls in SERVICES.items():
        rows = "\n".join(_row(flag, var) for flag, var in variables(cls))
        parts.append(f"#### `python -m tickwheel.services.{name}`\n\n{head}\n{rows}")
    shared = "\n".join(_row("", var) for var in SHARED)
    parts.append(f"#### Read by every service (through the shared modules)\n\n{head}\n{shared}")
    return "\n\n".join(parts)


def rendered(document: str) -> str:
    """`document` with the text between the markers replaced by the table."""
    start, end = document.index(BEGIN) + len(BEGIN), document.index(END)
    return document[:start] + "\n" + table() + "\n" + document[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tickwheel.services.variables")
    parser.add_argument("--check", action="store_true", help="fail if docs/deploy.md differs")
    parser.add_argument("--file", type=Path, default=DOC)
    args = parser.parse_args(argv)
    document = args.file.read_text(encoding="utf-8")
    wanted = rendered(document)
    if args.check:
        if wanted != document:
            print(
                f"{args.file}: the variables table differs from the services' settings; "
                "run `python -m tickwheel.services.variables`",
                file=sys.stderr,
            )
            return 1
        return 0
    args.file.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where tickwheel finds its checked-in data (topology, schemas, the broker's Maven file)
and where the local stack keeps its state.

The data folders live at the repository root. An editable install finds them by walking up
from this file; `TICKWHEEL_PROJECT_ROOT` points elsewhere (e.g. a container image).
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    override = os.environ.get("TICKWHEEL_PROJECT_ROOT")
    if override:
        return Path(override).resolve()
    here = Path(__file__).resolve()
    for candidate in here.parents:
        if (candidate / "topology" / "topics.toml").is_file():
            return candidate
    raise FileNotFoundError(
        "cannot find the tickwheel project root (a folder holding topology/topics.toml); "
        "set TICKWHEEL_PROJECT_ROOT"
    )


def state_home() -> Path:
    """The local stack's data, logs and pid files: `TICKWHEEL_HOME`, default `./.tickwheel`."""
    return Path(os.environ.get("TICKWHEEL_HOME", ".tickwheel")).resolve()


def stack_approval_keys_file(home: Path | None = None) -> Path:
    """Where the local development stack keeps the approval key it made (owner-only)."""
    return (home or state_home()) / "stack" / "approval-keys"

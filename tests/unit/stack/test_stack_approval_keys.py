"""The development stack signs approval links out of the box (issue 33, item 6): `stack up`
makes its own key, kept in its home and readable by its owner only, and the CLI and SDK run
against the running stack find it; with the stack stopped, or a key given, they do not."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tickwheel.adapters.kafka.config import STACK_STATUS
from tickwheel.sdk.workflows import approval_keys
from tickwheel.stack.control import dev_approval_keys


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TICKWHEEL_HOME", str(tmp_path))
    monkeypatch.delenv("TICKWHEEL_APPROVAL_KEYS", raising=False)
    return tmp_path


def _running(home: Path, pid: int) -> None:
    """The status file a running supervisor (process `pid`) keeps."""
    status = home / STACK_STATUS
    status.parent.mkdir(parents=True, exist_ok=True)
    status.write_text(json.dumps({"supervisor_pid": pid, "bootstrap_servers": "127.0.0.1:1"}))


def test_the_stack_makes_one_key_kept_for_its_owner_only(home: Path) -> None:
    first = dev_approval_keys()
    kid, _, secret = first.partition(":")
    assert kid == "dev" and len(secret) >= 40
    assert dev_approval_keys() == first  # made once, kept across restarts
    mode = stat.S_IMODE(os.stat(home / "stack" / "approval-keys").st_mode)
    assert mode == 0o600


def test_a_client_finds_the_running_stacks_key_and_not_a_stopped_ones(home: Path) -> None:
    made = dev_approval_keys()
    _running(home, os.getpid())
    assert approval_keys() == {"dev": made.partition(":")[2].encode()}  # nothing exported
    _running(home, 2**22 + 12345)  # a supervisor that is gone
    assert approval_keys() == {}


def test_a_key_given_wins_over_the_stacks(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dev_approval_keys()
    _running(home, os.getpid())
    monkeypatch.setenv("TICKWHEEL_APPROVAL_KEYS", "ops:c2VjcmV0LXNlY3JldC1zZWNyZXQ")
    assert list(approval_keys()) == ["ops"]

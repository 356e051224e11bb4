"""Which Kafka address the CLI and the SDK use: the variable, else the running local stack's
recorded address, else the default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tickwheel.adapters.kafka.config import (
    DEFAULT_BOOTSTRAP,
    bootstrap_servers,
    bootstrap_source,
    consumer_config,
    producer_config,
)
from tickwheel.stack import supervisor


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TICKWHEEL_HOME", str(tmp_path))
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    return tmp_path


def stack_recorded(port: int, running: bool = True) -> None:
    """The status file exactly as the supervisor of `stack up --kafka-port PORT` writes it."""
    stack = supervisor.Supervisor(supervisor.StackOptions(kafka_port=port))
    supervisor.stack_dir().mkdir(parents=True, exist_ok=True)
    stack._write_status(running=running)


def test_nothing_recorded_means_the_default(home: Path) -> None:
    assert bootstrap_servers() == DEFAULT_BOOTSTRAP == "127.0.0.1:9092"
    assert "no local stack" in bootstrap_source()[1]


def test_a_running_stack_is_found_at_its_recorded_port(home: Path) -> None:
    stack_recorded(19092)
    assert bootstrap_servers() == "127.0.0.1:19092"
    assert "running local stack" in bootstrap_source()[1]
    # Every client made without an explicit address goes there.
    assert producer_config()["bootstrap.servers"] == "127.0.0.1:19092"
    assert consumer_config("g")["bootstrap.servers"] == "127.0.0.1:19092"


def test_the_variable_wins_over_the_stack(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack_recorded(19092)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka.example:9092")
    assert bootstrap_servers() == "kafka.example:9092"
    assert bootstrap_source()[1] == "from KAFKA_BOOTSTRAP_SERVERS"


def test_an_empty_variable_counts_as_unset(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stack_recorded(19092)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "")
    assert bootstrap_servers() == "127.0.0.1:19092"


def test_a_stopped_stack_is_not_used(home: Path) -> None:
    stack_recorded(19092, running=False)
    assert bootstrap_servers() == DEFAULT_BOOTSTRAP


def test_a_killed_supervisor_is_not_used(home: Path) -> None:
    stack_recorded(19092)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = supervisor.status_path()
    document = json.loads(path.read_text())
    path.write_text(json.dumps({**document, "supervisor_pid": dead.pid}))
    assert bootstrap_servers() == DEFAULT_BOOTSTRAP


@pytest.mark.parametrize("text", ["", "{", "[]", '{"supervisor_pid": "1"}', "null"])
def test_an_unreadable_status_means_the_default(home: Path, text: str) -> None:
    supervisor.stack_dir().mkdir(parents=True)
    supervisor.status_path().write_text(text)
    assert bootstrap_servers() == DEFAULT_BOOTSTRAP


def test_the_worker_settings_take_the_stack_address(home: Path) -> None:
    from tickwheel.services.worker.settings import WorkerSettings

    stack_recorded(19092)
    assert WorkerSettings().bootstrap == "127.0.0.1:19092"

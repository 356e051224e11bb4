"""The local broker's storage format: a random cluster id can never make it fail by chance."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tickwheel.stack.broker import (
    BrokerConfig,
    LocalKafka,
    _kafka_cluster_id,
    free_ports,
    java_executable,
    kafka_lib_dir,
)

# A first byte of 0b111110xx encodes to '-' in URL-safe base64: one id in 64 starts with it.
DASHED = bytes([0xF8]) + bytes(15)
PLAIN = bytes([0x10]) + bytes(15)


def test_the_bytes_that_made_starts_fail_do_encode_to_a_leading_dash() -> None:
    assert base64.urlsafe_b64encode(DASHED).decode().startswith("-")


def test_a_generated_cluster_id_never_begins_with_a_dash() -> None:
    draws: Iterator[bytes] = iter([DASHED, DASHED, PLAIN])
    cluster_id = _kafka_cluster_id(lambda: next(draws))
    assert not cluster_id.startswith("-")
    assert cluster_id == base64.urlsafe_b64encode(PLAIN).decode().rstrip("=")
    assert len(cluster_id) == 22


def test_random_cluster_ids_are_well_formed() -> None:
    ids = {_kafka_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_the_format_command_passes_the_id_as_one_token(tmp_path: Path) -> None:
    broker = LocalKafka(BrokerConfig(data_dir=tmp_path))
    dashed = base64.urlsafe_b64encode(DASHED).decode().rstrip("=")
    command = broker.format_command(dashed)
    assert f"--cluster-id={dashed}" in command
    assert dashed not in command  # never a token of its own, where it would read as a flag
    assert "-t" not in command


def _kafka_runnable() -> bool:
    try:
        java_executable()
    except Exception:
        return False
    return any(kafka_lib_dir().glob("kafka_2.13-*.jar"))


def test_a_cluster_id_beginning_with_a_dash_formats(tmp_path: Path) -> None:
    # The real StorageTool (about a second), given the kind of id an older cluster.id may hold.
    if not _kafka_runnable():
        pytest.fail("Java and the Kafka jars are needed (make test fetches the jars)")
    data_dir = tmp_path / "kafka"
    data_dir.mkdir()
    (data_dir / "cluster.id").write_text(base64.urlsafe_b64encode(DASHED).decode().rstrip("="))
    broker = LocalKafka(BrokerConfig(data_dir=data_dir, port=1, controller_port=2))
    broker.prepare()
    meta = (data_dir / "logs" / "meta.properties").read_text()
    assert "cluster.id=-" in meta, meta


def test_the_old_two_token_form_is_what_failed(tmp_path: Path) -> None:
    """Pins the cause, so the test above is known to exercise it."""
    if not _kafka_runnable():
        pytest.fail("Java and the Kafka jars are needed (make test fetches the jars)")
    broker = LocalKafka(BrokerConfig(data_dir=tmp_path, port=1, controller_port=2))
    broker.properties_path.write_text(broker.config.properties())
    dashed = base64.urlsafe_b64encode(DASHED).decode().rstrip("=")
    command = broker.format_command(dashed)
    index = command.index(f"--cluster-id={dashed}")
    command[index : index + 1] = ["-t", dashed]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode != 0
    assert "expected one argument" in result.stderr


def test_a_broker_on_free_ports_has_two_distinct_ports(tmp_path: Path) -> None:
    # Two one-port picks can be handed the same port; the broker's listeners then collide.
    for _ in range(50):
        config = BrokerConfig.on_free_ports(tmp_path)
        assert config.port != config.controller_port
    assert len(set(free_ports(8))) == 8

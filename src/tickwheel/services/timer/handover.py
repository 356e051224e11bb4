"""A timer partition's state as the timer itself reads it back, for a resize to move
(decision 0211): the resize must move complete states, and a state the timer has not written
yet lives in its request log, which only the timer's own restore knows how to read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.adapters.kafka.broker_clients import BrokerClients
from tickwheel.services.environment import from_env
from tickwheel.services.timer.gate import RecordGate
from tickwheel.services.timer.inputs import PartitionInputs
from tickwheel.services.timer.records import encode_state
from tickwheel.services.timer.restore import PartitionRestorer, Rebuilt
from tickwheel.services.timer.runtime import TimerTopics
from tickwheel.services.timer.settings import TimerSettings


def read_partition(
    partition: int, partitions: int, bootstrap: str, now_ms: Callable[[], int]
) -> Rebuilt:
    """Partition `partition` of a group of `partitions`, read back as a restore reads it (its
    previous owner must be fenced already)."""
    settings = from_env(TimerSettings, bootstrap=bootstrap)
    clients = BrokerClients(bootstrap)
    reader = clients.reader()
    topics = TimerTopics()
    gate = RecordGate(partitions, settings.max_payload_bytes, now_ms)
    inputs = PartitionInputs(clients, reader, settings.group_id, topics.commands, topics.events)
    try:
        restorer = PartitionRestorer(settings, topics, gate, inputs, now_ms, clients, reader)
        return restorer.rebuild(partition)
    finally:
        inputs.close()


def renamed_state(state: Mapping[str, Any], key: str, seq: int) -> bytes:
    """`state` as TimerState bytes under job id `key`: a workflow's step key changes with the
    partition count, and its pending requests carry it too."""
    pending = []
    for entry in state.get("pending") or []:
        request = entry.get("request")
        if isinstance(request, dict):
            entry = {**entry, "request": {**request, "job_id": key}}
        pending.append(entry)
    return encode_state({**state, "job_id": key, "pending": pending}, {}, seq)

"""Reading a group's partition offsets asks again when the broker answers that a partition's
leader is moving (a topic just made, a broker restarting): the admin client's list_offsets
does not retry it, and one such answer must not fail the console's operations panel."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from tickwheel.adapters.kafka import groups


class Offset:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class Admin:
    """list_offsets answering `errors` (one per call, None: the offsets) in turn."""

    def __init__(self, errors: list[int | None]) -> None:
        self.errors, self.calls = errors, 0

    def list_offsets(self, wanted: dict[TopicPartition, Any], **_: Any) -> dict[Any, Future[Any]]:
        code = self.errors[min(self.calls, len(self.errors) - 1)]
        self.calls += 1
        futures: dict[Any, Future[Any]] = {}
        for tp in wanted:
            future: Future[Any] = Future()
            if code is None:
                future.set_result(Offset(7))
            else:
                future.set_exception(KafkaException(KafkaError(code)))
            futures[tp] = future
        return futures


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groups, "LIST_OFFSETS_PAUSE_S", 0.0)


def test_a_moving_leader_is_asked_again() -> None:
    admin = Admin([KafkaError.NOT_LEADER_FOR_PARTITION, None])
    assert groups._offsets(admin, [("t", 0)], OffsetSpec.latest(), 1.0) == {("t", 0): 7}
    assert admin.calls == 2


def test_it_gives_up_after_its_attempts() -> None:
    admin = Admin([KafkaError.NOT_LEADER_FOR_PARTITION])
    with pytest.raises(KafkaException):
        groups._offsets(admin, [("t", 0)], OffsetSpec.latest(), 1.0)
    assert admin.calls == groups.LIST_OFFSETS_ATTEMPTS


def test_an_error_that_is_not_transient_is_not_retried() -> None:
    admin = Admin([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(KafkaException):
        groups._offsets(admin, [("t", 0)], OffsetSpec.latest(), 1.0)
    assert admin.calls == 1

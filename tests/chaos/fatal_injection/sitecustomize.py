"""Injects a fatal Kafka client error into a service process a test starts with this folder on
PYTHONPATH (Python imports `sitecustomize` at start-up). Test code only: nothing in tickwheel
knows of it.

TICKWHEEL_TEST_FATAL = consumer: `TICKWHEEL_TEST_FATAL_AFTER_S` seconds after start, the
next `consume`/`poll` of any consumer also carries a message whose error is the client's
fatal one, as librdkafka hands a fenced static member its error.
TICKWHEEL_TEST_FATAL = producer: from then on, an event producer's error callback is given the
fatal error from its `poll`/`flush` (what a broken idempotent sequence makes librdkafka do)."""

from __future__ import annotations

import os
import time
from typing import Any

KIND = os.environ.get("TICKWHEEL_TEST_FATAL", "")


def _install() -> None:
    from confluent_kafka import KafkaError

    from tickwheel.adapters.kafka import fatal

    due = time.monotonic() + float(os.environ.get("TICKWHEEL_TEST_FATAL_AFTER_S", "8"))
    error = KafkaError(KafkaError._FATAL, "Fatal error: injected by the test", fatal=True)

    class FatalMessage:
        def error(self) -> Any:
            return error

    if KIND == "consumer":
        consume, poll = fatal.GuardedConsumer.consume, fatal.GuardedConsumer.poll

        def consume_injected(self: Any, *args: Any, **kwargs: Any) -> list[Any]:
            messages = consume(self, *args, **kwargs)
            if time.monotonic() >= due:
                fatal.raise_if_fatal([*messages, FatalMessage()])
            return messages

        def poll_injected(self: Any, *args: Any, **kwargs: Any) -> Any:
            message = poll(self, *args, **kwargs)
            if time.monotonic() >= due:
                fatal.raise_if_fatal([FatalMessage()])
            return message

        fatal.GuardedConsumer.consume = consume_injected  # type: ignore[method-assign]
        fatal.GuardedConsumer.poll = poll_injected  # type: ignore[method-assign]
    elif KIND == "producer":
        import confluent_kafka

        class FailingProducer(confluent_kafka.Producer):  # type: ignore[misc]
            """Calls its error callback with the fatal error from `poll`/`flush` once due, as
            librdkafka serves a fatal error to it (only producers that set one: tickwheel's
            event producers; transactional ones meet theirs from the transaction calls)."""

            def __init__(self, config: dict[str, Any]) -> None:
                super().__init__(config)
                self.error_cb = config.get("error_cb")

            def poll(self, *args: Any, **kwargs: Any) -> int:
                if self.error_cb is not None and time.monotonic() >= due:
                    self.error_cb(error)
                served: int = super().poll(*args, **kwargs)
                return served

            def flush(self, *args: Any, **kwargs: Any) -> int:
                if self.error_cb is not None and time.monotonic() >= due:
                    self.error_cb(error)
                remaining: int = super().flush(*args, **kwargs)
                return remaining

        confluent_kafka.Producer = FailingProducer  # type: ignore[misc]


if KIND:
    _install()

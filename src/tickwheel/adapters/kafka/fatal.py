"""A fatal Kafka client error ends the process (decision 0200).

librdkafka calls an error fatal when the client cannot go on: a static group member fenced by
another member with its `group.instance.id` (what a consumer meets when its group's coordinator
dies and a rejoin races the old membership), an idempotent producer whose sequence is broken.
Every later call fails, and the consumer has given up its partitions. A fatal error reaches a
consumer as a message whose error code is `_FATAL` among the messages `consume`/`poll` return,
so a loop that skips message errors (`if msg.error(): continue`) skips it too and sits still,
holding nothing, for good (issue 31: both timers silent after a broker restart).

So the check is made once, here, for every consumer tickwheel builds: `consume` and `poll` raise
`FatalClientError` instead of returning such a message, the service's loop ends, `serve` logs
one line and exits with `FATAL_CLIENT_EXIT_CODE`, and its supervisor (the stack, Kubernetes,
compose) starts it afresh with new clients. A non-transactional producer's fatal error is
raised the same way from its callbacks' poll (`raise_on_fatal_error`); a transactional
producer's is already handled where its transaction fails (`is_fatal` drops the producer).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError

from tickwheel.errors import TickwheelError

# EX_TEMPFAIL: a temporary failure, try again (a supervisor restarts on any non-zero code).
FATAL_CLIENT_EXIT_CODE = 75


class FatalClientError(TickwheelError, RuntimeError):
    """The Kafka client met an error it cannot recover from; the process must start afresh."""

    def __init__(self, error: Any) -> None:
        reason = error.str() if hasattr(error, "str") else str(error)
        super().__init__(f"fatal Kafka client error: {reason}")
        self.error = error
        self.reason = reason


def is_fatal_error(error: Any) -> bool:
    """A `KafkaError` that ends the client: flagged fatal, or the `_FATAL` code a consumer's
    message carries once the client has failed."""
    if error is None:
        return False
    return bool(error.fatal()) or error.code() == KafkaError._FATAL


def raise_if_fatal(messages: Iterable[Any]) -> None:
    """Raise `FatalClientError` for the first message carrying a fatal error."""
    for message in messages:
        error = message.error()
        if error is not None and is_fatal_error(error):
            raise FatalClientError(error)


def raise_on_fatal_error(error: Any) -> None:
    """An `error_cb`: a fatal error is raised from the client's poll or flush (confluent-kafka
    re-raises what a callback raises); other errors are the client's to retry."""
    if is_fatal_error(error):
        raise FatalClientError(error)


class GuardedConsumer(Consumer):  # type: ignore[misc]  # the client's class is untyped
    """`confluent_kafka.Consumer` whose `consume` and `poll` raise `FatalClientError` rather
    than hand back a fatal error as a message."""

    def consume(self, *args: Any, **kwargs: Any) -> list[Any]:
        messages: list[Any] = super().consume(*args, **kwargs)
        raise_if_fatal(messages)
        return messages

    def poll(self, *args: Any, **kwargs: Any) -> Any:
        message = super().poll(*args, **kwargs)
        if message is not None:
            raise_if_fatal((message,))
        return message

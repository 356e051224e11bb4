"""The one root of tickwheel's errors.

Every error a user can meet subclasses `TickwheelError` and the fitting built-in, carries
structured fields, and says what was wrong and what is accepted.
"""

from __future__ import annotations


class TickwheelError(Exception):
    """Root of every error tickwheel raises on purpose.

    `except TickwheelError` catches what tickwheel means to tell a caller; anything else
    escaping tickwheel is a bug. Each subclass also subclasses the fitting built-in
    (`ValueError`, `LookupError`, `RuntimeError`), so callers may catch either.
    """


class InvalidInput(TickwheelError, ValueError):
    """Input a user supplied (a job definition, a flag, a cron expression) is not acceptable.

    `field` names what was wrong (a definition field such as `cron`, or a flag); `message`
    says why and what is accepted.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class TopologyMismatch(TickwheelError, RuntimeError):
    """The Kafka cluster does not match `topology/topics.toml`; `differences` lists each."""

    def __init__(self, differences: list[str]) -> None:
        super().__init__(
            "the Kafka cluster does not match topology/topics.toml:\n  - "
            + "\n  - ".join(differences)
            + "\nrun `tickwheel topology apply` (or fix the cluster) and start again"
        )
        self.differences = differences


class StackError(TickwheelError, RuntimeError):
    """The local stack (broker, services) could not be started, stopped or inspected."""

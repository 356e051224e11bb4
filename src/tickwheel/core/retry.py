"""Retry policy: capped exponential backoff with full jitter, as a pure decision."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from tickwheel.core.errors import InvalidPolicy

ErrorKind = Literal["retryable", "permanent"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """`base_ms`·2^attempt capped at `cap_ms`; at most `max_attempts` attempts in all."""

    base_ms: int = 1_000
    cap_ms: int = 300_000
    max_attempts: int = 5

    def __post_init__(self) -> None:
        if self.base_ms < 1:
            raise InvalidPolicy("retry.baseMs", f"{self.base_ms} is below 1; accepted: >= 1 ms")
        if self.cap_ms < self.base_ms:
            raise InvalidPolicy(
                "retry.capMs",
                f"{self.cap_ms} is below the base {self.base_ms}; accepted: >= base",
            )
        if self.max_attempts < 1:
            raise InvalidPolicy(
                "maxAttempts", f"{self.max_attempts} is below 1; accepted: 1 or more"
            )

    def ceiling_ms(self, attempt: int) -> int:
        """The upper bound of the delay after failed attempt `attempt`: min(cap, base·2^attempt)."""
        if attempt >= 62 or self.base_ms << attempt >= self.cap_ms:
            return self.cap_ms
        return self.base_ms << attempt


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """`retry` at `now + delay_ms` as `next_attempt`, or `dead_letter` with a `reason`."""

    action: Literal["retry", "dead_letter"]
    reason: str
    delay_ms: int | None = None
    next_attempt: int | None = None


def decide_retry(
    policy: RetryPolicy, attempt: int, error_kind: ErrorKind, rng: random.Random
) -> RetryDecision:
    """Decide what follows failed attempt number `attempt` (1-based).

    A permanent error dead-letters at once; a retryable one retries after a delay drawn
    uniformly from [0, min(cap, base·2^attempt)] ("full jitter") until `max_attempts`
    attempts have been made, then dead-letters. `rng` is injected, never the global one.
    """
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    if error_kind == "permanent":
        return RetryDecision("dead_letter", "permanent_error")
    if error_kind != "retryable":
        raise InvalidPolicy(
            "errorKind", f"unknown error kind {error_kind!r}; accepted: retryable, permanent"
        )
    if attempt >= policy.max_attempts:
        return RetryDecision("dead_letter", "max_attempts_exhausted")
    delay = rng.randint(0, policy.ceiling_ms(attempt))
    return RetryDecision("retry", "retryable_error", delay_ms=delay, next_attempt=attempt + 1)

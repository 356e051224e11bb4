"""The definition fields the watchdog reads, validated for the core's definition check:
`minRunTime`, a disable's account (`disabledBy`, `disabledOwner`, `disabledReason`,
`disabledReviewBy`) and `freshness` (docs/watchdog.md). Each raises `InvalidInput` naming the
field and what is accepted."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tickwheel.core.timefmt import parse_iso_ms
from tickwheel.durations import parse_duration_ms
from tickwheel.errors import InvalidInput, TickwheelError

# How long one attempt may run (`maxRunTime`, and `minRunTime` within the same bounds): the
# worker cancels and retries an attempt past `maxRunTime`.
MIN_RUN_MS, MAX_RUN_MS = 1_000, 7 * 86_400_000


def check_duration(spec: Mapping[str, Any], field: str, example: str) -> int | None:
    """A duration field (`"2h"`, `"1h30m"`) as ms, None when absent; the definition check's
    one parser of durations."""
    value = spec.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, f"{value!r}; accepted: a duration such as {example!r}")
    try:
        return parse_duration_ms(value, field)
    except InvalidInput:
        raise InvalidInput(
            field,
            f"{value[:40]!r} is not a duration; accepted: numbers with units ms, s, m, h, d, "
            f"such as {example!r} or '1h30m'",
        ) from None


DISABLE_TEXT_FIELDS = ("disabledBy", "disabledOwner", "disabledReason")
_MAX_DISABLE_TEXT = 200


def check_min_run_time(spec: Mapping[str, Any], max_run_ms: int | None) -> None:
    """`minRunTime`: a run that succeeds faster is suspect (the watchdog's run_too_short)."""
    min_run_ms = check_duration(spec, "minRunTime", "30s")
    if min_run_ms is None:
        return
    if not MIN_RUN_MS <= min_run_ms <= MAX_RUN_MS:
        raise InvalidInput(
            "minRunTime", f"{spec['minRunTime']!r}; accepted: from 1s to 7d (e.g. '30s')"
        )
    if max_run_ms is not None and min_run_ms > max_run_ms:
        raise InvalidInput(
            "minRunTime",
            f"{spec['minRunTime']!r} is longer than maxRunTime {spec['maxRunTime']!r}; "
            "accepted: at most maxRunTime",
        )


def check_disable_account(spec: Mapping[str, Any]) -> int | None:
    """disabledBy/Owner/Reason (short text) and disabledReviewBy (an ISO instant, returned as
    epoch ms). Accepted on any version, so that resuming a job keeps the account as history."""
    for name in DISABLE_TEXT_FIELDS:
        value = spec.get(name)
        if value is not None and (
            not isinstance(value, str)
            or not 0 < len(value) <= _MAX_DISABLE_TEXT
            or any(ord(ch) < 0x20 for ch in value)
        ):
            raise InvalidInput(
                name,
                f"{str(value)[:40]!r}; accepted: one line of 1 to {_MAX_DISABLE_TEXT} characters",
            )
    review_by = spec.get("disabledReviewBy")
    if review_by is None:
        return None
    if not isinstance(review_by, str):
        raise InvalidInput(
            "disabledReviewBy",
            f"{review_by!r}; accepted: an ISO 8601 instant with offset, e.g. '2027-03-01T09:00:00Z'",
        )
    return parse_iso_ms(review_by, "disabledReviewBy")


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_FRESHNESS_KEYS = frozenset({"topic", "sql", "warnAfter", "errorAfter"})
# A freshness query is one SELECT (or WITH ... SELECT) of at most this many characters; what
# it may read, and for how long, is the history store's read-only guard's business when it
# runs (decision 0109): refused there, it is logged and judges nothing.
MAX_FRESHNESS_SQL = 2_000
_SELECT = re.compile(r"\s*(select|with)\b", re.IGNORECASE)


def check_freshness(value: object) -> str | None:
    """`freshness`: {"topic" | "sql", "warnAfter", "errorAfter"?} (an object, or its JSON
    text, as the record stores it) → canonical JSON text for the record; None stays None."""
    if value is None:
        return None
    example = (
        'accepted: {"topic": "orders.out", "warnAfter": "2h", "errorAfter": "6h"} or '
        '{"sql": "SELECT max(ts) FROM ...", "warnAfter": "2h"}'
    )
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInput("freshness", f"not JSON; {example}") from None
    if not isinstance(value, dict) or not value.keys() <= _FRESHNESS_KEYS:
        raise InvalidInput("freshness", f"{str(value)[:60]!r}; {example}")
    if ("topic" in value) == ("sql" in value):
        raise InvalidInput("freshness", f"needs exactly one of topic and sql; {example}")
    topic, sql = value.get("topic"), value.get("sql")
    if "topic" in value and (not isinstance(topic, str) or not _TOPIC_NAME.fullmatch(topic)):
        raise InvalidInput("freshness.topic", f"{topic!r}; a Kafka topic name; {example}")
    if "sql" in value and (
        not isinstance(sql, str) or len(sql) > MAX_FRESHNESS_SQL or not _SELECT.match(sql)
    ):
        raise InvalidInput(
            "freshness.sql",
            f"{str(sql)[:40]!r}; accepted: one SELECT of at most {MAX_FRESHNESS_SQL} characters "
            "whose first column of its first row is the newest output time (a DateTime, or "
            "epoch milliseconds)",
        )
    warn = check_duration(value, "warnAfter", "2h")
    error = check_duration(value, "errorAfter", "6h")
    if warn is None or warn <= 0:
        raise InvalidInput("freshness.warnAfter", f"{value.get('warnAfter')!r}; {example}")
    if error is not None and error < warn:
        raise InvalidInput(
            "freshness.errorAfter",
            f"{value['errorAfter']!r} is before warnAfter; accepted: at least warnAfter",
        )
    return json.dumps({k: value[k] for k in sorted(value)}, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Freshness:
    """Where a job's output time is read: a Kafka topic's newest record, or a ClickHouse SQL
    query over the history store (exactly one of them)."""

    topic: str | None
    warn_after_ms: int
    error_after_ms: int | None
    sql: str | None = None

    @property
    def source(self) -> str:
        """What the probes key the newest output time by: the topic, or `sql:<query>`."""
        return self.topic if self.topic is not None else f"sql:{self.sql}"


def parse_freshness(text: object) -> Freshness | None:
    """The record's `freshness` JSON text, or None (absent, or unreadable: said nothing)."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
        error = value.get("errorAfter")
        topic, sql = value.get("topic"), value.get("sql")
        if (topic is None) == (sql is None):
            return None
        return Freshness(
            None if topic is None else str(topic),
            parse_duration_ms(value["warnAfter"], "warnAfter"),
            parse_duration_ms(error, "errorAfter") if error is not None else None,
            sql=None if sql is None else str(sql),
        )
    except (ValueError, KeyError, TypeError, AttributeError, TickwheelError):
        return None

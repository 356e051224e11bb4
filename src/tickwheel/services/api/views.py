"""Between the API's JSON and the SDK's records: job views, object templates, cursors."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from typing import Any

from tickwheel.core.describe import describe
from tickwheel.core.record_schedule import compile_record_schedule, record_schedule
from tickwheel.core.timefmt import format_utc
from tickwheel.sdk.jobs import definition_to_spec
from tickwheel.services.api.problems import Problem


def template_text(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with an object `payloadTemplate` serialised to the JSON text the core takes.

    Placeholders are substituted into the text as bare text, so `{"date": "{{ periodStart |
    date }}"}` renders as `{"date": "2026-08-01"}`: the object and its text are one template.
    """
    template = spec.get("payloadTemplate")
    if isinstance(template, dict):
        spec = {**spec, "payloadTemplate": json.dumps(template, separators=(",", ":"))}
    return spec


def _template_view(text: str | None) -> Any:
    if text is None:
        return None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    # Returned as the object it was given as; a text template that is not one stays text.
    return parsed if isinstance(parsed, dict) else text


def job_view(
    record: dict[str, Any], now_ms: int, calendars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A stored definition as the API shows it: the SDK's JSON view, the template as an object,
    and when it fires next (`nextRun`, with the holiday `calendars` as the timer compiles it)
    or, for a one-off, when it was scheduled for."""
    view = definition_to_spec(record)
    template = _template_view(record.get("payloadTemplate"))
    if template is not None:
        view["payloadTemplate"] = template
    if record.get("runAt") is not None:
        view["scheduledFor"] = format_utc(record["runAt"])
    else:
        nxt = compile_record_schedule(record, calendars).next_after(now_ms)
        if nxt is not None:
            view["nextRun"] = format_utc(nxt)
    view["description"] = describe(record_schedule(record))
    return view


def job_filter(
    *,
    type: str | None,
    enabled: bool | None,
    labels: list[str],
    owner: str | None,
    q: str | None,
) -> Callable[[dict[str, Any]], bool]:
    """What `GET /jobs` keeps: every filter given must match. `labels` are `key:value`."""
    wanted: dict[str, str] = {}
    for text in labels:
        name, sep, value = text.partition(":")
        if not sep or not name:
            raise Problem(
                422,
                "validation-error",
                f"label: {text!r}; accepted: key:value (repeat for several)",
                errors=[{"parameter": "label", "in": "query", "detail": "not key:value"}],
            )
        wanted[name] = value
    if owner is not None:
        wanted["owner"] = owner

    def keep(record: dict[str, Any]) -> bool:
        have = record.get("labels") or {}
        return (
            (type is None or record["type"] == type)
            and (enabled is None or record["enabled"] == enabled)
            and (q is None or q in record["jobId"])
            and all(have.get(k) == v for k, v in wanted.items())
        )

    return keep


def etag(record: dict[str, Any]) -> str:
    return f'"v{record["version"]}"'


def parse_etag(value: str) -> int | None:
    """The version in an `If-Match`/`If-None-Match` entity tag (`"v3"` or `W/"v3"`)."""
    text = value.strip().removeprefix("W/").strip('"')
    if text.startswith("v") and text[1:].isdigit():
        return int(text[1:])
    return None


def encode_cursor(after_job_id: str) -> str:
    raw = json.dumps({"after": after_job_id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The job id a page ends after. Keyset on the id: stable while jobs are added."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        after = json.loads(raw)["after"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        after = None
    if not isinstance(after, str):
        raise Problem(
            422,
            "validation-error",
            "cursor: not a cursor this API gave; accepted: the nextCursor of a previous page",
            errors=[{"parameter": "cursor", "in": "query", "detail": "not a valid cursor"}],
        )
    return after

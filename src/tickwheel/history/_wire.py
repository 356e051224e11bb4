"""JSON for query results and parameters on the owner's local endpoint.

A `QueryResult` must come out of the endpoint exactly as the store returned it, so that a
function like `execution_timeline` gives the same answer over the endpoint as on the store.
JSON has no instants, dates, UUIDs or decimals: those travel as one-key tagged objects
(`{"$dt": "2099-03-01T00:00:00+00:00"}`) and come back as the same Python values.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import ipaddress
import uuid
from collections.abc import Mapping
from typing import Any

from tickwheel.ports.history import QueryResult

_TAGS = ("$dt", "$date", "$time", "$uuid", "$dec", "$bytes", "$ip", "$map", "$tuple")


def encode_value(value: Any) -> Any:
    """A JSON-able form of one value a ClickHouse query can return (or a parameter)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dt.datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"$time": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    if isinstance(value, decimal.Decimal):
        return {"$dec": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return {"$ip": str(value)}
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(item) for item in value]}
    if isinstance(value, list | set | frozenset):
        return [encode_value(item) for item in value]
    if isinstance(value, Mapping):
        return {"$map": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    raise TypeError(f"cannot send a {type(value).__name__} over the history endpoint")


def decode_value(value: Any) -> Any:
    """The inverse of `encode_value`."""
    if isinstance(value, list):
        return [decode_value(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or next(iter(value)) not in _TAGS:
        raise ValueError(f"not a tagged value: {value!r}")
    tag, body = next(iter(value.items()))
    if tag == "$dt":
        return dt.datetime.fromisoformat(body)
    if tag == "$date":
        return dt.date.fromisoformat(body)
    if tag == "$time":
        return dt.time.fromisoformat(body)
    if tag == "$uuid":
        return uuid.UUID(body)
    if tag == "$dec":
        return decimal.Decimal(body)
    if tag == "$bytes":
        return base64.b64decode(body)
    if tag == "$ip":
        return ipaddress.ip_address(body)
    if tag == "$tuple":
        return tuple(decode_value(item) for item in body)
    return {decode_value(k): decode_value(v) for k, v in body}


def encode_result(result: QueryResult) -> dict[str, Any]:
    return {
        "columns": list(result.columns),
        "types": list(result.types),
        "rows": [[encode_value(value) for value in row] for row in result.rows],
    }


def decode_result(document: Mapping[str, Any]) -> QueryResult:
    return QueryResult(
        columns=tuple(document["columns"]),
        types=tuple(document["types"]),
        rows=[tuple(decode_value(value) for value in row) for row in document["rows"]],
    )


def encode_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    return {str(name): encode_value(value) for name, value in (params or {}).items()}


def decode_params(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise ValueError("params must be an object")
    return {str(name): decode_value(value) for name, value in document.items()}

"""A faust codec for tickwheel's Avro single-object encoding (schemas/README.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faust.serializers import codecs

from tickwheel.adapters.avro import UndecodableRecord, decode, encode

AVRO_CODEC = "tickwheel-avro"


@dataclass(frozen=True)
class Undecodable:
    """What the codec returns for bytes that are not a tickwheel record: the consumer decides
    (dead-letter it, count it) rather than faust dropping it or the agent crashing on it."""

    raw: bytes
    reason: str


def is_undecodable(value: object) -> bool:
    return isinstance(value, Undecodable)


class AvroSingleObjectCodec(codecs.Codec):
    """Decodes any kept version of any record into its current shape (a dict typed by
    `tickwheel.records`); encodes a dict that names its record under `__record__`."""

    def _loads(self, s: bytes) -> Any:
        try:
            return decode(s)[1]
        except UndecodableRecord as exc:
            return Undecodable(bytes(s), exc.reason)

    def _dumps(self, obj: Any) -> bytes:
        record = dict(obj)
        name = record.pop("__record__")
        return encode(name, record)


codecs.register(AVRO_CODEC, AvroSingleObjectCodec())

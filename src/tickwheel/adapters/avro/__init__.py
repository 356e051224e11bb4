"""Avro codec: `.avsc` files in `schemas/`, single-object encoding, no registry server.

Encode with the current version of a record, decode any kept version into the current
one, and check compatibility with the reference `avro` library. Instants are plain
`long` epoch milliseconds and decode to `int` (docs/decisions/0020, 0021).

    >>> from tickwheel.adapters.avro import encode, decode
    >>> name, value = decode(encode("Alert", alert_dict), expected="Alert")
    >>> alert = decode_as(Alert, encode("Alert", alert))  # typed: a tickwheel.records.Alert
"""

from tickwheel.adapters.avro._compat import (
    FINGERPRINT_LOCK,
    check_schemas,
    incompatibilities,
    parse_reference,
    update_lock,
)
from tickwheel.adapters.avro._registry import (
    HEADER_SIZE,
    NAMESPACE,
    SCHEMAS_DIR_ENV,
    SINGLE_OBJECT_MARKER,
    SchemaLayoutError,
    SchemaRegistry,
    SchemaVersion,
    UndecodableRecord,
    UnencodableRecord,
    UnknownRecord,
    crc64_avro,
    decode,
    default_registry,
    encode,
    find_schemas_dir,
    format_fingerprint,
    load_schemas,
    read_fingerprint,
)
from tickwheel.adapters.avro.typed import decode_as, record_name

__all__ = [
    "FINGERPRINT_LOCK",
    "HEADER_SIZE",
    "NAMESPACE",
    "SCHEMAS_DIR_ENV",
    "SINGLE_OBJECT_MARKER",
    "SchemaLayoutError",
    "SchemaRegistry",
    "SchemaVersion",
    "UndecodableRecord",
    "UnencodableRecord",
    "UnknownRecord",
    "check_schemas",
    "crc64_avro",
    "decode",
    "decode_as",
    "default_registry",
    "encode",
    "find_schemas_dir",
    "format_fingerprint",
    "incompatibilities",
    "load_schemas",
    "parse_reference",
    "read_fingerprint",
    "record_name",
    "update_lock",
]

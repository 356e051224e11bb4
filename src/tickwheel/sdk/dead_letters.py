"""Dead letters as a reader sees them: every record on `executions.dlq`, decoded.

    from tickwheel.sdk.dead_letters import read_dead_letters
    for letter in read_dead_letters():
        print(letter["dead_letter_id"], letter["reason"])

A record on the topic that is not a `DeadLetter` is left out (it has nothing to say). The
raw bytes of an undecodable source record are given as base64 (`raw_value_base64`).
"""

from __future__ import annotations

import base64
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode
from tickwheel.adapters.kafka.reader import read_to_end
from tickwheel.topology import topic_name


def read_dead_letters(bootstrap: str | None = None) -> list[dict[str, Any]]:
    """Every dead letter on the topic, oldest first by `event_time` (then id); a letter
    written twice (the same deterministic id) is listed once."""
    seen: dict[str, dict[str, Any]] = {}
    for record in read_to_end(topic_name("executions.dlq"), None, bootstrap):
        if record.value is None:
            continue
        try:
            letter = decode(record.value, "DeadLetter")[1]
        except UndecodableRecord:
            continue
        raw = letter.pop("raw_value", None)
        letter["raw_value_base64"] = base64.b64encode(raw).decode() if raw is not None else None
        letter["dlq_partition"] = record.partition
        letter["dlq_offset"] = record.offset
        seen.setdefault(letter["dead_letter_id"], letter)
    return sorted(seen.values(), key=lambda d: (d["event_time"], d["dead_letter_id"]))

"""A 202's verdict looked up on `jobs.verdicts` by an API instance that started after it was
written (decision 0180).

Every instance follows `jobs.verdicts` from its own start (decision 0166), so the status
resource of a command judged before that was a 404 there. The command's id says when it was
sent (`command_ids.command_sent_at`, checked against the asker's tenant), and its verdict is
keyed by that id and written after it was sent, within the judge's command TTL (an older
command is answered `invalid`/expired): the look-up reads the verdicts from the first one
timestamped at the send (less a minute for clocks) to the first one past the TTL, the
partition's end, or a bound, and keeps the first with the command's id. It runs only on a
miss, on the route's thread.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tickwheel.adapters.avro import UndecodableRecord, decode_as
from tickwheel.adapters.kafka.client import TopicPartition
from tickwheel.ports.kafka import KafkaClients
from tickwheel.records import JobVerdict
from tickwheel.sdk.command_ids import PENDING_AT_MOST_MS
from tickwheel.topology import topic_name

CLOCK_SLACK_MS = 60_000  # between the sending API's clock and the judge's
READ_AT_MOST = 200_000  # verdicts read for one look-up, at most
LOOK_UP_S = 5.0  # and for at most this long


def find_verdict(clients: KafkaClients[Any], command_id: str, sent_at_ms: int) -> JobVerdict | None:
    """The verdict of `command_id` on `jobs.verdicts`, or None (not there, or not found
    within the bounds)."""
    topic = topic_name("jobs.verdicts")
    wanted = command_id.encode()
    reader = clients.reader()
    try:
        ends = {p: reader.watermarks(topic, p)[1] for p in range(reader.partition_count(topic))}
    finally:
        close = getattr(reader, "close", None)  # the broker's reader holds a consumer
        if close is not None:
            close()
    consumer = clients.consumer(
        f"tickwheel-verdict-lookup-{uuid.uuid4()}", **{"enable.partition.eof": False}
    )
    try:
        since = max(0, sent_at_ms - CLOCK_SLACK_MS)
        starts = consumer.offsets_for_times(
            [TopicPartition(topic, p, since) for p in ends], timeout=10
        )
        open_at = {tp.partition: tp.offset for tp in starts if 0 <= tp.offset < ends[tp.partition]}
        if not open_at:
            return None
        consumer.assign([TopicPartition(topic, p, offset) for p, offset in open_at.items()])
        last_ms = sent_at_ms + PENDING_AT_MOST_MS + CLOCK_SLACK_MS
        deadline, read = time.monotonic() + LOOK_UP_S, 0
        while open_at and read < READ_AT_MOST and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.1):
                if message.error():
                    continue
                read += 1
                partition, offset = message.partition() or 0, message.offset() or 0
                if offset + 1 >= ends[partition] or message.timestamp()[1] > last_ms:
                    open_at.pop(partition, None)  # nothing of this command's comes later
                value = message.value()
                if message.key() == wanted and value is not None:
                    try:
                        return decode_as(JobVerdict, value)
                    except UndecodableRecord:
                        continue
            # Transaction markers leave no record at the end: where the consumer stands says.
            for tp in consumer.position([TopicPartition(topic, p) for p in list(open_at)]):
                if tp.offset >= ends[tp.partition]:
                    open_at.pop(tp.partition, None)
        return None
    finally:
        consumer.close()

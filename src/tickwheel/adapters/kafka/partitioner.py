"""Kafka's Java default partitioner (murmur2), so a reader can find a key's partition the way
every tickwheel producer (librdkafka's `murmur2_random`) and every Java producer places it.
The timer also refuses a definition found on another partition than its key's: its requests
and its workers' events would meet on no partition."""

from __future__ import annotations


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`, as an unsigned 32-bit value."""
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    length = len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4 : i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail, rest = length & ~3, length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def partition_for(key: str, partitions: int) -> int:
    """The partition of `key` among `partitions` (toPositive(murmur2) % n, as Java does)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions

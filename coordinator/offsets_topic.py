"""Where a group lives: the internal ``__consumer_offsets`` topic and its partitioning.

Kafka maps a group to a partition with ``abs(groupId.hashCode()) % partitions`` (Java's
``String.hashCode`` and ``Utils.abs``); using the same function keeps the partition of every
group identical to Kafka's, which matters for anyone inspecting the topic with Kafka tools and
for a future multi-broker Odradek where the partition leader is the group's coordinator.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-polynomial over UTF-16 code units, as a signed int32."""
    value = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        value = (31 * value + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``'s offsets and metadata."""
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 rather than overflowing.
    value = java_string_hash(group_id)
    return (0 if value == -(2**31) else abs(value)) % partitions

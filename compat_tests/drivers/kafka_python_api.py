"""The kafka-python API, which aiokafka copies: what its two drivers translate the same way.

aiokafka started as an asyncio port of kafka-python and kept its keyword arguments, its
``TopicPartition`` tuples, its ``assign``/``seek`` calls and its ``ConsumerRecord`` shape. So the
translation between the suite's neutral settings and those keywords and records is written here
once; each driver adds only what its client does differently (timeouts, awaiting).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from compat_tests.drivers.base import (
    OP_TIMEOUT_S,
    ConsumerSettings,
    Message,
    ProducerSettings,
    Received,
    TopicPartition,
)

TIMEOUT_MS = int(OP_TIMEOUT_S * 1000)


def consumer_config(bootstrap: str, settings: ConsumerSettings) -> dict[str, Any]:
    """Consumer keywords: commits only when the scenario asks, a session short enough for tests."""
    return {
        "bootstrap_servers": bootstrap,
        "group_id": settings.group,
        "auto_offset_reset": settings.reset,
        "enable_auto_commit": False,
        "request_timeout_ms": TIMEOUT_MS,
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 1000,
    }


def producer_config(bootstrap: str, settings: ProducerSettings) -> dict[str, Any]:
    """Producer keywords for the settings both clients have; timeouts and retries differ."""
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "compression_type": None if settings.compression == "none" else settings.compression,
        "acks": settings.acks if settings.acks == "all" else int(settings.acks),
        "linger_ms": 5,
    }
    if settings.idempotence is not None:
        config["enable_idempotence"] = settings.idempotence
    if settings.max_request_size is not None:
        config["max_request_size"] = settings.max_request_size
    return config


def send_arguments(message: Message) -> dict[str, Any]:
    """The keywords of ``producer.send(topic, ...)`` for one message."""
    return {
        "value": message.value,
        "key": message.key,
        "partition": message.partition,
        "timestamp_ms": message.timestamp_ms,
        "headers": list(message.headers),
    }


def assign(
    consumer: Any, partition: Callable[[str, int], Any], positions: Mapping[TopicPartition, int | None]
) -> None:
    """Assign the partitions, then seek those given a start offset (``partition`` builds the tuples)."""
    consumer.assign([partition(t, p) for t, p in positions])
    for (t, p), offset in positions.items():
        if offset is not None:
            consumer.seek(partition(t, p), offset)


def received(batches: Mapping[Any, Sequence[Any]]) -> list[Received]:
    """The records of a ``poll``/``getmany`` result (ConsumerRecords by partition), normalised."""
    return [
        Received(
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key,
            value=record.value,
            headers=tuple((k, bytes(v or b"")) for k, v in record.headers),
            timestamp_ms=record.timestamp,
        )
        for records in batches.values()
        for record in records
    ]

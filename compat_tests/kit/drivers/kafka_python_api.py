"""The kafka-python API, which aiokafka copies: what their drivers and bulk clients translate alike.

aiokafka started as an asyncio port of kafka-python and kept its keyword arguments, its
``TopicPartition`` tuples, its ``assign``/``seek`` calls and its ``ConsumerRecord`` shape. So the
translation between the suite's neutral settings and those keywords and records is written here
once; each driver adds only what its client does differently (timeouts, awaiting).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import aiokafka.errors
import kafka.errors

from compat_tests.kit.drivers.base import (
    CLASSIC_SESSION_TIMEOUT_MS,
    OP_TIMEOUT_S,
    ClientError,
    ConsumerSettings,
    Driver,
    Message,
    ProducerSettings,
    Received,
    TopicPartition,
    client_errors,
    client_failure,
    kafka_error_name,
)
from compat_tests.kit.drivers.bulk import Fetch, Send
from compat_tests.kit.drivers.records import Consumed, Record

TIMEOUT_MS = int(OP_TIMEOUT_S * 1000)


def consumer_config(
    bootstrap: str, settings: ConsumerSettings, driver: Driver, assignors: Mapping[str, type]
) -> dict[str, Any]:
    """Consumer keywords: commits only when the scenario asks (or auto-commit it chose), a
    session short enough for tests; ``assignors`` are the client's assignor classes by name."""
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "group_id": settings.group,
        "auto_offset_reset": settings.reset,
        "enable_auto_commit": settings.auto_commit_ms is not None,
        "isolation_level": settings.isolation,
        "request_timeout_ms": TIMEOUT_MS,
        "session_timeout_ms": settings.session_timeout_ms or CLASSIC_SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": 1000,
    }
    if settings.assignor is not None:
        if settings.assignor not in assignors:
            driver.unsupported(f"the {settings.assignor} assignor")
        config["partition_assignment_strategy"] = (assignors[settings.assignor],)
    optional = {"client_id": settings.client_id, "auto_commit_interval_ms": settings.auto_commit_ms}
    return config | {key: value for key, value in optional.items() if value is not None}


def transactional_config(bootstrap: str, transactional_id: str, timeout_ms: int) -> dict[str, Any]:
    """Producer keywords of a transactional producer (both clients spell them alike)."""
    return {
        "bootstrap_servers": bootstrap,
        "transactional_id": transactional_id,
        "transaction_timeout_ms": timeout_ms,
        "request_timeout_ms": TIMEOUT_MS,
        "linger_ms": 5,
    }


def producer_config(bootstrap: str, settings: ProducerSettings) -> dict[str, Any]:
    """Producer keywords for the settings both clients have; timeouts and retries differ."""
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "compression_type": None if settings.compression == "none" else settings.compression,
        "acks": settings.acks if settings.acks == "all" else int(settings.acks),
        "linger_ms": 5,
    }
    # A setting left None keeps the client's default.
    chosen = {"enable_idempotence": settings.idempotence, "max_request_size": settings.max_request_size}
    return config | {key: value for key, value in chosen.items() if value is not None}


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


# Bulk clients (compat_tests.kit.drivers.bulk) -----------------------------------------------------


def failure(exc: BaseException, client: str) -> ClientError:
    """A kafka-python or aiokafka exception: Kafka's error name from its ``errno`` where it has one."""
    errno = getattr(exc, "errno", None)
    name = kafka_error_name(errno) if isinstance(errno, int) and errno >= 0 else type(exc).__name__
    return client_failure(client, name, f"{type(exc).__name__}: {exc}")


@contextmanager
def errors(client: str) -> Iterator[None]:
    """Every failure of a kafka-python or aiokafka call as a :class:`ClientError`."""
    with client_errors():
        try:
            yield
        except (kafka.errors.KafkaError, aiokafka.errors.KafkaError) as exc:
            raise failure(exc, client) from exc


def bulk_producer_config(bootstrap: str, send: Send) -> dict[str, Any]:
    """The producer keywords both clients spell alike (their batch size keywords differ)."""
    return {
        "bootstrap_servers": bootstrap,
        "acks": send.acks if send.acks == "all" else int(send.acks),
        "enable_idempotence": send.idempotent,
        "compression_type": None if send.codec == "none" else send.codec,
        "linger_ms": 20,
        "max_request_size": 16_777_216,
        "request_timeout_ms": int(min(send.timeout_s, 30) * 1000),
    }


def bulk_consumer_config(bootstrap: str, reset: str, fetch_bytes: int | None) -> dict[str, Any]:
    """Consumer keywords for assign() without a group: nothing is ever committed."""
    return {
        "bootstrap_servers": bootstrap,
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": reset,
        "fetch_max_wait_ms": 100,
        "fetch_max_bytes": fetch_bytes or 52_428_800,
        "max_partition_fetch_bytes": fetch_bytes or 16_777_216,
        "request_timeout_ms": 30_000,
    }


def assign_fetch(consumer: Any, partition: Callable[[str, int], Any], fetch: Fetch) -> None:
    """Assign the fetch's partitions and seek each to its start (``partition`` builds the tuples)."""
    assign(consumer, partition, {(fetch.topic, p): offset for p, offset in fetch.positions.items()})


def take(fetch: Fetch, batches: Mapping[Any, Sequence[Any]]) -> None:
    """Append a ``poll``/``getmany`` result (records by TopicPartition) to ``fetch.received``.

    Both clients hand out header values as bytes already; only the container differs.
    """
    for tp, messages in batches.items():
        fetch.received[tp.partition].extend(
            Consumed(tp.partition, m.offset, Record(m.key, m.value, tuple(m.headers or ()), m.timestamp))
            for m in messages
        )


def offset_query(
    consumer: Any,
    partition: Callable[[str, int], Any],
    topic: str,
    partitions: Sequence[int],
    spec: str | int,
) -> tuple[Callable[..., Any], Any]:
    """The consumer method that answers ``spec`` and its argument, for the caller to call (or await)."""
    tps = [partition(topic, p) for p in partitions]
    if spec == "earliest":
        return consumer.beginning_offsets, tps
    if spec == "latest":
        return consumer.end_offsets, tps
    return consumer.offsets_for_times, {tp: int(spec) for tp in tps}


def offsets_by_partition(found: Mapping[Any, Any]) -> dict[int, int]:
    """Offsets by partition number from what the query answered.

    beginning/end_offsets answer offsets; offsets_for_times answers an OffsetAndTimestamp, or None
    where no record is that recent, which becomes -1 as librdkafka reports it.
    """
    offsets: dict[int, int] = {}
    for tp, answer in found.items():
        if answer is None:
            offsets[tp.partition] = -1
        else:
            offsets[tp.partition] = answer if isinstance(answer, int) else answer.offset
    return offsets

"""Produce and consume: record contents, compression, idempotence, acks and size limits."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pytest

from compat_tests.helpers import now_ms, poll_until
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers import base
from compat_tests.kit.drivers.base import Driver, Message, ProducerSettings, Received
from compat_tests.kit.record_writers import writers_at

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
DEFAULT_MAX_MESSAGE_BYTES = 1048588
"""Kafka's default message.max.bytes / max.message.bytes (1 MiB plus a batch header's 12 bytes)."""


def read_all(driver: Driver, topic: str, partitions: int, count: int) -> list[Received]:
    """Consume ``count`` records of ``topic`` from offset 0 of every partition, without a group."""
    with driver.consumer(base.ConsumerSettings()) as consumer:
        consumer.assign({(topic, p): 0 for p in range(partitions)})
        return poll_until(consumer, count)


def assert_same_records(sent: Sequence[Message], got: Sequence[Received], offsets: Sequence[int]) -> None:
    """Per partition: same keys, values, headers, in send order, at contiguous offsets from 0."""
    by_partition: dict[int, list[Received]] = defaultdict(list)
    for record in got:
        by_partition[record.partition].append(record)
    expected: dict[int, list[tuple[Message, int]]] = defaultdict(list)
    for message, offset in zip(sent, offsets, strict=True):
        assert message.partition is not None
        expected[message.partition].append((message, offset))
    assert sorted(by_partition) == sorted(expected)
    for partition, records in by_partition.items():
        assert [r.offset for r in records] == list(range(len(records))), f"partition {partition} order"
        for record, (message, offset) in zip(records, expected[partition], strict=True):
            assert (record.key, record.value, record.headers) == (message.key, message.value, message.headers)
            if offset != base.NO_OFFSET:
                assert record.offset == offset


@pytest.mark.parametrize("codec", CODECS)
def test_roundtrip(driver: Driver, admin: Driver, topic: str, codec: str) -> None:
    """Keys, values, headers, timestamps and per-partition order survive a trip through the broker."""
    admin.create_topic(topic, 3)
    start_ms = now_ms() - 60_000
    messages = [
        Message(
            value=f"value-{i}-".encode() + b"compressible " * (i * 7),
            key=None if i == 4 else f"key-{i}".encode(),
            headers=(("trace", f"t{i}".encode()), ("codec", codec.encode())),
            partition=i % 3,
            timestamp_ms=start_ms + i * 1000 if driver.sets_timestamps else None,
        )
        for i in range(12)
    ]
    before = now_ms()
    offsets = driver.produce(topic, messages, ProducerSettings(compression=codec))
    after = now_ms()
    got = read_all(driver, topic, 3, len(messages))
    assert_same_records(messages, got, offsets)
    by_value = {m.value: m for m in messages}
    for record in got:
        sent_at = by_value[record.value].timestamp_ms
        if sent_at is not None:
            assert record.timestamp_ms == sent_at
        else:
            assert before - 1000 <= record.timestamp_ms <= after + 1000


def test_idempotent_producer(driver: Driver, admin: Driver, broker: RunningBroker, topic: str) -> None:
    """An idempotent producer with retries (the Java default) writes each record exactly once,
    each partition's under one producer id and consecutive sequence numbers from 0 (kcat
    produces each partition's records with a producer of its own)."""
    admin.create_topic(topic, 3)
    messages = [Message(value=f"idem-{i}".encode(), key=b"k", partition=i // 100) for i in range(300)]
    settings = ProducerSettings(acks="all", idempotence=True, retries=10)
    offsets = driver.produce(topic, messages, settings)
    got = read_all(driver, topic, 3, len(messages))
    assert len({r.value for r in got}) == len(messages)
    assert_same_records(messages, got, offsets)
    writers = writers_at(broker.bootstrap, topic, [(r.partition, r.offset) for r in got])
    assert len(writers) == len(got), "every record's batch names its writer"
    for partition in range(3):
        in_order = [
            writers[(partition, offset)] for offset in sorted(o for p, o in writers if p == partition)
        ]
        assert len({(w.producer_id, w.epoch) for w in in_order}) == 1, "one producer id and epoch"
        assert in_order[0].producer_id >= 0
        assert [w.sequence for w in in_order] == list(range(100)), "sequence numbers from 0, one per record"


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(driver: Driver, admin: Driver, topic: str, acks: str) -> None:
    """Every acks level delivers; acks=0 gets no response, so only the consumer sees the offsets."""
    admin.create_topic(topic, 1)
    messages = [Message(value=f"acks-{acks}-{i}".encode(), partition=0) for i in range(20)]
    settings = ProducerSettings(acks=acks, idempotence=False if acks != "all" else None)
    offsets = driver.produce(topic, messages, settings)
    if acks == "0":  # no response: whatever a client reports (kafka-python guesses) is not the broker's
        offsets = [base.NO_OFFSET] * len(messages)
    got = read_all(driver, topic, 1, len(messages))
    assert_same_records(messages, got, offsets)


def test_large_messages(driver: Driver, admin: Driver, topic: str) -> None:
    """A record just under the topic's max.message.bytes goes through; one over it fails fast.

    The producer's own size limit is raised above the broker's, so the broker is what refuses.
    """
    admin.create_topic(topic, 1)
    limit = int(admin.describe_configs(topic).get("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES))
    settings = ProducerSettings(compression="none", max_request_size=2 * limit, idempotence=False)
    near = Message(value=b"n" * (limit - 512), key=b"near", partition=0)
    driver.produce(topic, [near], settings)
    with pytest.raises(base.ClientError) as failure:
        driver.produce(topic, [Message(value=b"o" * (limit + 1024), key=b"over", partition=0)], settings)
    assert failure.value.kind == base.ErrorKind.MESSAGE_TOO_LARGE, failure.value.detail
    (record,) = read_all(driver, topic, 1, 1)
    assert (record.key, len(record.value or b"")) == (b"near", limit - 512)

"""Retention and segment rolling through a real broker and a stock client (confluent-kafka).

A broker with a short ``log.retention.check.interval.ms``; topics with small segments and
short retention.  Old data must disappear from disk, the earliest offset must move, and a
fetch below it must answer OFFSET_OUT_OF_RANGE, while younger data stays readable.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from tests.integration.broker_process import OdradekProcess
from tests.integration.raw_client import RawClient
from tests.integration.waiting import wait_until
from wire.error_codes import ErrorCode

HOUR_MS = 3_600_000
EARLIEST = -2


BROKER_SETTINGS = {"log.retention.check.interval.ms": "200"}
"""Retention runs every 200 ms, so that expired segments go while a test waits."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    with OdradekProcess(tmp_path_factory.mktemp("retention"), BROKER_SETTINGS) as process:
        yield process


def produce(bootstrap: str, topic: str, values: list[bytes], timestamp_ms: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for value in values:
        producer.produce(topic, value=value, key=value[:8], timestamp=timestamp_ms)
    assert producer.flush(30) == 0


def consume_all(bootstrap: str, topic: str, start: int, reset: str = "earliest") -> list[tuple[int, bytes]]:
    """(offset, value) from ``start`` to the end, or the consumer's error code as offset -1."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "retention-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": reset,
        }
    )
    consumer.assign([TopicPartition(topic, 0, start)])
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return out
                return out + [(-1, str(message.error().code()).encode())]
            out.append((message.offset(), message.value()))
    finally:
        consumer.close()
    raise AssertionError(f"no end of partition after {out[-1:]}")


def watermarks(consumer: Consumer, topic: str) -> tuple[int, int]:
    """(earliest, latest) offsets of partition 0, as the client sees them."""
    return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)


def segment_files(broker: OdradekProcess, topic: str) -> list[Path]:
    return sorted((broker.data_dir / f"{topic}-0").glob("*.log*"))


def test_time_retention_through_a_client(broker: OdradekProcess) -> None:
    topic = "retained-by-time"
    configs = {"segment.bytes": "2048", "retention.ms": str(HOUR_MS), "file.delete.delay.ms": "0"}
    with RawClient(broker.bootstrap) as client:
        client.create_topic(topic, 1, configs)
    now_ms = int(time.time() * 1000)
    old = [b"old-%04d" % i + b"." * 100 for i in range(100)]
    young = [b"young-%04d" % i + b"." * 100 for i in range(20)]
    produce(broker.bootstrap, topic, old, now_ms - 2 * HOUR_MS)
    produce(broker.bootstrap, topic, young, now_ms)
    # Everything before the segment holding the first young record expires, nothing after.
    bases = [int(path.name.split(".")[0]) for path in segment_files(broker, topic)]
    expected_low = max(base for base in bases if base <= len(old))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
    try:
        wait_until(lambda: watermarks(consumer, topic)[0] == expected_low, "retention")
        low, high = watermarks(consumer, topic)
    finally:
        consumer.close()
    assert 0 < low <= len(old) and high == len(old) + len(young)
    bases = [int(path.name.split(".")[0]) for path in segment_files(broker, topic)]
    assert min(bases) == low, "the files of expired segments are gone (file.delete.delay.ms=0)"
    retained = consume_all(broker.bootstrap, topic, OFFSET_BEGINNING)
    assert [offset for offset, _ in retained] == list(range(low, high))
    assert [value for _, value in retained][-len(young) :] == young, "young data stays"
    assert consume_all(broker.bootstrap, topic, 0, reset="error") == [
        (-1, str(KafkaError._AUTO_OFFSET_RESET).encode())
    ], "a consumer positioned below the log start gets out of range"
    with RawClient(broker.bootstrap) as client:
        below = client.fetch_partition(topic, 0, low - 1)
        assert below["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE and below["log_start_offset"] == low
        assert client.fetch_partition(topic, 0, low)["error_code"] == ErrorCode.NONE
        assert client.list_offset(topic, 0, EARLIEST) == low


def test_size_retention_through_a_client(broker: OdradekProcess) -> None:
    topic = "retained-by-size"
    configs = {"segment.bytes": "2048", "retention.bytes": "6000", "file.delete.delay.ms": "0"}
    with RawClient(broker.bootstrap) as client:
        client.create_topic(topic, 1, configs)
    produce(broker.bootstrap, topic, [b"%05d" % i + b"." * 200 for i in range(100)], int(time.time() * 1000))

    def within_limit() -> bool:
        sizes = [path.stat().st_size for path in segment_files(broker, topic)]
        return sum(sizes) - sizes[0] < 6000

    wait_until(within_limit, "size retention")
    with RawClient(broker.bootstrap) as client:
        start = client.list_offset(topic, 0, EARLIEST)
    retained = consume_all(broker.bootstrap, topic, OFFSET_BEGINNING)
    assert start > 0 and [offset for offset, _ in retained] == list(range(start, 100))


def test_topic_overrides_roll_segments(broker: OdradekProcess) -> None:
    by_size, by_time = "rolled-by-size", "rolled-by-time"
    with RawClient(broker.bootstrap) as client:
        client.create_topic(by_size, 1, {"segment.bytes": "1024"})
        client.create_topic(by_time, 1, {"segment.ms": "1000"})
    now_ms = int(time.time() * 1000)
    produce(broker.bootstrap, by_size, [b"x" * 300 for _ in range(10)], now_ms)
    assert len(segment_files(broker, by_size)) >= 3, "segment.bytes overrides log.segment.bytes"
    for step in range(3):  # record timestamps more than segment.ms apart
        produce(broker.bootstrap, by_time, [b"tick"], now_ms + 1001 * step)
    assert len(segment_files(broker, by_time)) == 3, "segment.ms overrides log.roll.hours"

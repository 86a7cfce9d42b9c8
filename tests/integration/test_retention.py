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

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import ClientError, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentClient, ConfluentDriver
from compat_tests.kit.raw_protocol import RawClient
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
    """One batch per record (each send flushes), so segments roll at record granularity."""
    with ConfluentDriver(bootstrap).producer(ProducerSettings()) as producer:
        for value in values:
            producer.send(topic, [Message(value, value[:8], timestamp_ms=timestamp_ms)])


def retained(bootstrap: str, topic: str) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record from the log start offset to the end."""
    return [(c.offset, c.record.value) for c in ConfluentClient(bootstrap).read_partition(topic, 0)]


def watermarks(client: ConfluentClient, topic: str) -> tuple[int, int]:
    """(earliest, latest) offsets of partition 0, as the client sees them."""
    return client.list_offsets(topic, [0], "earliest")[0], client.list_offsets(topic, [0], "latest")[0]


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
    client = ConfluentClient(broker.bootstrap)
    wait_until(lambda: watermarks(client, topic)[0] == expected_low, "retention")
    low, high = watermarks(client, topic)
    assert 0 < low <= len(old) and high == len(old) + len(young)
    bases = [int(path.name.split(".")[0]) for path in segment_files(broker, topic)]
    assert min(bases) == low, "the files of expired segments are gone (file.delete.delay.ms=0)"
    records = retained(broker.bootstrap, topic)
    assert [offset for offset, _ in records] == list(range(low, high))
    assert [value for _, value in records][-len(young) :] == young, "young data stays"
    with pytest.raises(ClientError) as below_start:  # auto.offset.reset=none: no reset, an error
        client.consume(topic, {0: 0}, reset="none", timeout_s=30)
    assert below_start.value.error == "_AUTO_OFFSET_RESET", (
        "a consumer positioned below the log start gets out of range"
    )
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
    records = retained(broker.bootstrap, topic)
    assert start > 0 and [offset for offset, _ in records] == list(range(start, 100))


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

"""Compaction through a real broker and stock clients (confluent-kafka, through the drivers).

Compacted topics keep the latest value per key at its original offset and drop tombstones after
``delete.retention.ms``; keyless records are refused at produce time (INVALID_RECORD, as
Kafka's LogValidator does); ``__consumer_offsets`` is compacted like any other such topic and
its committed offsets survive a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import ClientError, ConsumerSettings, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient, ConfluentDriver
from compat_tests.kit.raw_protocol import RawClient
from tests.integration.waiting import wait_until
from wire.error_codes import ErrorCode
from wire.record_batch import Record, encode_batch

CLEANER = {"log.cleaner.backoff.ms": "100"}
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "delete.retention.ms": "0",
    "min.cleanable.dirty.ratio": "0.01",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    with OdradekProcess(tmp_path_factory.mktemp("compaction"), CLEANER) as process:
        yield process


def produce_keyed(
    bootstrap: str, topic: str, items: list[tuple[bytes, bytes | None]], compression: str = "none"
) -> dict[int, tuple[bytes, bytes | None]]:
    """Produce (key, value) records one per batch; returns offset -> record as acknowledged."""
    delivered: dict[int, tuple[bytes, bytes | None]] = {}
    with ConfluentDriver(bootstrap).producer(ProducerSettings(compression=compression)) as producer:
        for key, value in items:
            (offset,) = producer.send(topic, [Message(value, key)])  # each send flushes: its own batch
            delivered[offset] = (key, value)
    return delivered


def read_keyed(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (c.offset, c.record.key, c.record.value) for c in ConfluentClient(bootstrap).read_partition(topic, 0)
    ]


def test_latest_value_per_key_and_tombstones_through_a_consumer(broker: OdradekProcess) -> None:
    topic = "compacted"
    with RawClient(broker.bootstrap) as client:
        client.create_topic(topic, 1, COMPACTED)
    items = [(b"key-%d" % (i % 10), b"round-%d" % (i // 10) + b"." * 60) for i in range(200)]
    items += [(b"key-0", None), (b"key-1", None)]
    appended = produce_keyed(broker.bootstrap, topic, items, compression="zstd")
    appended |= produce_keyed(broker.bootstrap, topic, [(b"filler-%d" % i, b"." * 100) for i in range(20)])
    latest = {key: (offset, value) for offset, (key, value) in sorted(appended.items())}

    def compacted_and_tombstones_gone() -> bool:
        records = read_keyed(broker.bootstrap, topic)
        if any(key in (b"key-0", b"key-1") for _, key, _ in records):
            # Tombstones go in a pass after their delete horizon: make the log dirty again.
            appended.update(produce_keyed(broker.bootstrap, topic, [(b"more", b"." * 100)] * 12))
            return False
        return True

    wait_until(compacted_and_tombstones_gone, "compaction to drop superseded records and tombstones", 60)
    records = read_keyed(broker.bootstrap, topic)
    assert all(appended[offset] == (key, value) for offset, key, value in records), "offsets never shift"
    assert [offset for offset, _, _ in records] == sorted({offset for offset, _, _ in records})
    final = {key: (offset, value) for offset, key, value in records}
    for key in (b"key-%d" % i for i in range(2, 10)):
        assert final[key] == latest[key], "every key keeps its latest value at its offset"
        assert [k for _, k, _ in records].count(key) == 1
    assert len(records) < len(appended) / 4


def test_keyless_records_are_refused_by_compacted_topics(broker: OdradekProcess) -> None:
    topic = "compacted-needs-keys"
    with RawClient(broker.bootstrap) as client:
        client.create_topic(topic, 1, COMPACTED)
        batch = encode_batch([Record(0, 0, b"k", b"keyed"), Record(1, 0, None, b"keyless")])
        response = client.produce(topic, 0, bytes(batch))
    assert response["error_code"] == ErrorCode.INVALID_RECORD
    assert [e["batch_index"] for e in response["record_errors"]] == [1]
    assert (
        "Compacted topic cannot accept message without key"
        in response["record_errors"][0]["batch_index_error_message"]
    )
    with pytest.raises(ClientError) as refused:
        ConfluentDriver(broker.bootstrap).produce(topic, [Message(b"no key")], ProducerSettings(retries=0))
    assert refused.value.error == "INVALID_RECORD"
    assert ConfluentClient(broker.bootstrap).read_partition(topic, 0) == []


def test_consumer_offsets_are_compacted_and_survive_a_crash(tmp_path: Path) -> None:
    overrides = CLEANER | {"offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": "2048"}
    broker = OdradekProcess(tmp_path / "broker", overrides).start()
    try:
        with RawClient(broker.bootstrap) as client:
            client.create_topic("tracked", 2)
        with ConfluentDriver(broker.bootstrap).consumer(ConsumerSettings(group="committer")) as consumer:
            for n in range(1, 301):
                consumer.commit({("tracked", n % 2): n})
        offsets_dir = broker.data_dir / "__consumer_offsets-0"

        def compacted() -> bool:
            """300 commits fill ~20 segments; compacted, the inactive ones hold two keys."""
            try:
                sizes = [path.stat().st_size for path in sorted(offsets_dir.glob("*.log"))]
            except FileNotFoundError:  # the cleaner swapped a segment out between listing and stat
                return False
            return sum(sizes[:-1]) < 2048

        wait_until(compacted, "__consumer_offsets to be compacted", timeout_s=60)
        broker.restart(crash=True)
        with ConfluentAdmin(broker.bootstrap) as admin:
            assert admin.group_offsets("committer") == {("tracked", 0): 300, ("tracked", 1): 299}
    finally:
        broker.stop()

"""kill -9 in the middle of a produce load, and a torn tail: nothing acknowledged is lost.

A producer runs in a thread and records every acknowledgement (partition, offset, value)
while the broker is killed with SIGKILL.  After a restart every acknowledged record must be
readable at its acknowledged offset, offsets must be contiguous (no gaps, no reuse), and new
appends must continue after the recovered end.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.integration.broker_process import OdradekProcess
from tests.integration.raw_client import RawClient, make_batch

TOPIC = "crash"
PARTITIONS = 2
LATEST = -1


def read_partition(bootstrap: str, partition: int, end: int) -> list[tuple[int, bytes]]:
    """All (offset, value) of a partition from 0 up to ``end`` (exclusive)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    records: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not records or records[-1][0] < end - 1):
        message = consumer.poll(1)
        if message is None:
            continue
        if message.error():
            assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
            if end == 0 or (records and records[-1][0] >= end - 1):
                break
            continue
        records.append((message.offset(), message.value()))
    consumer.close()
    return records


def produce_until_killed(bootstrap: str, acked: dict[tuple[int, int], bytes], stop: threading.Event) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 2,
            "message.timeout.ms": 5000,
            "retries": 0,
            "enable.idempotence": False,
        }
    )

    def on_delivery(error: object, message: object) -> None:
        if error is None:
            acked[(message.partition(), message.offset())] = message.value()  # type: ignore[attr-defined]

    sequence = 0
    while not stop.is_set():
        try:
            producer.produce(
                TOPIC,
                value=b"value-%08d" % sequence,
                partition=sequence % PARTITIONS,
                on_delivery=on_delivery,
            )
            sequence += 1
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(10)


def test_kill_during_produce_loses_nothing_acknowledged(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic(TOPIC, PARTITIONS)
    acked: dict[tuple[int, int], bytes] = {}
    stop = threading.Event()
    worker = threading.Thread(target=produce_until_killed, args=(odradek_broker.bootstrap, acked, stop))
    worker.start()
    deadline = time.monotonic() + 30
    while len(acked) < 20_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    odradek_broker.kill()
    stop.set()
    worker.join(30)
    acknowledged = dict(acked)
    assert len(acknowledged) >= 1000, "the load did not get going before the kill"

    odradek_broker.start()
    assert "unclean shutdown" in odradek_broker.log_text()
    with RawClient(odradek_broker.bootstrap) as client:
        ends = [client.list_offset(TOPIC, p, LATEST) for p in range(PARTITIONS)]
    for partition in range(PARTITIONS):
        records = read_partition(odradek_broker.bootstrap, partition, ends[partition])
        offsets = [offset for offset, _ in records]
        assert offsets == list(range(ends[partition])), "offsets must be contiguous from 0"
        stored = dict(records)
        for (acked_partition, offset), value in acknowledged.items():
            if acked_partition == partition:
                assert stored.get(offset) == value, (
                    f"acknowledged record {partition}/{offset} lost or changed"
                )
    with RawClient(odradek_broker.bootstrap) as client:
        appended = client.produce(TOPIC, 0, make_batch([b"after-restart"]))
        assert appended["base_offset"] == ends[0]


def test_torn_and_corrupt_tail_is_truncated_on_restart(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic(TOPIC, 1)
        for i in range(10):
            assert client.produce(TOPIC, 0, make_batch([b"good-%d" % i, b"more"]))["base_offset"] == 2 * i
    odradek_broker.kill()
    segment = Path(odradek_broker.data_dir) / f"{TOPIC}-0" / "00000000000000000000.log"
    good_size = segment.stat().st_size
    torn = make_batch([b"torn" * 100])
    with segment.open("ab") as log_file:
        log_file.write(torn[: len(torn) // 2])  # a batch cut short by the crash
    odradek_broker.start()
    assert segment.stat().st_size == good_size
    with RawClient(odradek_broker.bootstrap) as client:
        assert client.list_offset(TOPIC, 0, LATEST) == 20
        assert client.produce(TOPIC, 0, make_batch([b"next"]))["base_offset"] == 20
    odradek_broker.kill()
    # Flip a byte inside the last batch: its CRC no longer matches, so it is dropped.
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0xFF
    segment.write_bytes(bytes(data))
    odradek_broker.start()
    records = read_partition(odradek_broker.bootstrap, 0, 20)
    assert [value for _, value in records][::2] == [b"good-%d" % i for i in range(10)]
    with RawClient(odradek_broker.bootstrap) as client:
        assert client.list_offset(TOPIC, 0, LATEST) == 20

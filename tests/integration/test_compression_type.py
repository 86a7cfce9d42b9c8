"""Topic ``compression.type``: the broker stores batches with the topic's codec, as Kafka does."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.broker_process import OdradekProcess
from tests.integration.raw_client import RawClient
from wire.record_batch import Compression

ATTRIBUTES_AT = 21  # base offset 8, length 4, leader epoch 4, magic 1, crc 4


def stored_codecs(segment: Path) -> set[int]:
    """The compression codec of every batch in a segment file, read from the headers."""
    data = segment.read_bytes()
    codecs, position = set(), 0
    while position + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, position + 8)
        (attributes,) = struct.unpack_from(">h", data, position + ATTRIBUTES_AT)
        codecs.add(attributes & 0x7)
        position += 12 + length
    return codecs


@pytest.mark.parametrize(
    ("topic_codec", "producer_codec", "stored"),
    [
        ("zstd", "gzip", Compression.ZSTD),
        ("uncompressed", "lz4", Compression.NONE),
        ("producer", "snappy", Compression.SNAPPY),
    ],
)
def test_batches_are_stored_with_the_topic_codec(
    odradek_broker: OdradekProcess, topic_codec: str, producer_codec: str, stored: int
) -> None:
    topic = f"codec-{topic_codec}"
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic(topic, 1, {"compression.type": topic_codec})
    producer = Producer(
        {
            "bootstrap.servers": odradek_broker.bootstrap,
            "compression.type": producer_codec,
            "enable.idempotence": True,
        }
    )
    values = [b"value-%d" % i * 20 for i in range(500)]
    for i, value in enumerate(values):
        producer.produce(topic, key=b"%d" % i, value=value, partition=0, headers=[("h", b"%d" % i)])
    assert producer.flush(20) == 0
    consumer = Consumer(
        {"bootstrap.servers": odradek_broker.bootstrap, "group.id": "codec", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    received = []
    while len(received) < len(values):
        message = consumer.poll(10)
        assert message is not None and message.error() is None, message and message.error()
        received.append((message.offset(), message.key(), message.value(), message.headers()))
    consumer.close()
    assert received == [(i, b"%d" % i, v, [("h", b"%d" % i)]) for i, v in enumerate(values)]
    assert stored_codecs(odradek_broker.data_dir / f"{topic}-0" / "00000000000000000000.log") == {stored}

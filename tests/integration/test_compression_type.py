"""Topic ``compression.type``: the broker stores batches with the topic's codec, as Kafka does."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentClient, ConfluentDriver
from compat_tests.kit.raw_protocol import RawClient
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
    values = [b"value-%d" % i * 20 for i in range(500)]
    sent = [Message(v, b"%d" % i, (("h", b"%d" % i),), partition=0) for i, v in enumerate(values)]
    settings = ProducerSettings(compression=producer_codec, idempotence=True)
    ConfluentDriver(odradek_broker.bootstrap).produce(topic, sent, settings)
    consumed = ConfluentClient(odradek_broker.bootstrap).consume(topic, {0: 0}, until={0: len(values)})
    received = [(c.offset, c.record.key, c.record.value, c.record.headers) for c in consumed[0]]
    assert received == [(i, b"%d" % i, v, (("h", b"%d" % i),)) for i, v in enumerate(values)]
    assert stored_codecs(odradek_broker.data_dir / f"{topic}-0" / "00000000000000000000.log") == {stored}

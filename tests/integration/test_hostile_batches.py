"""Hostile record batches through a real broker: refused per partition, nothing stored.

Each batch carries a correct CRC (a header-only check lets it through) and is sent in one
Produce request together with a good batch for another partition: the bad partition must get
Kafka's error code and keep its log end offset, the good one must still land, and a stock
consumer must read the good partition to its end afterwards (a stored poison batch stalls
librdkafka silently).  Decompression bombs must be refused without the broker's peak memory
following what the bomb asks for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from tests.integration.broker_process import OdradekProcess
from tests.integration.raw_client import RawClient, make_batch
from tests.wire.test_record_validation import ATTACKS, LIMIT, batch_of, zstd_bomb
from wire.error_codes import ErrorCode
from wire.record_batch import Compression, Record, encode_batch

pytestmark = pytest.mark.timeout(180)

LATEST = -1
MIB = 1 << 20


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    process = OdradekProcess(tmp_path_factory.mktemp("hostile")).start()
    try:
        yield process
    finally:
        process.stop()


def produce_two(client: RawClient, topic: str, bad: bytes, good: bytes) -> dict[int, dict[str, Any]]:
    """One Produce v9 request: ``bad`` to partition 0, ``good`` to partition 1."""
    response = client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 30_000,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": 0, "records": bad}, {"index": 1, "records": good}],
                }
            ],
        },
    )
    return {p["index"]: p for p in response["responses"][0]["partition_responses"]}


def read_to_end(bootstrap: str, topic: str, partition: int) -> list[bytes]:
    """Every value of the partition, through librdkafka, until it reports the partition's end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "hostile-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    values = []
    try:
        while True:
            message = consumer.poll(30)
            assert message is not None, "the consumer stalled before the end of the partition"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return values
            values.append(message.value())
    finally:
        consumer.close()


@pytest.mark.parametrize("attack", [name for name in ATTACKS if name != "zstd bomb"])
def test_hostile_batch_is_refused_and_the_good_partition_still_lands(
    broker: OdradekProcess, attack: str
) -> None:
    bad, error_name = ATTACKS[attack]
    topic = "hostile-" + re.sub(r"[^a-z0-9]+", "-", attack.lower())
    good = make_batch([b"good-1", b"good-2"])
    with RawClient(broker.bootstrap) as client:
        client.create_topic(topic, 2)
        for _ in range(2):  # twice: a refused batch must not move anything the second time either
            answers = produce_two(client, topic, bad, good)
            assert answers[0]["error_code"] == ErrorCode[error_name], answers[0]
            assert answers[0]["error_message"], "Kafka explains the refusal"
            assert answers[1]["error_code"] == ErrorCode.NONE, answers[1]
        assert client.list_offset(topic, 0, LATEST) == 0, "nothing of the refused batch is stored"
        assert client.list_offset(topic, 1, LATEST) == 4
    assert read_to_end(broker.bootstrap, topic, 1) == [b"good-1", b"good-2"] * 2
    assert read_to_end(broker.bootstrap, topic, 0) == []


def test_compressed_batch_with_broken_offsets_gets_record_errors(broker: OdradekProcess) -> None:
    records = [Record(0, 0, b"a", b"1"), Record(7, 0, b"b", b"2"), Record(2, 0, b"c", b"3")]
    bad = bytes(encode_batch(records, compression=Compression.GZIP, last_offset_delta=2))
    with RawClient(broker.bootstrap) as client:
        client.create_topic("hostile-offsets", 2)
        answers = produce_two(client, "hostile-offsets", bad, make_batch([b"fine"]))
        assert answers[0]["error_code"] == ErrorCode.INVALID_RECORD
        assert [error["batch_index"] for error in answers[0]["record_errors"]] == [1]
        assert "incremental offsets" in answers[0]["record_errors"][0]["batch_index_error_message"]
        assert answers[1]["error_code"] == ErrorCode.NONE
        assert client.list_offset("hostile-offsets", 0, LATEST) == 0


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set (VmHWM), which only ever grows."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB$", status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) * 1024


TOPICS_THAT_DECOMPRESS = {
    "bomb-default": {},
    "bomb-gzip-topic": {"compression.type": "gzip"},
    "bomb-compacted": {"cleanup.policy": "compact"},
}


def test_decompression_bomb_is_refused_without_the_memory_it_asks_for(broker: OdradekProcess) -> None:
    bomb = batch_of(zstd_bomb(), 1, attributes=Compression.ZSTD)
    assert len(bomb) < 16 * 1024, "8 KB on the wire, 256 MiB decompressed"
    before = peak_rss_bytes(broker.process.pid)
    with RawClient(broker.bootstrap) as client:
        for topic, configs in TOPICS_THAT_DECOMPRESS.items():
            client.create_topic(topic, 2, configs)
            answers = produce_two(client, topic, bomb, make_batch([b"after the bomb"]))
            assert answers[0]["error_code"] == ErrorCode.CORRUPT_MESSAGE, answers[0]
            assert "decompresses to more than" in answers[0]["error_message"]
            assert answers[1]["error_code"] == ErrorCode.NONE
            assert client.list_offset(topic, 0, LATEST) == 0
    growth = peak_rss_bytes(broker.process.pid) - before
    assert growth < 2 * LIMIT + 50 * MIB, f"peak RSS grew by {growth / MIB:.0f} MiB for an 8 KB request"

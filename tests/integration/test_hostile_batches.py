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
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_client import PRODUCE_VERSION, produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.confluent import ConfluentClient
from compat_tests.kit.raw_protocol import RawClient, make_batch
from tests.integration.waiting import wait_until
from tests.wire.test_record_validation import ATTACKS, LIMIT, batch_of, zstd_bomb
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch import Compression, Record, encode_batch

pytestmark = pytest.mark.timeout(180)

LATEST = -1
MIB = 1 << 20


@pytest.fixture
def broker(shared_broker: OdradekProcess) -> OdradekProcess:
    return shared_broker


def produce_two(client: RawClient, topic: str, bad: bytes, good: bytes) -> dict[int, dict[str, Any]]:
    """One Produce v9 request: ``bad`` to partition 0, ``good`` to partition 1."""
    response = client.request(ApiKey.PRODUCE, PRODUCE_VERSION, produce_body(topic, {0: bad, 1: good}))
    return {p["index"]: p for p in response["responses"][0]["partition_responses"]}


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
    reader = ConfluentClient(broker.bootstrap)
    assert [c.record.value for c in reader.read_partition(topic, 1)] == [b"good-1", b"good-2"] * 2
    assert reader.read_partition(topic, 0) == []


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


TOPIC_RESOURCE = 2
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "delete.retention.ms": "0",
    "min.cleanable.dirty.ratio": "0.01",
}


def values_of(bootstrap: str, topic: str) -> list[tuple[bytes, int]]:
    """(key, value length) of every record, read with a consumer to the partition's end."""
    return [(c.record.key, len(c.record.value)) for c in ConfluentClient(bootstrap).read_partition(topic, 0)]


def test_cleaner_keeps_a_stored_batch_over_the_bound_and_compacts_the_rest(tmp_path: Path) -> None:
    """A batch stored before ``max.message.bytes`` was lowered decompresses past the new bound:
    the cleaner must keep it as it is (logged) and still compact everything else, not give up
    on the log or hold what the batch asks for."""
    broker = OdradekProcess(tmp_path / "cleaner", {"log.cleaner.backoff.ms": "100"}).start()
    topic = "stored-over-the-bound"
    try:
        with RawClient(broker.bootstrap) as client:
            client.create_topic(topic, 1, COMPACTED)
            big = encode_batch([Record(0, 0, b"big", bytes(2 * MIB))], compression=Compression.ZSTD)
            assert client.produce(topic, 0, bytes(big))["error_code"] == 0
            entries = [
                {"name": k, "value": v} for k, v in (COMPACTED | {"max.message.bytes": "1000"}).items()
            ]
            resource = {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configs": entries}
            body = {"resources": [resource], "validate_only": False}
            (answer,) = client.request(ApiKey.ALTER_CONFIGS, 2, body)["responses"]
            assert answer["error_code"] == 0, answer
            # The batch above sits alone in the active segment until now: no pass has seen it.
            for round_ in range(40):
                assert client.produce(topic, 0, make_batch([b"round %d" % round_]))["error_code"] == 0

        def compacted() -> bool:
            return [key for key, _ in values_of(broker.bootstrap, topic)].count(b"k0") < 40

        wait_until(compacted, "the cleaner to compact the records after the oversized batch", 60)
        assert (b"big", 2 * MIB) in values_of(broker.bootstrap, topic), "the oversized batch is kept"
        assert "keeping the batch at offset 0 uncompacted" in broker.log_text()
        assert "cannot clean" not in broker.log_text()
    finally:
        broker.stop()

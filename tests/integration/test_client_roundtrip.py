"""Every stock client writes 100,000 keyed records with every codec and reads back exactly those
(kafka-python 25,000: see :data:`RECORDS_BY_CLIENT`).

This is the core promise of a Kafka-compatible broker: whatever a producer sends (keys, values,
headers, explicit timestamps, null and empty values) comes back byte for byte, in per-partition
order, at dense offsets from 0, whichever client wrote it and however it was compressed. The
batches are large (linger and batch size up) so the broker sees the multi-megabyte produce
requests real producers send, and consumers fetch with large limits.

One broker serves the module (starting one per case would cost more than some cases take); every
case writes its own topic.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.catalog import CLIENTS
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.drivers.records import (
    CODECS,
    Record,
    by_partition,
    first_difference,
    make_records,
    unique_topic,
)

RECORD_COUNT = 100_000
RECORDS_BY_CLIENT = {"kafka-python": 25_000}
"""kafka-python encodes and decodes every record in Python: 100,000 took it 35 s per codec, five
codecs a sixth of the CI main suite's wall time. A quarter of them still makes the multi-megabyte
produce requests and fetch answers this test is about (about 1 MB per partition)."""
PARTITIONS = 4


@pytest.fixture(scope="module")
def records() -> list[Record]:
    """The same 100,000 records for every case (generating them costs a fraction of a second)."""
    return make_records(RECORD_COUNT, seed=20240601)


@pytest.fixture(scope="module")
def admin(shared_broker: OdradekProcess) -> Iterator[ConfluentAdmin]:
    """Creates the topics; which admin client does that is not under test here."""
    with ConfluentAdmin(shared_broker.bootstrap) as client:
        yield client


@pytest.mark.timeout(300)
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client_name", list(CLIENTS))
@pytest.mark.slow
def test_roundtrip_100k_keyed_records(
    shared_broker: OdradekProcess, admin: ConfluentAdmin, records: list[Record], client_name: str, codec: str
) -> None:
    """Produce 100,000 keyed records (fewer for a slow client) to 4 partitions, consume from
    offset 0, compare exactly.

    Per partition the consumed (key, value, headers, timestamp) sequence must equal what the
    client reported delivered to that partition, in send order, at offsets 0..n-1; the high
    watermark must be n (nothing more was stored), and equal keys must share a partition.
    """
    client = CLIENTS[client_name](shared_broker.bootstrap)
    if reason := client.codec_unavailable(codec):
        pytest.skip(reason)
    records = records[: RECORDS_BY_CLIENT.get(client_name, RECORD_COUNT)]
    topic = unique_topic(f"roundtrip-{client_name}-{codec}")
    admin.create_topic(topic, PARTITIONS)

    delivered = client.produce(topic, records, codec=codec, timeout_s=120)

    expected = by_partition(records, delivered)
    assert set(expected) == set(range(PARTITIONS)), "1009 distinct keys must spread over all 4 partitions"
    for partition in range(PARTITIONS):
        offsets = [d.offset for d in delivered if d.partition == partition]
        assert offsets == list(range(len(offsets))), f"partition {partition}: offsets not dense from 0"
    key_partitions: dict[bytes | None, set[int]] = {}
    for record, where in zip(records, delivered, strict=True):
        key_partitions.setdefault(record.key, set()).add(where.partition)
    assert all(len(ps) == 1 for ps in key_partitions.values()), "one key went to several partitions"

    ends = {p: len(expected[p]) for p in range(PARTITIONS)}
    consumed = client.consume(topic, dict.fromkeys(range(PARTITIONS), 0), until=ends, timeout_s=120)

    for partition in range(PARTITIONS):
        got = consumed[partition]
        assert [c.offset for c in got] == list(range(ends[partition])), f"partition {partition}: offsets"
        difference = first_difference(expected[partition], [c.record for c in got])
        assert difference is None, f"{client_name}/{codec} partition {partition}: {difference}"
    assert client.list_offsets(topic, range(PARTITIONS), "latest") == ends

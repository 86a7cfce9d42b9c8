"""Offsets and limits through stock clients: ListOffsets, fetch edges, size limits, acks, DeleteRecords.

Consumers decide where to read from these answers: earliest/latest/by-time lookups position Spark
and replay tools, OFFSET_OUT_OF_RANGE triggers auto.offset.reset (or data-loss alarms), an empty
fetch at the high watermark must be a normal long-poll, and a fetch limit smaller than one batch
must still make progress (KIP-74). Producers rely on MESSAGE_TOO_LARGE being a prompt error rather
than a hang, and on every acks level delivering. Each expectation is Apache Kafka's behaviour.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.admin import Admin
from compat_tests.kit.drivers.base import ClientError
from compat_tests.kit.drivers.bulk import BulkClient
from compat_tests.kit.drivers.catalog import ADMINS, CLIENTS
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient
from compat_tests.kit.drivers.records import Record, make_records, unique_topic

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=list(CLIENTS))
def client(request: pytest.FixtureRequest, shared_broker: OdradekProcess) -> BulkClient:
    """Each test runs once per client, against the module's shared broker."""
    return CLIENTS[request.param](shared_broker.bootstrap)


@pytest.fixture(scope="module")
def setup(shared_broker: OdradekProcess) -> Iterator[ConfluentAdmin]:
    """Creates topics for the tests; which admin client does that is not under test here."""
    with ConfluentAdmin(shared_broker.bootstrap) as admin:
        yield admin


@pytest.fixture(scope="module")
def writer(shared_broker: OdradekProcess) -> ConfluentClient:
    """Writes test data where the producing client is not what a test is about."""
    return ConfluentClient(shared_broker.bootstrap)


def is_offset_out_of_range(failure: ClientError) -> bool:
    """OFFSET_OUT_OF_RANGE as each client reports it with auto.offset.reset=none.

    kafka-python and aiokafka raise the broker's error (code 1); librdkafka wraps it in its local
    _AUTO_OFFSET_RESET error whose text carries the broker's "Offset out of range".
    """
    if failure.error == "OFFSET_OUT_OF_RANGE":
        return True
    return failure.error == "_AUTO_OFFSET_RESET" and "Offset out of range" in failure.detail


def timed_records(count: int, base_ts: int, step_ms: int = 1000) -> list[Record]:
    """Records whose timestamps are exactly base_ts + i * step_ms (monotonic, so "the first offset
    with a timestamp >= target" has one right answer)."""
    return [Record(b"k%d" % i, b"v%d" % i, (), base_ts + i * step_ms) for i in range(count)]


# ---------------------------------------------------------------------------------------------
# ListOffsets


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_list_offsets_earliest_latest_and_by_time(
    client: BulkClient, setup: ConfluentAdmin, writer: ConfluentClient, codec: str
) -> None:
    """Earliest is 0, latest is the record count, by-time is the first offset whose timestamp is
    >= the target (inside a batch too, compressed or not), and a target after the last record has
    no offset (-1).

    Partition 0 holds 20 records in four batches of five; partition 1 is empty.
    """
    topic = unique_topic(f"by-time-{codec}")
    setup.create_topic(topic, 2)
    base = (int(time.time() * 1000) // 1000) * 1000 - 600_000
    records = timed_records(20, base)
    for chunk in range(4):
        writer.produce(topic, records[chunk * 5 : chunk * 5 + 5], codec=codec, partition=0)

    assert client.list_offsets(topic, [0, 1], "earliest") == {0: 0, 1: 0}
    assert client.list_offsets(topic, [0, 1], "latest") == {0: 20, 1: 0}
    expectations = {
        base - 60_000: 0,  # before the first record
        base: 0,  # exactly the first
        base + 1: 1,  # between the first and the second
        base + 7000: 7,  # exactly a record in the middle of the second batch
        base + 9500: 10,  # between two batches
        base + 19_000: 19,  # exactly the last
        base + 19_001: -1,  # after the last: no offset
    }
    for target, offset in expectations.items():
        found = client.list_offsets(topic, [0, 1], target)
        assert found == {0: offset, 1: -1}, f"target base{target - base:+d}ms"


@pytest.fixture(params=list(ADMINS))
def admin(request: pytest.FixtureRequest, shared_broker: OdradekProcess) -> Iterator[Admin]:
    """Admin-client tests run through each admin client."""
    with ADMINS[request.param](shared_broker.bootstrap) as client:
        yield client


def test_admin_list_offsets_with_max_timestamp(
    admin: Admin, setup: ConfluentAdmin, writer: ConfluentClient
) -> None:
    """AdminClient.listOffsets (what Spark's driver uses): earliest and latest carry no timestamp
    (-1); by-time returns the record's offset and timestamp; max_timestamp (KIP-734) returns the
    record with the largest timestamp even when it is neither the last record of its batch nor in
    the last batch."""
    topic = unique_topic("admin-offsets")
    setup.create_topic(topic, 2)
    base = int(time.time() * 1000) - 600_000
    stamps = [base + 5000, base + 1000, base + 9000, base + 3000, base + 7000]
    writer.produce(topic, [Record(b"k", b"v%d" % i, (), ts) for i, ts in enumerate(stamps)], partition=0)
    writer.produce(topic, [Record(b"k", b"w%d" % i, (), base + 100 + i) for i in range(3)], partition=0)

    assert admin.list_offsets(topic, [0, 1], "earliest") == {0: (0, -1), 1: (0, -1)}
    assert admin.list_offsets(topic, [0, 1], "latest") == {0: (8, -1), 1: (0, -1)}
    assert admin.list_offsets(topic, [0], "max_timestamp") == {0: (2, base + 9000)}
    assert admin.list_offsets(topic, [0], base + 9000) == {0: (2, base + 9000)}
    assert admin.list_offsets(topic, [0, 1], base + 9001) == {0: (-1, -1), 1: (-1, -1)}


def test_empty_topic_offsets(client: BulkClient, setup: ConfluentAdmin) -> None:
    """A new topic has earliest == latest == 0 and no offset for any timestamp."""
    topic = unique_topic("empty")
    setup.create_topic(topic, 3)
    assert client.list_offsets(topic, [0, 1, 2], "earliest") == {0: 0, 1: 0, 2: 0}
    assert client.list_offsets(topic, [0, 1, 2], "latest") == {0: 0, 1: 0, 2: 0}
    assert client.list_offsets(topic, [0, 1, 2], 0) == {0: -1, 1: -1, 2: -1}


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_log_append_time_topic(client: BulkClient, setup: ConfluentAdmin, codec: str) -> None:
    """On a message.timestamp.type=LogAppendTime topic consumers see the broker's clock, not the
    producer's timestamps (compressed batches too, which the broker must mark without
    recompressing), and ListOffsets by time searches those append times."""
    topic = unique_topic(f"append-time-{codec}")
    setup.create_topic(topic, 1, configs={"message.timestamp.type": "LogAppendTime"})
    produced_at = int(time.time() * 1000)
    old = produced_at - 3_600_000
    records = [Record(b"k%d" % i, b"v%d" % i, (), old + i) for i in range(50)]
    client.produce(topic, records, codec=codec, partition=0)
    done_at = int(time.time() * 1000)

    consumed = client.consume(topic, {0: 0}, until={0: 50}, timeout_s=20)[0]
    assert [(c.record.key, c.record.value) for c in consumed] == [(r.key, r.value) for r in records]
    stamps = {c.record.timestamp_ms for c in consumed}
    assert all(produced_at - 1000 <= ts <= done_at + 1000 for ts in stamps), (stamps, produced_at, done_at)
    assert client.list_offsets(topic, [0], old) == {0: 0}
    assert client.list_offsets(topic, [0], done_at + 1001) == {0: -1}


# ---------------------------------------------------------------------------------------------
# Fetch positions


def test_fetch_at_high_watermark_waits_without_error(
    client: BulkClient, setup: ConfluentAdmin, writer: ConfluentClient
) -> None:
    """Fetching at the high watermark returns nothing and no error (with auto.offset.reset=none,
    so an OFFSET_OUT_OF_RANGE would surface); records produced later arrive on the same fetch
    loop (the long-poll wakes up)."""
    topic = unique_topic("at-end")
    setup.create_topic(topic, 1)
    writer.produce(topic, make_records(5), partition=0)

    assert client.consume(topic, {0: 5}, timeout_s=2) == {0: []}

    later = make_records(2, seed=7)
    timer = threading.Timer(1.5, writer.produce, args=(topic, later), kwargs={"partition": 0})
    timer.start()
    try:
        consumed = client.consume(topic, {0: 5}, until={0: 7}, timeout_s=30)
    finally:
        timer.join()
    assert [(c.offset, c.record) for c in consumed[0]] == [(5, later[0]), (6, later[1])]


def test_fetch_beyond_end_is_offset_out_of_range(
    client: BulkClient, setup: ConfluentAdmin, writer: ConfluentClient
) -> None:
    """A position past the high watermark gets OFFSET_OUT_OF_RANGE, which a consumer with
    auto.offset.reset=none reports as an error instead of silently moving."""
    topic = unique_topic("beyond")
    setup.create_topic(topic, 1)
    writer.produce(topic, make_records(5), partition=0)
    with pytest.raises(ClientError) as failure:
        client.consume(topic, {0: 50}, timeout_s=20)
    assert is_offset_out_of_range(failure.value), failure.value


@pytest.mark.parametrize(("reset", "expected"), [("earliest", 5), ("latest", 0)])
def test_out_of_range_position_resets(
    client: BulkClient, setup: ConfluentAdmin, writer: ConfluentClient, reset: str, expected: int
) -> None:
    """With auto.offset.reset earliest/latest the out-of-range position moves to the log start
    (all 5 records follow) or to the high watermark (nothing follows), without an error."""
    topic = unique_topic(f"reset-{reset}")
    setup.create_topic(topic, 1)
    records = make_records(5)
    writer.produce(topic, records, partition=0)
    if expected:
        consumed = client.consume(topic, {0: 50}, until={0: expected}, reset=reset, timeout_s=20)
    else:
        consumed = client.consume(topic, {0: 50}, reset=reset, timeout_s=2)
    assert [c.record for c in consumed[0]] == records[:expected]


# ---------------------------------------------------------------------------------------------
# Size limits


BATCH_OVERHEAD = 61
"""Size of a v2 record batch without records (base offset through record count)."""


def single_record_batch_size(value_size: int) -> int:
    """Bytes of a batch holding one record: null key, no headers, zero deltas, a ``value_size``
    value (varints sized for values of 8,192-1,048,575 bytes: 3 bytes each for the value length
    and the record length)."""
    body = (
        1 + 1 + 1 + 1 + 3 + value_size + 1
    )  # attributes, ts delta, offset delta, key, value len, value, headers
    return BATCH_OVERHEAD + 3 + body


def test_message_larger_than_max_message_bytes_is_rejected(client: BulkClient, setup: ConfluentAdmin) -> None:
    """With max.message.bytes=10000 a 20,000-byte record fails promptly with MESSAGE_TOO_LARGE;
    a batch of exactly 10,000 bytes is accepted, one byte more is not (the limit is on the batch)."""
    topic = unique_topic("too-large")
    setup.create_topic(topic, 1, configs={"max.message.bytes": "10000"})
    now = int(time.time() * 1000)

    with pytest.raises(ClientError) as failure:
        client.produce(topic, [Record(None, b"x" * 20_000, (), now)], timeout_s=20)
    # The broker's code, not a delivery timeout: the rejection came back as an answer.
    assert failure.value.error == "MESSAGE_TOO_LARGE", failure.value

    fits = 10_000 - single_record_batch_size(0)
    assert single_record_batch_size(fits) == 10_000
    with pytest.raises(ClientError) as failure:
        client.produce(topic, [Record(None, b"y" * (fits + 1), (), now)], timeout_s=20)
    assert failure.value.error == "MESSAGE_TOO_LARGE", failure.value

    accepted = Record(None, b"z" * fits, (), now)
    assert [d.offset for d in client.produce(topic, [accepted], timeout_s=20)] == [0]
    assert client.consume(topic, {0: 0}, until={0: 1}, timeout_s=20)[0][0].record == accepted


def test_max_message_bytes_limits_the_compressed_batch(client: BulkClient, setup: ConfluentAdmin) -> None:
    """The limit applies to the batch as stored: 20,000 compressible bytes gzip far below 10,000.
    Raising max.message.bytes takes effect on the live topic without a restart."""
    topic = unique_topic("limit-compressed")
    setup.create_topic(topic, 1, configs={"max.message.bytes": "10000"})
    now = int(time.time() * 1000)
    compressible = Record(None, b"x" * 20_000, (), now)
    assert [d.offset for d in client.produce(topic, [compressible], codec="gzip", timeout_s=20)] == [0]

    incompressible = Record(None, random.Random(5).randbytes(20_000), (), now)
    with pytest.raises(ClientError) as failure:
        client.produce(topic, [incompressible], timeout_s=20)
    assert failure.value.error == "MESSAGE_TOO_LARGE", failure.value

    setup.alter_topic_configs(topic, {"max.message.bytes": "30000"}, incremental=True)
    assert [d.offset for d in client.produce(topic, [incompressible], timeout_s=20)] == [1]
    consumed = client.consume(topic, {0: 0}, until={0: 2}, timeout_s=20)
    assert [c.record for c in consumed[0]] == [compressible, incompressible]


# ---------------------------------------------------------------------------------------------
# Record validation


def test_create_time_bounds(client: BulkClient, setup: ConfluentAdmin) -> None:
    """CreateTime timestamps outside [now - message.timestamp.before.max.ms, now +
    message.timestamp.after.max.ms] (Kafka 4 default for the latter: one hour) are
    INVALID_TIMESTAMP; timestamps inside are stored as given."""
    topic = unique_topic("ts-bounds")
    setup.create_topic(topic, 1, configs={"message.timestamp.before.max.ms": "3600000"})
    now = int(time.time() * 1000)
    for label, offset_ms in (("2h old", -7_200_000), ("2h ahead", 7_200_000)):
        with pytest.raises(ClientError) as failure:
            client.produce(topic, [Record(b"k", b"v", (), now + offset_ms)], partition=0, timeout_s=20)
        assert failure.value.error == "INVALID_TIMESTAMP", (label, failure.value)
    inside = [Record(b"k", b"old", (), now - 600_000), Record(b"k", b"ahead", (), now + 600_000)]
    client.produce(topic, inside, partition=0, timeout_s=20)
    assert [c.record for c in client.consume(topic, {0: 0}, until={0: 2}, timeout_s=20)[0]] == inside


def test_create_time_bounds_apply_to_every_record(client: BulkClient, setup: ConfluentAdmin) -> None:
    """Kafka checks every record's timestamp: one too-old record in the middle of a batch makes
    the whole batch INVALID_TIMESTAMP, and nothing is stored."""
    topic = unique_topic("ts-mid-batch")
    setup.create_topic(topic, 1, configs={"message.timestamp.before.max.ms": "3600000"})
    now = int(time.time() * 1000)
    batch = [
        Record(b"k", b"a", (), now),
        Record(b"k", b"b", (), now - 7_200_000),
        Record(b"k", b"c", (), now),
    ]
    with pytest.raises(ClientError) as failure:
        client.produce(topic, batch, partition=0, timeout_s=20)
    assert failure.value.error == "INVALID_TIMESTAMP", failure.value
    assert client.list_offsets(topic, [0], "latest") == {0: 0}


def test_log_append_time_topic_ignores_producer_clock(client: BulkClient, setup: ConfluentAdmin) -> None:
    """A LogAppendTime topic exists so producers' clocks do not matter: a timestamp two hours
    ahead is accepted and replaced by the broker's time."""
    topic = unique_topic("append-time-skew")
    setup.create_topic(topic, 1, configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    client.produce(topic, [Record(b"k", b"v", (), before + 7_200_000)], partition=0, timeout_s=20)
    (consumed,) = client.consume(topic, {0: 0}, until={0: 1}, timeout_s=20)[0]
    assert before - 1000 <= consumed.record.timestamp_ms <= int(time.time() * 1000) + 1000


def test_compacted_topic_rejects_records_without_key(client: BulkClient, setup: ConfluentAdmin) -> None:
    """cleanup.policy=compact needs a key on every record: a batch with a null key anywhere is
    INVALID_RECORD and nothing of it is stored; keyed records are accepted."""
    topic = unique_topic("compact-keys")
    setup.create_topic(topic, 1, configs={"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    batch = [Record(b"k1", b"a", (), now), Record(None, b"b", (), now), Record(b"k2", b"c", (), now)]
    with pytest.raises(ClientError) as failure:
        client.produce(topic, batch, partition=0, timeout_s=20)
    # aiokafka has no class for error 87 and reports any code it does not know as UnknownError.
    expected = "UnknownError" if client.name == "aiokafka" else "INVALID_RECORD"
    assert failure.value.error == expected, failure.value
    assert client.list_offsets(topic, [0], "latest") == {0: 0}
    keyed = [batch[0], batch[2]]
    client.produce(topic, keyed, partition=0, timeout_s=20)
    assert [c.record for c in client.consume(topic, {0: 0}, until={0: 2}, timeout_s=20)[0]] == keyed


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_every_acks_level_delivers(client: BulkClient, setup: ConfluentAdmin, acks: str) -> None:
    """acks=0 (no response at all), acks=1 and acks=all each store every record exactly once."""
    topic = unique_topic(f"acks-{acks}")
    setup.create_topic(topic, 2)
    records = make_records(2000, seed=3)
    delivered = client.produce(topic, records, acks=acks, timeout_s=30)
    ends: dict[int, int] = {}
    for where in delivered:
        ends[where.partition] = ends.get(where.partition, 0) + 1
    if acks == "0":
        # No response, so no offsets to check (clients fill in -1, None or made-up numbers);
        # wait until the broker has stored everything.
        deadline = time.monotonic() + 15
        while client.list_offsets(topic, [0, 1], "latest") != {p: ends.get(p, 0) for p in (0, 1)}:
            assert time.monotonic() < deadline, "acks=0 records never all arrived"
            time.sleep(0.2)
    else:
        for p in (0, 1):
            offsets = [d.offset for d in delivered if d.partition == p]
            assert offsets == list(range(len(offsets))), f"partition {p}"
    consumed = client.consume(topic, {0: 0, 1: 0}, until={p: ends.get(p, 0) for p in (0, 1)}, timeout_s=30)
    assert sorted((r.record for rs in consumed.values() for r in rs), key=records.index) == records
    assert client.list_offsets(topic, [0, 1], "latest") == {p: ends.get(p, 0) for p in (0, 1)}


def test_fetch_limit_smaller_than_a_batch_still_progresses(client: BulkClient, setup: ConfluentAdmin) -> None:
    """KIP-74: with fetch limits (per partition and per request) of 1,024 bytes the consumer still
    receives batches of tens of kilobytes, whole, and reads to the end."""
    topic = unique_topic("kip74")
    setup.create_topic(topic, 1)
    now = int(time.time() * 1000)
    records = [Record(b"k%d" % i, bytes([65 + i % 26]) * 3000, (), now + i) for i in range(40)]
    client.produce(topic, records, partition=0)
    consumed = client.consume(topic, {0: 0}, until={0: 40}, timeout_s=30, fetch_bytes=1024)
    assert [c.record for c in consumed[0]] == records


def test_fetch_of_several_partitions_spans_read_and_sent_batches(
    client: BulkClient, setup: ConfluentAdmin
) -> None:
    """A Fetch response carries its first 64 KiB of batches read into memory and the rest as
    file regions (``broker.services.storage.file_region``): three partitions of 40 KiB, fetched together, fall on
    both sides of that line and in one region past it, and each returns all its records."""
    topic = unique_topic("read-and-sent")
    setup.create_topic(topic, 3)
    now = int(time.time() * 1000)
    records = {
        p: [Record(b"k%d" % i, bytes([65 + (i + p) % 26]) * 2000, (), now + i) for i in range(20)]
        for p in range(3)
    }
    for partition, values in records.items():
        client.produce(topic, values, partition=partition)
    consumed = client.consume(
        topic, dict.fromkeys(records, 0), until=dict.fromkeys(records, 20), timeout_s=30
    )
    assert {p: [c.record for c in consumed[p]] for p in records} == records


# ---------------------------------------------------------------------------------------------
# DeleteRecords


def test_delete_records_moves_log_start(
    admin: Admin, setup: ConfluentAdmin, shared_broker: OdradekProcess
) -> None:
    """DeleteRecords up to offset 15 (inside a batch) makes 15 the earliest offset for every
    client, keeps the high watermark, serves 15.. exactly, and makes offset 5 out of range.
    Deleting to -1 means "to the high watermark"; an offset past it is OFFSET_OUT_OF_RANGE; an
    offset below the current start changes nothing."""
    topic = unique_topic("delete-records")
    setup.create_topic(topic, 2)
    writer = ConfluentClient(shared_broker.bootstrap)
    records = make_records(30, seed=11)
    for chunk in range(3):
        writer.produce(topic, records[chunk * 10 : chunk * 10 + 10], partition=0)
    writer.produce(topic, make_records(10), partition=1)

    assert admin.delete_records(topic, {0: 15}) == {0: 15}

    for name, client_class in CLIENTS.items():
        reader = client_class(shared_broker.bootstrap)
        assert reader.list_offsets(topic, [0, 1], "earliest") == {0: 15, 1: 0}, name
        assert reader.list_offsets(topic, [0, 1], "latest") == {0: 30, 1: 10}, name
    consumed = writer.consume(topic, {0: 15}, until={0: 30}, timeout_s=20)
    assert [(c.offset, c.record) for c in consumed[0]] == list(zip(range(15, 30), records[15:], strict=True))
    with pytest.raises(ClientError) as failure:
        writer.consume(topic, {0: 5}, timeout_s=20)
    assert is_offset_out_of_range(failure.value), failure.value

    assert admin.delete_records(topic, {0: 3}) == {0: 15}
    assert admin.delete_records(topic, {1: -1}) == {1: 10}
    assert writer.list_offsets(topic, [1], "earliest") == {1: 10}
    with pytest.raises(ClientError) as failure:
        admin.delete_records(topic, {0: 31})
    assert failure.value.error == "OFFSET_OUT_OF_RANGE", failure.value
    assert writer.list_offsets(topic, [0], "earliest") == {0: 15}


def test_log_start_offset_survives_restart(tmp_path: Path) -> None:
    """The log start offset moved by DeleteRecords is checkpointed: after a restart earliest is
    still the deleted-to offset, not the start of the first remaining segment."""
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        topic = unique_topic("start-restart")
        with ConfluentAdmin(broker.bootstrap) as admin:
            admin.create_topic(topic, 1)
            ConfluentClient(broker.bootstrap).produce(topic, make_records(20), partition=0)
            assert admin.delete_records(topic, {0: 12}) == {0: 12}
        broker.restart()
        reader = ConfluentClient(broker.bootstrap)
        assert reader.list_offsets(topic, [0], "earliest") == {0: 12}
        assert reader.list_offsets(topic, [0], "latest") == {0: 20}
    finally:
        broker.stop()


def test_offsets_across_segments(odradek_broker: OdradekProcess) -> None:
    """With 1 MiB segments (Kafka 4's minimum segment.bytes) 5 MB of records span five segments:
    by-time lookups, reads from the middle and DeleteRecords work across segment boundaries;
    DeleteRecords drops the segments wholly below the new start; all of it survives a clean
    restart and a kill -9."""
    bootstrap = odradek_broker.bootstrap
    topic = unique_topic("segments")
    base = int(time.time() * 1000) - 3_600_000
    records = [Record(b"k%d" % i, bytes([65 + i % 26]) * 1000, (), base + i * 100) for i in range(5000)]
    writer = ConfluentClient(bootstrap)
    with ConfluentAdmin(bootstrap) as admin:
        admin.create_topic(topic, 1, configs={"segment.bytes": "1048576"})
        for start in range(0, 5000, 500):
            writer.produce(topic, records[start : start + 500], partition=0)
        partition_dir = odradek_broker.data_dir / f"{topic}-0"
        assert len(list(partition_dir.glob("*.log"))) >= 4, "records should span several segments"

        for name, client_class in CLIENTS.items():
            reader = client_class(bootstrap)
            found = [
                reader.list_offsets(topic, [0], base + ms)[0] for ms in (0, 50, 150_000, 150_001, 499_900)
            ]
            assert found == [0, 1, 1500, 1501, 4999], name
            assert reader.list_offsets(topic, [0], base + 499_901) == {0: -1}, name
        assert admin.list_offsets(topic, [0], "max_timestamp") == {0: (4999, base + 499_900)}
        middle = writer.consume(topic, {0: 2345}, until={0: 5000}, timeout_s=30)[0]
        assert [c.record for c in middle] == records[2345:]

        assert admin.delete_records(topic, {0: 2345}) == {0: 2345}
        wait_until_gone = time.monotonic() + 10
        while (partition_dir / f"{0:020d}.log").exists():
            assert time.monotonic() < wait_until_gone, "the first segment is still live after DeleteRecords"
            time.sleep(0.1)
        assert writer.list_offsets(topic, [0], base) == {0: 2345}

    for stop in ("restart", "kill"):
        odradek_broker.restart(crash=stop == "kill")
        assert writer.list_offsets(topic, [0], "earliest") == {0: 2345}, stop
        assert writer.list_offsets(topic, [0], "latest") == {0: 5000}, stop
        assert writer.list_offsets(topic, [0], base + 300_000) == {0: 3000}, stop
        after = writer.consume(topic, {0: 2345}, until={0: 5000}, timeout_s=30)[0]
        assert [c.record for c in after] == records[2345:], stop

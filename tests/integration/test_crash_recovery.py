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

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import ClientError, Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentClient, ConfluentDriver
from compat_tests.kit.raw_protocol import RawClient, make_batch

TOPIC = "crash"
PARTITIONS = 2
LATEST = -1
ROUND = 200
"""Records per send: each send waits for its acknowledgements, so a kill meets at most these."""


def produce_until_killed(bootstrap: str, acked: dict[tuple[int, int], bytes], stop: threading.Event) -> None:
    """Send rounds of records over both partitions until ``stop``, recording every acknowledged
    one; no retries, so a record is acknowledged by the broker that wrote it or not at all."""
    settings = ProducerSettings(acks="all", idempotence=False, retries=0, timeout_s=5)
    sequence = 0
    with ConfluentDriver(bootstrap).producer(settings) as producer:
        while not stop.is_set():
            sent = [
                Message(b"value-%08d" % n, partition=n % PARTITIONS)
                for n in range(sequence, sequence + ROUND)
            ]
            sequence += ROUND
            for message, outcome in zip(sent, producer.deliver(TOPIC, sent), strict=True):
                if not isinstance(outcome, ClientError):
                    acked[(message.partition, outcome)] = message.value


def check_everything_acknowledged(bootstrap: str, acknowledged: dict[tuple[int, int], bytes]) -> list[int]:
    """Every acknowledged record is readable at its acknowledged offset, and each partition's
    offsets run contiguous from 0 (no gaps, no reuse); returns each partition's end offset."""
    with RawClient(bootstrap) as client:
        ends = [client.list_offset(TOPIC, p, LATEST) for p in range(PARTITIONS)]
    consumed = ConfluentClient(bootstrap).consume(
        TOPIC, dict.fromkeys(range(PARTITIONS), 0), until=dict(enumerate(ends))
    )
    for partition in range(PARTITIONS):
        records = [(c.offset, c.record.value) for c in consumed[partition]]
        assert [offset for offset, _ in records] == list(range(ends[partition])), "offsets must be contiguous"
        stored = dict(records)
        lost = {
            offset: value
            for (acked_partition, offset), value in acknowledged.items()
            if acked_partition == partition and stored.get(offset) != value
        }
        assert not lost, f"acknowledged records lost or changed in partition {partition}: {sorted(lost)[:5]}"
    return ends


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
    ends = check_everything_acknowledged(odradek_broker.bootstrap, acknowledged)
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
    consumed = ConfluentClient(odradek_broker.bootstrap).consume(TOPIC, {0: 0}, until={0: 20})
    assert [c.record.value for c in consumed[0]][::2] == [b"good-%d" % i for i in range(10)]
    with RawClient(odradek_broker.bootstrap) as client:
        assert client.list_offset(TOPIC, 0, LATEST) == 20

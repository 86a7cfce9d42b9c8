"""Topics with names of up to Kafka's 249 characters are deleted for good, through a stock admin
client: the ``-delete`` rename cuts the topic part of the directory name (as Kafka does) so it
stays a legal file name, no directory of the topic is left behind, and re-creating the name
gives an empty topic -- also across a restart, and also when a deletion was interrupted right
after the rename.
"""

from __future__ import annotations

import time
from pathlib import Path

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient
from compat_tests.kit.drivers.records import make_records
from log.deletion import deletion_name

LONGEST = ("a-topic-name-at-kafkas-limit." * 9)[:249]  # Kafka's limit: 249 characters
PARTITIONS = 2
DEADLINE_S = 30


def topic_directories(broker: OdradekProcess, topic: str) -> list[str]:
    """Names of every directory in the data directory that belongs to ``topic``, live or not."""
    prefix = topic[:200]  # also matches deletion names, whose topic part is cut short
    return sorted(p.name for p in broker.data_dir.iterdir() if p.is_dir() and p.name.startswith(prefix))


def latest_offsets(admin: ConfluentAdmin, topic: str) -> dict[int, int]:
    found = admin.list_offsets(topic, range(PARTITIONS), "latest")
    return {partition: offset for partition, (offset, _) in found.items()}


def wait_until_gone(admin: ConfluentAdmin, topic: str) -> None:
    """Kafka deletes topics asynchronously; wait until the metadata no longer lists it."""
    deadline = time.monotonic() + DEADLINE_S
    while topic in admin.list_topics():
        assert time.monotonic() < deadline, f"{topic} is still listed after {DEADLINE_S}s"
        time.sleep(0.1)


def test_the_longest_topic_name_is_deleted_and_comes_back_empty(tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        with ConfluentAdmin(broker.bootstrap) as admin:
            admin.create_topic(LONGEST, PARTITIONS)
            delivered = ConfluentClient(broker.bootstrap).produce(LONGEST, make_records(20))
            assert {d.partition for d in delivered} == set(range(PARTITIONS))
            assert topic_directories(broker, LONGEST) == [f"{LONGEST}-{p}" for p in range(PARTITIONS)]

            admin.delete_topic(LONGEST)
            wait_until_gone(admin, LONGEST)
            assert topic_directories(broker, LONGEST) == [], "neither a live nor a -delete directory"

            admin.create_topic(LONGEST, PARTITIONS)
            assert latest_offsets(admin, LONGEST) == {0: 0, 1: 0}, "the old records must not return"
        broker.restart()
        with ConfluentAdmin(broker.bootstrap) as admin:
            assert latest_offsets(admin, LONGEST) == {0: 0, 1: 0}
    finally:
        broker.stop()


def test_start_up_removes_a_deletion_interrupted_after_the_rename(tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        with ConfluentAdmin(broker.bootstrap) as admin:
            admin.create_topic(LONGEST, PARTITIONS)
        ConfluentClient(broker.bootstrap).produce(LONGEST, make_records(20), partition=0)
        broker.stop()
        # A crash between the rename and the removal of the files leaves this behind.
        leftover = deletion_name(f"{LONGEST}-0")
        assert len(leftover.encode()) <= 255
        (broker.data_dir / f"{LONGEST}-0").rename(broker.data_dir / leftover)

        broker.start()
        assert leftover not in topic_directories(broker, LONGEST)
        with ConfluentAdmin(broker.bootstrap) as admin:
            assert latest_offsets(admin, LONGEST) == {0: 0, 1: 0}, "renamed data is not resurrected"
    finally:
        broker.stop()

"""50,000 partitions on the default ``ulimit -n`` of 1024: they are created, start and serve.

Every segment file used to stay open, so a broker holding more partitions than descriptors
failed every start with EMFILE.  Segment files now live in a bounded LRU of descriptors
(``log.open_files``, half the soft limit by default), so the partition count no longer depends
on ``ulimit -n``.

The data directory is on tmpfs when the machine has one: this test is about descriptors, and on
a journaling disk the 150,000 file creations alone would take minutes.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from broker.client.admin_client import KafkaConnection
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, make_batch
from tests.integration.fast_disk import fast_scratch_dir
from wire.record_batch import decode_records, scan_batches

TOPICS = 5
PARTITIONS_PER_TOPIC = 10_000  # Kafka's (and Odradek's default) most partitions per request
DESCRIPTOR_LIMIT = 1024
SAMPLE_PER_TOPIC = 20
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")
REQUEST_TIMEOUT_S = 300.0

pytestmark = pytest.mark.timeout(600)


@contextmanager
def descriptor_limit(soft: int) -> Iterator[None]:
    """Children started inside inherit a soft RLIMIT_NOFILE of ``soft``."""
    old_soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (old_soft, hard))


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    with fast_scratch_dir(tmp_path) as directory:
        yield directory


def open_segment_files(pid: int) -> int:
    """Descriptors of the process that point at segment files."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue  # closed meanwhile
        count += target.endswith(SEGMENT_SUFFIXES)
    return count


def sample() -> list[tuple[str, int]]:
    """Partitions spread over every topic, first and last included."""
    step = PARTITIONS_PER_TOPIC // SAMPLE_PER_TOPIC
    partitions = [*range(0, PARTITIONS_PER_TOPIC, step), PARTITIONS_PER_TOPIC - 1]
    return [(f"many-{t}", p) for t in range(TOPICS) for p in partitions]


def values_read_back(client: RawClient, topic: str, partition: int) -> list[bytes | None]:
    response = client.fetch_partition(topic, partition, 0)
    assert response["error_code"] == 0, (topic, partition, response)
    data = bytes(response["records"] or b"")
    return [
        record.value
        for batch in scan_batches(data, from_client=False)
        for record in decode_records(data, batch)
    ]


@pytest.mark.slow
def test_fifty_thousand_partitions_are_created_start_and_serve_within_1024_descriptors(
    workdir: Path,
) -> None:
    with descriptor_limit(DESCRIPTOR_LIMIT):
        broker = OdradekProcess(workdir).start()
    try:
        with KafkaConnection(broker.bootstrap, timeout=REQUEST_TIMEOUT_S) as client:
            for t in range(TOPICS):
                result = client.create_topic(f"many-{t}", PARTITIONS_PER_TOPIC)
                assert result["error_code"] == 0, result
        assert open_segment_files(broker.process.pid) <= DESCRIPTOR_LIMIT // 2
        broker.stop()
        with descriptor_limit(DESCRIPTOR_LIMIT):
            broker.start()
        targets = sample()
        with RawClient(broker.bootstrap) as client:
            metadata = client.metadata([f"many-{t}" for t in range(TOPICS)])
            assert [len(t["partitions"]) for t in metadata["topics"]] == [PARTITIONS_PER_TOPIC] * TOPICS
            assert {t["error_code"] for t in metadata["topics"]} == {0}
            for topic, partition in targets:
                produced = client.produce(topic, partition, make_batch([f"{topic}/{partition}".encode()]))
                assert produced["error_code"] == 0, (topic, partition, produced)
            assert open_segment_files(broker.process.pid) <= DESCRIPTOR_LIMIT // 2
            for topic, partition in targets:
                assert values_read_back(client, topic, partition) == [f"{topic}/{partition}".encode()]
            assert open_segment_files(broker.process.pid) <= DESCRIPTOR_LIMIT // 2
        assert "Too many open files" not in broker.log_text()
    finally:
        broker.stop()

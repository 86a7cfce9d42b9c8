"""A really full disk: KAFKA_STORAGE_ERROR while it is full, one ERROR line naming the file and
ENOSPC, and -- once space is freed -- the partition back online without a restart, with every
acknowledged record intact and offsets contiguous.

The broker's data directory is a 4 MiB tmpfs mounted for the test (the sandbox runs tests as
root); where mounting is not permitted the test is skipped and says why.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from broker.client.admin_client import KafkaConnection
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, make_batch
from wire.error_codes import ErrorCode
from wire.record_batch import decode_records, scan_batches

DEADLINE_S = 60
RETRY_MS = 200  # log.offline.retry.ms: the partition is re-probed this often


@contextmanager
def small_file_system(mount_point: Path) -> Iterator[None]:
    """A 4 MiB tmpfs at ``mount_point`` for the duration of the block."""
    mount_point.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


def fill(directory: Path) -> Path:
    """Write a file until the file system is full (down to the last page); return its path."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for chunk in (bytes(64 * 1024), bytes(4096), bytes(1)):
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


def leave_one_page(filler: Path) -> None:
    """Free exactly one page of a file system ``fill`` filled: room for one new small file."""
    os.truncate(filler, filler.stat().st_size - os.sysconf("SC_PAGE_SIZE"))


def stored_values(client: RawClient, topic: str) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record of partition 0, read from offset 0."""
    response = client.fetch_partition(topic, 0, 0)
    assert response["error_code"] == ErrorCode.NONE, response
    records = response["records"]
    return [
        (record.offset, record.value)
        for batch in scan_batches(records, from_client=False)
        for record in decode_records(records, batch)
    ]


def produce_until_accepted(client: RawClient, topic: str, value: bytes) -> dict:
    """Retry a produce (as a client's retries would) until the partition takes it again."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        response = client.produce(topic, 0, make_batch([value]))
        if response["error_code"] != ErrorCode.KAFKA_STORAGE_ERROR or time.monotonic() > deadline:
            return response
        time.sleep(RETRY_MS / 1000 / 2)


def test_a_full_disk_refuses_writes_and_recovers_without_a_restart(tmp_path: Path) -> None:
    workdir = tmp_path / "broker"
    broker = OdradekProcess(workdir, {"log.offline.retry.ms": str(RETRY_MS)})
    with small_file_system(broker.data_dir):
        broker.start()
        try:
            with RawClient(broker.bootstrap) as client:
                client.create_topic("full", 1)
                acknowledged = [b"before-%d" % n for n in range(5)]
                for value in acknowledged:
                    assert client.produce("full", 0, make_batch([value]))["error_code"] == ErrorCode.NONE
                filler = fill(broker.data_dir)
                # Larger than the free part of the segment's last page: it needs new pages.
                big = make_batch([b"x" * (64 * 1024)])
                assert client.produce("full", 0, big)["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
                for _ in range(3):  # refused while offline, without another ERROR line each
                    assert client.produce("full", 0, big)["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
                assert client.metadata(["full"])["topics"][0]["error_code"] == ErrorCode.NONE
                time.sleep(5 * RETRY_MS / 1000)  # several re-probes while the disk is still full
                assert client.fetch_partition("full", 0, 0)["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR

                errors = re.findall(r"^.* ERROR .*full-0.*$", broker.log_text(), re.MULTILINE)
                assert len(errors) == 1, errors
                assert "ENOSPC" in errors[0] and "00000000000000000000.log" in errors[0], errors[0]

                filler.unlink()
                accepted = produce_until_accepted(client, "full", b"after")
                assert accepted["error_code"] == ErrorCode.NONE, accepted
                assert accepted["base_offset"] == len(acknowledged), "offsets stay contiguous"
                expected = list(enumerate([*acknowledged, b"after"]))
                assert stored_values(client, "full") == expected
            assert re.search(r"full-0: back online", broker.log_text())
        finally:
            broker.stop()


def test_a_request_that_fails_on_a_full_disk_is_logged_and_the_broker_keeps_serving(tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker")
    with small_file_system(broker.data_dir):
        broker.start()
        try:
            fill(broker.data_dir)
            with RawClient(broker.bootstrap) as client:
                try:
                    created = KafkaConnection.create_topic(client, "late", 3)
                except ConnectionError:
                    created = {"error_code": "connection closed"}
            assert created["error_code"] != ErrorCode.NONE, created
            errors = re.findall(r"^.* ERROR .*$", broker.log_text(), re.MULTILINE)
            assert any("ENOSPC" in line for line in errors), errors
            with RawClient(broker.bootstrap) as client:
                assert client.metadata()["brokers"], "the broker still answers"
        finally:
            broker.stop()


def test_a_first_append_refused_on_a_full_disk_is_not_stored(tmp_path: Path) -> None:
    """A partition's first append writes two new things: the leader epoch checkpoint and the
    segment's first page.  With room for only one, the answer must match the log: refused and
    absent, so that a retry (a producer without idempotence) is stored exactly once."""
    broker = OdradekProcess(tmp_path / "broker", {"log.offline.retry.ms": str(RETRY_MS)})
    with small_file_system(broker.data_dir):
        broker.start()
        try:
            with RawClient(broker.bootstrap) as client:
                client.create_topic("first", 1)
                filler = fill(broker.data_dir)
                leave_one_page(filler)
                refused = client.produce("first", 0, make_batch([b"once"]))
                assert refused["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR, refused
                filler.unlink()
                accepted = produce_until_accepted(client, "first", b"once")
                assert accepted["error_code"] == ErrorCode.NONE, accepted
                assert accepted["base_offset"] == 0, "the refused append left nothing behind"
                assert stored_values(client, "first") == [(0, b"once")]
        finally:
            broker.stop()

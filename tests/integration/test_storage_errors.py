"""A failing disk under one partition: KAFKA_STORAGE_ERROR for it, business as usual for the rest,
and the partition back online once its files can be reopened and written again.

The broker runs in-process and the failure is injected by swapping the partition's segment
descriptor for a read-only one (``dup2``), which makes every write fail with EBADF even as
root, where permission tricks would not stop writes.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import RawClient, in_thread, make_batch
from log.partition_log import PartitionLog
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch import decode_records, scan_batches

DEADLINE_S = 60


def list_offsets_error(client: RawClient, topic: str, partition: int) -> int:
    """The error code of a ListOffsets (latest) for one partition."""
    response = client.request(
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
        },
    )
    return response["topics"][0]["partitions"][0]["error_code"]


def break_active_segment(partition_log: PartitionLog) -> None:
    """Writes to the active segment fail with EBADF from now on (its descriptor is read-only)."""
    segment = partition_log.segments[-1]
    read_only = os.open(segment.log_path, os.O_RDONLY)
    os.dup2(read_only, segment.fd)
    os.close(read_only)


async def test_one_failing_partition_does_not_take_the_broker_down(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.ms": "50"}) as (broker, port):

            def setup(client: RawClient) -> None:
                client.create_topic("fragile", 2)
                for partition in (0, 1):
                    assert client.produce("fragile", partition, make_batch([b"before"]))["error_code"] == 0

            await in_thread(port, setup)
            broken = broker.partitions.get("fragile", 0)
            break_active_segment(broken)

            def exercise(client: RawClient) -> dict[str, int]:
                return {
                    "produce broken": client.produce("fragile", 0, make_batch([b"lost"]))["error_code"],
                    "produce again": client.produce("fragile", 0, make_batch([b"lost"]))["error_code"],
                    "fetch broken": client.fetch_partition("fragile", 0, 0)["error_code"],
                    "list offsets broken": list_offsets_error(client, "fragile", 0),
                    "produce healthy": client.produce("fragile", 1, make_batch([b"after"]))["error_code"],
                    "fetch healthy": client.fetch_partition("fragile", 1, 0)["error_code"],
                    "metadata": client.metadata(["fragile"])["topics"][0]["error_code"],
                }

            results = await in_thread(port, exercise)
            assert results == {
                "produce broken": ErrorCode.KAFKA_STORAGE_ERROR,
                "produce again": ErrorCode.KAFKA_STORAGE_ERROR,
                "fetch broken": ErrorCode.KAFKA_STORAGE_ERROR,
                "list offsets broken": ErrorCode.KAFKA_STORAGE_ERROR,
                "produce healthy": ErrorCode.NONE,
                "fetch healthy": ErrorCode.NONE,
                "metadata": ErrorCode.NONE,
            }
            healthy = broker.partitions.get("fragile", 1)
            while healthy.recovery_point < 2:  # the periodic flush gets past the broken log
                await trio.sleep(0.05)
            assert not broken.is_online
            assert await in_thread(port, exercise) == results


@contextmanager
def immutable(directory: str) -> Iterator[None]:
    """No file can be created in ``directory``, even by root (``chattr +i``), within the block."""
    made = subprocess.run(["chattr", "+i", directory], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make a directory immutable here: {made.stderr.strip() or made.returncode}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", directory], check=True)


async def test_a_failed_partition_stays_offline_while_its_disk_fails_then_comes_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="broker.services.storage.log_maintenance")
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.offline.retry.ms": "100"}) as (broker, port):

            def produce(value: bytes) -> dict:
                with RawClient(f"127.0.0.1:{port}") as client:
                    return client.produce("flaky", 0, make_batch([value]))

            def setup(client: RawClient) -> None:
                client.create_topic("flaky", 1)
                assert produce(b"before")["error_code"] == ErrorCode.NONE

            await in_thread(port, setup)
            flaky = broker.partitions.get("flaky", 0)
            with immutable(flaky.directory):
                break_active_segment(flaky)
                failed = await trio.to_thread.run_sync(produce, b"lost")
                assert failed["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
                while sum("still offline" in r.getMessage() for r in caplog.records) < 3:
                    await trio.sleep(0.05)  # re-probes that find the directory still unwritable
                assert not flaky.is_online
            while not flaky.is_online:
                await trio.sleep(0.05)

            def check() -> None:
                accepted = produce(b"after")
                assert (accepted["error_code"], accepted["base_offset"]) == (ErrorCode.NONE, 1)
                with RawClient(f"127.0.0.1:{port}") as client:
                    records = client.fetch_partition("flaky", 0, 0)["records"]
                values = [
                    (r.offset, r.value)
                    for b in scan_batches(records, from_client=False)
                    for r in decode_records(records, b)
                ]
                assert values == [(0, b"before"), (1, b"after")]

            await trio.to_thread.run_sync(check)
            offline_errors = [
                r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "log.partition_log"
            ]
            assert len(offline_errors) == 1, "one ERROR when it failed, none per re-probe"
            assert "EBADF" in offline_errors[0].getMessage()

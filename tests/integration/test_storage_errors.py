"""A failing disk under one partition: KAFKA_STORAGE_ERROR for it, business as usual for the rest.

The broker runs in-process and the failure is injected by swapping the partition's segment
descriptor for a read-only one (``dup2``), which makes every write fail with EBADF even as
root, where permission tricks would not stop writes.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio

from tests.broker.test_server import running_broker
from tests.integration.raw_client import RawClient, make_batch
from tests.integration.test_retention import fetch
from wire.error_codes import ErrorCode

DEADLINE_S = 60


def list_offsets_error(client: RawClient, topic: str, partition: int) -> int:
    """The error code of a ListOffsets (latest) for one partition."""
    response = client.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
        },
    )
    return response["topics"][0]["partitions"][0]["error_code"]


async def test_one_failing_partition_does_not_take_the_broker_down(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.ms": "50"}) as (broker, port):

            def setup() -> None:
                with RawClient(f"127.0.0.1:{port}") as client:
                    client.create_topic("fragile", 2)
                    for partition in (0, 1):
                        assert (
                            client.produce("fragile", partition, make_batch([b"before"]))["error_code"] == 0
                        )

            await trio.to_thread.run_sync(setup)
            broken = broker.partitions.get("fragile", 0)
            segment = broken.segments[-1]
            read_only = os.open(segment.log_path, os.O_RDONLY)
            os.dup2(read_only, segment.fd)
            os.close(read_only)

            def exercise() -> dict[str, int]:
                with RawClient(f"127.0.0.1:{port}") as client:
                    return {
                        "produce broken": client.produce("fragile", 0, make_batch([b"lost"]))["error_code"],
                        "produce again": client.produce("fragile", 0, make_batch([b"lost"]))["error_code"],
                        "fetch broken": fetch(client, "fragile", 0, 0)["error_code"],
                        "list offsets broken": list_offsets_error(client, "fragile", 0),
                        "produce healthy": client.produce("fragile", 1, make_batch([b"after"]))["error_code"],
                        "fetch healthy": fetch(client, "fragile", 1, 0)["error_code"],
                        "metadata": client.metadata(["fragile"])["topics"][0]["error_code"],
                    }

            results = await trio.to_thread.run_sync(exercise)
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
            assert await trio.to_thread.run_sync(exercise) == results

"""What an acknowledgement means: written to the OS by default, fsynced with a flush policy.

The broker runs in-process (so the test can count the log's fsyncs); clients are blocking raw
clients in worker threads.  No test asserts on timing: group commit is made deterministic by
holding the first fsync until every producer's first append has landed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import trio

from broker.server import Broker
from log.partition_log import PartitionLog
from tests.broker.test_server import running_broker
from tests.integration.raw_client import RawClient, make_batch
from wire.error_codes import ErrorCode

DEADLINE_S = 60
PRODUCERS = 12
REQUESTS_EACH = 5


async def create_topic(port: int, topic: str) -> None:
    def create() -> None:
        with RawClient(f"127.0.0.1:{port}") as client:
            client.create_topic(topic, 1)

    await trio.to_thread.run_sync(create)


async def produce(port: int, topic: str, requests: int) -> list[int]:
    """Send ``requests`` one-record produce requests (acks=1) in turn; return their error codes."""

    def send() -> list[int]:
        with RawClient(f"127.0.0.1:{port}") as client:
            return [
                client.produce(topic, 0, make_batch([b"v"]), acks=1)["error_code"] for _ in range(requests)
            ]

    return await trio.to_thread.run_sync(send, limiter=trio.CapacityLimiter(1))


def partition_log(broker: Broker, topic: str) -> PartitionLog:
    found = broker.partitions.get(topic, 0)
    assert found is not None
    return found


async def test_fsync_per_message_is_shared_by_concurrent_producers(tmp_path: Path, monkeypatch) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.messages": "1"}) as (broker, port):
            await create_topic(port, "durable")
            log = partition_log(broker, "durable")
            segment_fd = log.segments[-1].fd
            first_round_may_finish = threading.Event()
            real_fsync = os.fsync

            def held_fsync(fd: int) -> None:
                if fd == segment_fd:
                    first_round_may_finish.wait(DEADLINE_S)
                real_fsync(fd)

            monkeypatch.setattr(os, "fsync", held_fsync)
            results: list[list[int]] = []

            async def producer() -> None:
                results.append(await produce(port, "durable", REQUESTS_EACH))

            async with trio.open_nursery() as nursery:
                for _ in range(PRODUCERS):
                    nursery.start_soon(producer)
                while log.log_end_offset < PRODUCERS:  # every producer has one append waiting
                    await trio.sleep(0.01)
                first_round_may_finish.set()
            assert results == [[ErrorCode.NONE] * REQUESTS_EACH] * PRODUCERS
            appends = PRODUCERS * REQUESTS_EACH
            assert log.log_end_offset == appends
            assert log.recovery_point == appends, "every acknowledged record was fsynced"
            assert 1 <= log.fsyncs < appends, f"{log.fsyncs} fsyncs for {appends} acknowledged appends"


async def test_default_acknowledgement_does_not_wait_for_fsync(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (broker, port):
            await create_topic(port, "fast")
            assert await produce(port, "fast", 10) == [ErrorCode.NONE] * 10
            log = partition_log(broker, "fast")
            assert (log.log_end_offset, log.recovery_point, log.fsyncs) == (10, 0, 0)


async def test_flush_interval_ms_fsyncs_in_the_background(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, **{"log.flush.interval.ms": "100"}) as (broker, port):
            await create_topic(port, "periodic")
            assert await produce(port, "periodic", 3) == [ErrorCode.NONE] * 3
            log = partition_log(broker, "periodic")
            while log.recovery_point < 3:  # no client waits: the periodic task does it
                await trio.sleep(0.05)
            assert log.fsyncs >= 1

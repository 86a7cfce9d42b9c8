"""Fetch, ListOffsets and DescribeProducers over a socket against transactional data.

The broker runs in-process so that the test can write transaction markers straight into the
partition log (``PartitionLog.append_marker``, what the transaction coordinator calls); the
requests go over the wire from the blocking test client in a worker thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import trio

from broker.node.server import Broker
from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import RawClient, fetch_body
from log import PartitionLog
from tests.broker.test_server import DEADLINE_S
from tests.log.conftest import BASE_TS, append, produced_batch
from wire.api_keys import ApiKey
from wire.record_batch import scan_batches

TOPIC = "txn"


def batch_offsets(partition: dict[str, Any]) -> list[int]:
    return [b.base_offset for b in scan_batches(partition["records"], from_client=False)]


def transactional(pid: int, seq: int) -> bytearray:
    return produced_batch(count=2, producer_id=pid, producer_epoch=0, base_sequence=seq, transactional=True)


async def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await trio.to_thread.run_sync(partial(function, *args, **kwargs))


@asynccontextmanager
async def topic_on_a_broker(tmp_path: Path) -> AsyncIterator[tuple[Broker, RawClient, PartitionLog]]:
    """A broker with the topic created over the wire, a connected client, the partition's log."""
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (broker, port):
            client = await call(RawClient, f"127.0.0.1:{port}")
            try:
                await call(client.create_topic, TOPIC)
                yield broker, client, broker.partitions.get(TOPIC, 0)
            finally:
                client.close()


async def test_read_committed_fetch_stops_at_the_last_stable_offset(tmp_path: Path) -> None:
    async with topic_on_a_broker(tmp_path) as (_broker, client, log):
        append(log, produced_batch())  # 0
        append(log, transactional(31, 0))  # 1-2, aborted below
        append(log, transactional(32, 0))  # 3-4, left open
        log.append_marker(31, 0, False, 0, BASE_TS)  # 5

        committed = await call(client.fetch_partition, TOPIC, 0, 0, read_committed=True)
        assert batch_offsets(committed) == [0, 1]
        assert (committed["high_watermark"], committed["last_stable_offset"]) == (6, 3)
        assert committed["aborted_transactions"] == [{"producer_id": 31, "first_offset": 1}]
        at_lso = await call(client.fetch_partition, TOPIC, 0, 3, read_committed=True)
        assert (batch_offsets(at_lso), at_lso["aborted_transactions"]) == ([], [])

        uncommitted = await call(client.fetch_partition, TOPIC, 0, 0)
        assert batch_offsets(uncommitted) == [0, 1, 3, 5]
        assert uncommitted["last_stable_offset"] == 3, "reported under read_uncommitted too"
        assert uncommitted["aborted_transactions"] is None

        latest = {}
        for level in (0, 1):
            body = {
                "replica_id": -1,
                "isolation_level": level,
                "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
            }
            response = await call(client.request, ApiKey.LIST_OFFSETS, 7, body)
            latest[level] = response["topics"][0]["partitions"][0]["offset"]
        assert latest == {0: 6, 1: 3}

        body = {"topics": [{"name": TOPIC, "partition_indexes": [0]}]}
        described = await call(client.request, ApiKey.DESCRIBE_PRODUCERS, 0, body)
        producers = described["topics"][0]["partitions"][0]["active_producers"]
        assert {p["producer_id"]: p["current_txn_start_offset"] for p in producers} == {31: -1, 32: 3}


async def test_read_committed_long_poll_waits_for_the_marker(tmp_path: Path) -> None:
    async with topic_on_a_broker(tmp_path) as (broker, client, log):
        append(log, transactional(33, 0))  # 0-1
        body = fetch_body(TOPIC, 0, 0, max_wait_ms=10_000, min_bytes=1) | {"isolation_level": 1}
        answers: list[tuple[float, dict[str, Any]]] = []

        async def fetch() -> None:
            started = trio.current_time()
            response = await call(client.request, ApiKey.FETCH, 12, body)
            answers.append((trio.current_time() - started, response["responses"][0]["partitions"][0]))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetch)
            await trio.sleep(0.3)
            append(log, transactional(33, 2))  # more undecided data: no reason to answer
            broker.appends.notify((TOPIC, 0))
            await trio.sleep(0.3)
            assert not answers
            log.append_marker(33, 0, True, 0, BASE_TS)
            broker.appends.notify((TOPIC, 0))
        [(waited, partition)] = answers
        assert 0.5 < waited < 5
        assert batch_offsets(partition) == [0, 2, 4]
        assert partition["last_stable_offset"] == 5

"""Exact-request helpers for tests: the CLI's blocking client plus record batch builders.

Stock clients hide retries, sequence numbers and epochs; tests of idempotence and error
codes need to send precisely one request and see precisely its answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import trio

from broker.client import admin_client
from broker.client.admin_client import KafkaConnection
from wire.api_keys import ApiKey
from wire.record_batch import Compression, Record, encode_batch

T = TypeVar("T")


class RawClient(KafkaConnection):
    """:class:`KafkaConnection` with the assertions tests want on setup steps."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, client_id="raw-test")

    def join_consumer_group(
        self, group: str, *, topics: list[str] | None = None, regex: str | None = None
    ) -> dict[str, Any]:
        """A KIP-848 ConsumerGroupHeartbeat of a new member ``member-1`` (epoch 0)."""
        body: dict[str, Any] = {
            "group_id": group,
            "member_id": "member-1",
            "member_epoch": 0,
            "rebalance_timeout_ms": 30_000,
            "subscribed_topic_names": topics,
            "subscribed_topic_regex": regex,
            "topic_partitions": [],
        }
        return self.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)

    def create_topic(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> dict[str, Any]:
        result = super().create_topic(name, partitions, configs)
        assert result["error_code"] == 0, result
        return result

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        return self.list_offsets(topic, [partition], timestamp)[partition]

    def fetch_partition(
        self, topic: str, partition: int, offset: int, *, read_committed: bool = False
    ) -> dict[str, Any]:
        """One Fetch (v12, no wait) of one partition; returns the partition's response."""
        body = fetch_body(topic, partition, offset) | {"isolation_level": int(read_committed)}
        response = self.request(ApiKey.FETCH, 12, body)
        return response["responses"][0]["partitions"][0]


def make_batch(
    values: list[bytes],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp: int = 1_700_000_000_000,
    compression: int = Compression.NONE,
    transactional: bool = False,
) -> bytes:
    """A producer-side batch (base offset 0) of ``values`` with keys k0, k1, ..."""
    records = [Record(i, timestamp + i, b"k%d" % i, value) for i, value in enumerate(values)]
    return bytes(
        encode_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            compression=compression,
            transactional=transactional,
        )
    )


def fetch_body(
    topic: str, partition: int, offset: int, max_wait_ms: int = 0, min_bytes: int = 0
) -> dict[str, Any]:
    """A Fetch v12 request body for one partition, up to 1 MiB."""
    return admin_client.fetch_body(topic, {partition: offset}, max_wait_ms, min_bytes)


async def in_thread(
    port: int, work: Callable[[RawClient], T], limiter: trio.CapacityLimiter | None = None
) -> T:
    """``work`` with a client of the in-process broker on ``port``, in a worker thread: the client
    blocks, and the broker's trio loop must keep running to answer it."""

    def run() -> T:
        with RawClient(f"127.0.0.1:{port}") as client:
            return work(client)

    return await trio.to_thread.run_sync(run, limiter=limiter)

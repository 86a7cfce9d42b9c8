"""One request, its one answer: the raw-protocol helper of every test suite.

Stock clients hide retries, sequence numbers and epochs, keep metadata caches and log their
reconnects. The suites ask some questions without them: readiness and leader look-ups, the
producer id and sequence number of the batch a record was written in, exact error codes. All of
it goes through :class:`broker.client.admin_client.KafkaConnection`, the blocking client of the
``odradek`` CLI, which encodes and decodes with the project's generated codecs and speaks to any
Kafka-compatible broker (Apache Kafka included), so there is one way to send one request.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

import trio

from broker.client import admin_client
from broker.client.admin_client import KafkaConnection
from wire.api_keys import ApiKey
from wire.errors import WireError
from wire.record_batch import Compression, Record, encode_batch

T = TypeVar("T")

CLIENT_ID = "raw-test"


def request_frame(api_key: ApiKey, version: int, body: dict[str, Any], correlation_id: int = 1) -> bytes:
    """A whole request as it goes on the wire (size, header, body), for tests that send bytes
    themselves: pipelined, cut short, or never read."""
    return admin_client.request_frame(api_key, version, correlation_id, CLIENT_ID, body)


def ask(address: str, api_key: ApiKey, version: int, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Send one request to the broker at ``address`` (``host:port``) on a connection of its own
    and return the decoded answer.

    Every way of getting no answer is an ``OSError``: a broker down or restarting, and an answer
    that does not decode (a ``ConnectionError``; a broker's reply is input like any other).
    """
    with KafkaConnection(address, timeout, client_id=CLIENT_ID) as connection:
        try:
            return connection.request(api_key, version, body)
        except WireError as exc:
            raise ConnectionError(f"an unreadable {api_key.name} answer from {address}: {exc}") from exc


def addresses_by_id(bootstrap: str, timeout: float = 10.0) -> dict[int, str]:
    """``host:port`` of every broker (by node id) the first answering address of ``bootstrap``
    (comma-separated) lists: one bootstrap address can stand for several brokers (``odradek
    serve --processes``)."""
    for address in bootstrap.split(","):
        try:
            brokers = ask(address, ApiKey.METADATA, 1, {"topics": []}, timeout)["brokers"]
        except OSError:
            continue
        return {b["node_id"]: f"{b['host']}:{b['port']}" for b in brokers}
    return {}


def advertised(bootstrap: str, timeout: float = 10.0) -> list[str]:
    """The addresses of :func:`addresses_by_id`."""
    return list(addresses_by_id(bootstrap, timeout).values())


def metadata_broker_count(host: str, port: int, timeout: float) -> int:
    """How many brokers Metadata (v1, no topics) lists. A broker listing at least one is ready to
    take requests; Kafka only opens its client listener once it has caught up with its metadata log."""
    return len(ask(f"{host}:{port}", ApiKey.METADATA, 1, {"topics": []}, timeout)["brokers"])


def fetch_body(
    topic: str,
    partition: int,
    offset: int,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = admin_client.FETCH_PARTITION_BYTES,
) -> dict[str, Any]:
    """A sessionless Fetch request body for one partition, read_uncommitted, up to ``max_bytes``
    (1 MiB); it serves every version from 4 (which Kafka 4 and Odradek both answer) to 12."""
    body = admin_client.fetch_body(topic, {partition: offset}, max_wait_ms, min_bytes)
    body["max_bytes"] = max_bytes
    body["topics"][0]["partitions"][0]["partition_max_bytes"] = max_bytes
    return body


async def connect(port: int) -> trio.SocketStream:
    """A trio stream to the broker on ``port`` of this machine, for tests that run the broker in
    their own trio loop (:mod:`compat_tests.kit.in_process`) and write frames themselves."""
    return await trio.open_tcp_stream("127.0.0.1", port)


async def receive_exactly(stream: trio.SocketStream, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            raise EOFError(f"connection closed after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


async def receive_frame(stream: trio.SocketStream) -> bytes:
    """The next response on ``stream``: its correlation id, header and body, without the size."""
    (size,) = struct.unpack(">i", await receive_exactly(stream, 4))
    return await receive_exactly(stream, size)


async def closed_by_peer(stream: trio.SocketStream) -> bool:
    """Whether the broker closes ``stream`` within five seconds (reading nothing else from it)."""
    with trio.move_on_after(5):
        try:
            return await stream.receive_some(1) == b""
        except trio.BrokenResourceError:
            return True
    return False


class RawClient(KafkaConnection):
    """:class:`KafkaConnection` with the assertions tests want on setup steps."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, client_id=CLIENT_ID)

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


async def in_thread(
    port: int, work: Callable[[RawClient], T], limiter: trio.CapacityLimiter | None = None
) -> T:
    """``work`` with a client of the in-process broker on ``port``, in a worker thread: the client
    blocks, and the broker's trio loop must keep running to answer it."""

    def run() -> T:
        with RawClient(f"127.0.0.1:{port}") as client:
            return work(client)

    return await trio.to_thread.run_sync(run, limiter=limiter)

"""Many producer connections at once, each a raw socket: ApiVersions, then one small Produce.

Why raw sockets on trio rather than client libraries: a librdkafka producer is a handful of
threads and megabytes of buffers, so 2,000 of them would measure the client machine, not the
broker. One trio task per connection costs a few kilobytes, and does exactly what a producer
does first on a new connection (ApiVersions, then a Produce), on the project's own codecs.

Every connection stays open until all of them have been answered, so the broker holds them
all at once while the caller reads its resident set and descriptors (``hold``).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from broker.client.admin_client import MAX_RESPONSE_BYTES, produce_body
from wire.api_keys import ApiKey
from wire.codec import decode_response, encode_request
from wire.header import decode_response_header, encode_request_header, response_header_version
from wire.record_batch import Record, encode_batch

PRODUCE_VERSION = 9
API_VERSIONS_VERSION = 3
# Connections being opened at once: a listener's accept backlog (Kafka's default is 50) drops
# SYNs beyond it, and the kernel retries them only after a second; more would measure that.
OPENING_AT_ONCE = 32


@dataclass(frozen=True)
class ConnectionsResult:
    """How long opening ``count`` connections and one acknowledged Produce on each took."""

    count: int
    seconds: float


class _Connection:
    """One framed Kafka connection on a trio stream, requests answered in order."""

    def __init__(self, stream: trio.SocketStream, client_id: str) -> None:
        self.stream = stream
        self.client_id = client_id
        self.correlation = 0
        self.buffer = bytearray()

    async def _read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation += 1
        payload = encode_request_header(api_key, version, self.correlation, self.client_id)
        payload += encode_request(api_key, version, body)
        await self.stream.send_all(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", await self._read_exactly(4))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise ConnectionError(f"the broker announced a {size}-byte response")
        response = await self._read_exactly(size)
        received, offset = decode_response_header(response, 0, response_header_version(api_key, version))
        if received != self.correlation:
            raise ConnectionError(f"response {received} does not answer request {self.correlation}")
        return decode_response(api_key, version, response, offset)


def _produce_errors(response: dict[str, Any]) -> list[int]:
    return [
        p["error_code"] for t in response["responses"] for p in t["partition_responses"] if p["error_code"]
    ]


async def _one_producer(
    host: str,
    port: int,
    target: tuple[str, int],
    opening: trio.CapacityLimiter,
    answered: Callable[[], None],
    release: trio.Event,
) -> None:
    async with opening:
        stream = await trio.open_tcp_stream(host, port)
    async with stream:
        connection = _Connection(stream, f"bench-producer-{id(stream)}")
        await connection.request(
            ApiKey.API_VERSIONS,
            API_VERSIONS_VERSION,
            {"client_software_name": "odradek-bench", "client_software_version": "1"},
        )
        topic, partition = target
        batch = bytes(encode_batch([Record(0, int(time.time() * 1000), None, b"hello")]))
        response = await connection.request(
            ApiKey.PRODUCE, PRODUCE_VERSION, produce_body(topic, {partition: batch}, acks=1)
        )
        if errors := _produce_errors(response):
            raise RuntimeError(f"produce to {topic}-{partition} failed with error {errors[0]}")
        answered()
        await release.wait()


async def _many_producers(
    bootstrap: str, targets: Sequence[tuple[str, int]], count: int, timeout_s: float, hold: Callable[[], None]
) -> ConnectionsResult:
    host, _, port = bootstrap.rpartition(":")
    opening = trio.CapacityLimiter(OPENING_AT_ONCE)
    all_answered, release = trio.Event(), trio.Event()
    done = 0

    def answered() -> None:
        nonlocal done
        done += 1
        if done == count:
            all_answered.set()

    start = time.monotonic()
    with trio.fail_after(timeout_s):
        async with trio.open_nursery() as nursery:
            for n in range(count):
                nursery.start_soon(
                    _one_producer, host, int(port), targets[n % len(targets)], opening, answered, release
                )
            await all_answered.wait()
            seconds = time.monotonic() - start
            await trio.to_thread.run_sync(hold)
            release.set()
    return ConnectionsResult(count, seconds)


def many_producers(
    bootstrap: str, targets: Sequence[tuple[str, int]], count: int, timeout_s: float, hold: Callable[[], None]
) -> ConnectionsResult:
    """Open ``count`` connections (spread over ``targets`` partitions), each sending ApiVersions
    and one acks=1 Produce of one record; once every one is answered, call ``hold`` (in a
    thread) while all are still open, then close them. Any error or a timeout raises."""
    return trio.run(_many_producers, bootstrap, targets, count, timeout_s, hold)

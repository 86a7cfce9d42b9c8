"""A Kafka client connection from one broker to another over trio, on the project's codecs.

Followers fetch from leaders with plain Kafka requests (Kafka's ``BlockingSend`` of the
ReplicaFetcherThread): one request at a time, answered in order. The peer is another broker
but still a network input: a response's announced size is bounded before anything is
allocated for it, and a wrong correlation id or undecodable body drops the connection.
"""

from __future__ import annotations

import itertools
from typing import Any

import trio

from broker.client.admin_client import decode_answer, request_frame, response_size
from wire.errors import WireError


class PeerConnection:
    """One open connection to a broker; ``request`` sends a body and returns its response."""

    def __init__(
        self, stream: trio.SocketStream, client_id: str, max_response_bytes: int, timeout_s: float
    ) -> None:
        self._stream = stream
        self._client_id = client_id
        self._max_response_bytes = max_response_bytes
        self._timeout_s = timeout_s
        self._correlation = itertools.count(1)

    @classmethod
    async def open(
        cls, host: str, port: int, client_id: str, max_response_bytes: int, timeout_s: float
    ) -> PeerConnection:
        """Connect to ``host:port``; every request on it must be answered within ``timeout_s``
        (Kafka's ``replica.socket.timeout.ms``), connecting included."""
        with trio.fail_after(timeout_s):
            stream = await trio.open_tcp_stream(host, port)
        return cls(stream, client_id, max_response_bytes, timeout_s)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its decoded response; ``ConnectionError`` (or trio's
        stream errors) when the peer hangs up, does not answer in time or answers with
        something malformed."""
        correlation_id = next(self._correlation)
        try:
            # A cancel scope, not trio.fail_after: fail_after wraps the same scope in a generator
            # context manager, which cost a follower fetch a few percent of its CPU.
            with trio.move_on_after(self._timeout_s) as deadline:
                await self._stream.send_all(
                    request_frame(api_key, version, correlation_id, self._client_id, body)
                )
                size = response_size(await self._receive(4), self._max_response_bytes)
                response = await self._receive(size)
            if deadline.cancelled_caught:
                raise ConnectionError(f"no answer from the peer broker within {self._timeout_s} s")
            return decode_answer(api_key, version, correlation_id, response)
        except WireError as exc:
            raise ConnectionError(f"undecodable response from a peer broker: {exc}") from exc

    async def _receive(self, size: int) -> bytearray:
        data = bytearray(size)
        view = memoryview(data)
        received = 0
        while received < size:
            chunk = await self._stream.receive_some(size - received)
            if not chunk:
                raise ConnectionError("the peer broker closed the connection")
            view[received : received + len(chunk)] = chunk
            received += len(chunk)
        return data

"""Raw Kafka requests over a plain socket, and a bounds-checked reader for their answers.

The suite asks some questions without a client library: readiness and leader look-ups (no
reconnect logging or metadata caches in the way), and what the libraries do not show, such as
the producer id and sequence number of the batch a record was written in.
"""

from __future__ import annotations

import socket
import struct

from wire.api_keys import ApiKey

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Bound on a raw answer read by the suite: a broker's reply is input like any other."""


def request_frame(api_key: ApiKey, version: int, body: bytes, correlation_id: int = 1) -> bytes:
    """A whole request as it goes on the wire: size, a v1 header (non-flexible versions), body."""
    client_id = b"compat-raw"
    request = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + body
    return struct.pack(">i", len(request)) + request


def fetch_v4_body(topic: str, partition: int, offset: int, max_bytes: int, max_wait_ms: int = 0) -> bytes:
    """A Fetch v4 request body for one partition, read_uncommitted, ``min_bytes`` 0."""
    name = topic.encode()
    return (
        struct.pack(">iiiib", -1, max_wait_ms, 0, max_bytes, 0)
        + struct.pack(">ih", 1, len(name))
        + name
        + struct.pack(">iiqi", 1, partition, offset, max_bytes)
    )


def raw_response(host: str, port: int, api_key: ApiKey, version: int, body: bytes, timeout: float) -> bytes:
    """Send one request (a v1 header, then ``body``) over a raw socket and return the response
    after its correlation id.

    A raw request keeps readiness, leader look-ups and batch inspection independent of any client
    library (and of their reconnect logging and metadata caches, and of what they hide, such as
    a batch's producer id).
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request_frame(api_key, version, body))
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise ConnectionError(f"{api_key.name} response of {size} bytes")
        response = _recv_exact(sock, size)
    (correlation_id,) = struct.unpack_from(">i", response)
    if correlation_id != 1:
        raise ConnectionError(f"{api_key.name} response with correlation id {correlation_id}")
    return response[4:]


def metadata_response(host: str, port: int, topics: list[str] | None, timeout: float) -> bytes:
    """Metadata v1 for ``topics`` (None asks for none at all), by :func:`raw_response`."""
    names = topics or []
    body = struct.pack(">i", len(names))
    for name in names:
        encoded = name.encode()
        body += struct.pack(">h", len(encoded)) + encoded
    return raw_response(host, port, ApiKey.METADATA, 1, body, timeout)


def metadata_broker_count(host: str, port: int, timeout: float) -> int:
    """How many brokers Metadata lists. A broker listing at least one is ready to take requests;
    Kafka only opens its client listener once it has caught up with its metadata log."""
    (brokers,) = struct.unpack_from(">i", metadata_response(host, port, None, timeout))
    return brokers


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed before the response was complete")
        data += chunk
    return bytes(data)


class ResponseReader:
    """Reads a Kafka response body, failing on anything past its end (a hostile answer)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        """A nullable string (int16 length)."""
        data = self._sized(">h")
        return None if data is None else data.decode(errors="replace")

    def count(self) -> int:
        """An array length, bounded by what the remaining bytes could hold."""
        n = self.take(">i")
        if n > len(self.data) - self.pos:
            raise struct.error(f"array of {n} elements in {len(self.data) - self.pos} bytes")
        return max(n, 0)

    def int32s(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(self.count()))

    def blob(self) -> bytes | None:
        """A nullable bytes field (int32 length)."""
        return self._sized(">i")

    def _sized(self, length_format: str) -> bytes | None:
        length = self.take(length_format)
        if length < 0:
            return None
        data = self.data[self.pos : self.pos + length]
        if len(data) != length:
            raise struct.error("a field past the end of the response")
        self.pos += length
        return data

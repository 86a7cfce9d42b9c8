"""A minimal blocking Kafka client built on the project's own codecs, for exact-byte tests.

Stock clients hide retries, sequence numbers and epochs; tests of idempotence and error
codes need to send precisely one request and see precisely its answer.
"""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

from wire.codec import decode_response, encode_request
from wire.header import encode_request_header, response_header_version
from wire.record_batch import Compression, Record, encode_batch


class RawClient:
    """One connection to a broker; ``request`` sends a body and returns the decoded response."""

    def __init__(self, bootstrap: str, timeout: float = 15.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = itertools.count(1)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _receive(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return bytes(data)

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        correlation_id = next(self._correlation)
        payload = encode_request_header(api_key, version, correlation_id, "raw-test") + encode_request(
            api_key, version, body
        )
        self._sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._receive(4))
        response = self._receive(size)
        assert struct.unpack_from(">i", response)[0] == correlation_id
        header_size = 4 if response_header_version(api_key, version) == 0 else 5
        return decode_response(api_key, version, response, header_size)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        response = self.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ],
                "timeout_ms": 10_000,
            },
        )
        assert response["topics"][0]["error_code"] == 0, response

    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1) -> dict[str, Any]:
        """Produce one batch (v9); returns the partition's response."""
        response = self.request(
            0,
            9,
            {
                "transactional_id": None,
                "acks": acks,
                "timeout_ms": 10_000,
                "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
            },
        )
        return response["responses"][0]["partition_responses"][0]

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        response = self.request(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}
                ],
            },
        )
        return response["topics"][0]["partitions"][0]["offset"]


def make_batch(
    values: list[bytes],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp: int = 1_700_000_000_000,
    compression: int = Compression.NONE,
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
        )
    )

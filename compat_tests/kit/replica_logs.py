"""The record batches each replica of a partition holds, with the leader epochs stamped on them.

No client library shows a batch's partition leader epoch, and a consumer reads only from the
leader (or the one follower its leader prefers), so the history checker's epoch checks
(:mod:`compat_tests.kit.history`) read the batch headers with raw Fetch requests of their own,
one to each replica: a consumer's Fetch v11 or later may be served by any replica, up to that
replica's high watermark (KIP-392), on Apache Kafka and on Odradek alike.
"""

from __future__ import annotations

from compat_tests.kit.history import Batch
from compat_tests.kit.raw_protocol import ask, fetch_body
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch import CorruptRecordError, read_batch_header

FETCH_VERSION = 11
"""The first version a follower serves to a consumer (KIP-392)."""
FETCH_TIMEOUT_S = 10.0


def replica_batches(address: str, topic: str, partition: int) -> list[Batch]:
    """Every batch of ``topic``-``partition`` that the replica at ``address`` (its client
    listener) serves, from offset 0 up to its high watermark. Raises AssertionError while the
    replica refuses (a broker still loading, or not a replica yet), for a caller that waits."""
    batches: list[Batch] = []
    offset = 0
    while True:
        body = fetch_body(topic, partition, offset)
        response = ask(address, ApiKey.FETCH, FETCH_VERSION, body, FETCH_TIMEOUT_S)
        (answer,) = [p for t in response["responses"] for p in t["partitions"]]
        error = ErrorCode(answer["error_code"])
        assert error is ErrorCode.NONE, f"{address} answers {error.name} for {topic}-{partition} at {offset}"
        found = _batches_in(partition, bytes(answer["records"] or b""))
        batches += found
        if not found or found[-1].last_offset + 1 >= answer["high_watermark"]:
            return batches
        offset = found[-1].last_offset + 1


def _batches_in(partition: int, records: bytes) -> list[Batch]:
    """The whole batches of a Fetch answer's records (the last may be cut short by the size limit)."""
    batches = []
    position = 0
    while position < len(records):
        try:
            header = read_batch_header(records, position)
        except CorruptRecordError:
            break  # cut short
        batches.append(
            Batch(
                partition, header.base_offset, header.last_offset, header.partition_leader_epoch, header.crc
            )
        )
        position += header.size
    return batches

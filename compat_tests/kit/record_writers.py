"""Which producer id, epoch and sequence number a broker wrote a record under.

A record found at two offsets is the broker's failure only if both copies carry one producer
id, epoch and sequence number: that is all an idempotent broker deduplicates by. A client that
sends the same value again as a new record (a new epoch, or sequence numbers started again)
writes it twice by design, and no client library shows a consumer those fields, so the checker
reads them from the batch headers of a raw Fetch (v4, which Kafka 4 and Odradek both serve).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from compat_tests.kit.history import Writer
from compat_tests.kit.raw_protocol import advertised, ask, fetch_body
from wire.api_keys import ApiKey

FETCH_VERSION = 4
FETCH_MAX_BYTES = 1 << 20
FETCH_TIMEOUT_S = 10.0
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
"""A v2 record batch's header: base offset, length, partition leader epoch, magic, crc,
attributes, last offset delta, base and max timestamps, producer id, producer epoch, base
sequence, record count."""
NO_SEQUENCE = -1


def writers_at(
    bootstrap: str, topic: str, places: Iterable[tuple[int, int]]
) -> dict[tuple[int, int], Writer]:
    """The writer of the record at each (partition, offset) of ``places``, asked of each broker
    of ``bootstrap`` (comma-separated) and each it advertises until one answers (the partition's
    leader; the others refuse with NOT_LEADER_OR_FOLLOWER, a stopped one does not answer); places
    no broker names are left out, and the checker counts their copies as duplicated.  (A bootstrap
    address can stand for several brokers: ``odradek serve --processes`` shares one port.)"""
    addresses = advertised(bootstrap) + bootstrap.split(",")
    found: dict[tuple[int, int], Writer] = {}
    for partition, offset in places:
        for address in addresses:
            try:
                writer = _writer(address, topic, partition, offset)
            except OSError:
                continue  # down, or an answer cut short: another broker may lead it
            if writer is not None:
                found[(partition, offset)] = writer
                break
    return found


def _writer(address: str, topic: str, partition: int, offset: int) -> Writer | None:
    body = fetch_body(topic, partition, offset, max_bytes=FETCH_MAX_BYTES)
    response = ask(address, ApiKey.FETCH, FETCH_VERSION, body, FETCH_TIMEOUT_S)
    for answer in response["responses"]:
        for found in answer["partitions"]:
            records = found["records"]
            if found["partition_index"] == partition and found["error_code"] == 0 and records:
                return _writer_in(bytes(records), offset)
    return None


def _writer_in(records: bytes, offset: int) -> Writer | None:
    """The writer of ``offset`` from the batches of a Fetch answer (the last may be cut short)."""
    position = 0
    while position + BATCH_HEADER.size <= len(records):
        base, length, _, magic, _, _, last_delta, _, _, producer_id, epoch, base_sequence, _ = (
            BATCH_HEADER.unpack_from(records, position)
        )
        if length < BATCH_HEADER.size - 12:
            return None  # not a batch: a broker's answer is input like any other
        if magic == 2 and base <= offset <= base + last_delta:
            sequence = NO_SEQUENCE if base_sequence == NO_SEQUENCE else base_sequence + offset - base
            return Writer(producer_id, epoch, sequence)
        position += 12 + length
    return None

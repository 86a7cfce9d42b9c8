"""A request's arrays hold at most ``MAX_REQUEST_ELEMENTS`` elements in all.

Found while writing the live fuzzer's huge-count cases: array counts were bounded only by
the bytes left, and a few bytes per element decode to a few hundred, so a 10 MB Fetch of
empty topics decoded to 412 MB in 6.4 s of the event loop (a 100 MB frame: over 4 GB and a
minute).
"""

from __future__ import annotations

import struct

import pytest

from wire import codec
from wire.api_keys import ApiKey
from wire.codegen import MAX_REQUEST_ELEMENTS
from wire.errors import DecodeError


def _delete_groups_v0(names: int) -> bytes:
    """DeleteGroups v0: an int32 count and that many empty (2-byte) group names."""
    return struct.pack(">i", names) + b"\x00\x00" * names


def _fetch_v4(partitions_per_topic: list[int]) -> bytes:
    """Fetch v4 with one topic per entry, holding that many partitions each."""
    body = bytearray(struct.pack(">iiiib", -1, 0, 0, 0, 0) + struct.pack(">i", len(partitions_per_topic)))
    for partitions in partitions_per_topic:
        body += b"\x00\x01t" + struct.pack(">i", partitions)
        body += struct.pack(">iqi", 0, 0, 1024) * partitions
    return bytes(body)


def test_one_array_past_the_limit_is_refused() -> None:
    with pytest.raises(DecodeError, match="more array elements than a request may hold"):
        codec.decode_request(ApiKey.DELETE_GROUPS, 0, _delete_groups_v0(MAX_REQUEST_ELEMENTS + 1))


def test_the_limit_itself_decodes() -> None:
    names = codec.decode_request(ApiKey.DELETE_GROUPS, 0, _delete_groups_v0(MAX_REQUEST_ELEMENTS))[
        "groups_names"
    ]
    assert len(names) == MAX_REQUEST_ELEMENTS


def test_nested_arrays_count_together() -> None:
    body = _fetch_v4([3, 3])  # 2 topics + 6 partitions
    assert len(codec.decode_request(ApiKey.FETCH, 4, body, max_elements=8)["topics"]) == 2
    with pytest.raises(DecodeError):
        codec.decode_request(ApiKey.FETCH, 4, body, max_elements=7)


def test_every_partition_of_a_full_broker_fits() -> None:
    """100,000 partitions (max.partitions.per.broker) in 10,000 topics, in one Fetch."""
    topics = codec.decode_request(ApiKey.FETCH, 4, _fetch_v4([10] * 10_000))["topics"]
    assert sum(len(topic["partitions"]) for topic in topics) == 100_000

"""Transaction markers: the exact batch Kafka writes, and reading its type back."""

from __future__ import annotations

import struct

import pytest

from wire.control_batch import ControlType, EndTxnMarker, encode_end_txn_marker, read_end_txn_marker
from wire.record_batch import InvalidRecordError, Record, decode_records, encode_batch, scan_batches


@pytest.mark.parametrize("commit", [True, False])
def test_marker_batch_has_kafkas_header_and_record(commit: bool) -> None:
    marker = EndTxnMarker(ControlType.COMMIT if commit else ControlType.ABORT, 3)
    data = encode_end_txn_marker(
        marker,
        producer_id=4242,
        producer_epoch=7,
        timestamp=1_700_000_000_000,
        base_offset=100,
        partition_leader_epoch=5,
    )
    [batch] = scan_batches(data, from_client=False)  # the CRC is right
    assert batch.attributes == 0x30, "control and transactional bits, no codec, CreateTime"
    assert (batch.base_offset, batch.last_offset_delta, batch.record_count) == (100, 0, 1)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 7, -1)
    assert batch.partition_leader_epoch == 5
    [record] = decode_records(data, batch)
    assert record.offset == 100 and record.timestamp == 1_700_000_000_000
    assert record.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert record.value == struct.pack(">hi", 0, 3)
    assert read_end_txn_marker(data, batch) == marker
    assert read_end_txn_marker(data, batch).is_commit is commit


def test_clients_may_not_write_markers() -> None:
    data = encode_end_txn_marker(
        EndTxnMarker(ControlType.COMMIT, 0), producer_id=1, producer_epoch=0, timestamp=0
    )
    with pytest.raises(InvalidRecordError, match="control batches"):
        scan_batches(data)


def control_batch(key: bytes | None, value: bytes | None, records: int = 1) -> bytearray:
    return encode_batch(
        [Record(0, 0, key, value)][:records],
        control=True,
        transactional=True,
        producer_id=1,
        producer_epoch=0,
    )


def test_other_and_emptied_control_batches_are_no_markers() -> None:
    leader_change = control_batch(struct.pack(">hh", 0, 2), b"\x00\x00")
    assert read_end_txn_marker(leader_change, scan_batches(leader_change, from_client=False)[0]) is None
    emptied = control_batch(None, None, records=0)
    assert read_end_txn_marker(emptied, scan_batches(emptied, from_client=False)[0]) is None


def test_later_marker_versions_read_as_version_0() -> None:
    data = control_batch(struct.pack(">hh", 1, 0) + b"extra", struct.pack(">hi", 1, 9) + b"more")
    assert read_end_txn_marker(data, scan_batches(data, from_client=False)[0]) == EndTxnMarker(
        ControlType.ABORT, 9
    )


@pytest.mark.parametrize("key, value", [(b"\x00", b"\x00" * 6), (struct.pack(">hh", 0, 1), b"\x00")])
def test_malformed_markers_are_invalid(key: bytes, value: bytes) -> None:
    data = control_batch(key, value)
    with pytest.raises(InvalidRecordError):
        read_end_txn_marker(data, scan_batches(data, from_client=False)[0])
    plain = encode_batch([Record(0, 0, b"k", b"v")])
    with pytest.raises(InvalidRecordError, match="not a control batch"):
        read_end_txn_marker(plain, scan_batches(plain)[0])

"""Transaction markers: the control batches that end a transaction in a partition.

When a transaction commits or aborts, its coordinator has a marker written into every
partition the transaction touched, as Kafka's ``EndTransactionMarker``.  A marker is an
ordinary v2 batch with the control (0x20) and transactional (0x10) attribute bits, the
producer's id and epoch, base sequence -1 (markers are not part of the producer's sequence),
and exactly one record:

    key   = version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
    value = version int16 (0) | coordinator_epoch int32

Consumers never see the record: under read_committed they use the marker to stop skipping an
aborted producer, and every client skips control batches when handing out records.  The broker
reads a marker's record only where the header is not enough: rebuilding producer state and the
aborted-transaction index after a crash, never on the produce or fetch path.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

from wire.record_batch import BatchInfo, InvalidRecordError, Record, decode_records, encode_batch

__all__ = ["ControlType", "EndTxnMarker", "encode_end_txn_marker", "read_end_txn_marker"]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")
_MARKER_VERSION = 0


class ControlType(IntEnum):
    """Kafka's ControlRecordType values that end a transaction (others exist for KRaft)."""

    ABORT = 0
    COMMIT = 1


class EndTxnMarker(NamedTuple):
    """What a marker says: how the transaction ended and which coordinator epoch wrote it."""

    control_type: ControlType
    coordinator_epoch: int

    @property
    def is_commit(self) -> bool:
        return self.control_type == ControlType.COMMIT


def encode_end_txn_marker(
    marker: EndTxnMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytearray:
    """One complete marker batch (CRC included), as Kafka's coordinator has it written."""
    record = Record(
        base_offset,
        timestamp,
        _KEY.pack(_MARKER_VERSION, marker.control_type),
        _VALUE.pack(_MARKER_VERSION, marker.coordinator_epoch),
    )
    return encode_batch(
        [record],
        base_offset=base_offset,
        transactional=True,
        control=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        partition_leader_epoch=partition_leader_epoch,
    )


def read_end_txn_marker(buf: memoryview | bytes | bytearray, batch: BatchInfo) -> EndTxnMarker | None:
    """The marker of the control batch at ``batch.position`` in ``buf``; None when the batch
    holds no record (compaction emptied it) or another kind of control record.

    Like Kafka's reader, a key or value version above 0 is read as version 0: later versions
    may only append fields.
    """
    if not batch.is_control:
        raise InvalidRecordError(f"the batch at offset {batch.base_offset} is not a control batch")
    records = decode_records(buf, batch)
    if not records:
        return None
    key, value = records[0].key, records[0].value
    if key is None or len(key) < _KEY.size:
        raise InvalidRecordError(f"control record at offset {records[0].offset} has no valid key")
    _, raw_type = _KEY.unpack_from(key)
    if raw_type not in (ControlType.ABORT, ControlType.COMMIT):
        return None
    if value is None or len(value) < _VALUE.size:
        raise InvalidRecordError(f"transaction marker at offset {records[0].offset} has no valid value")
    _, coordinator_epoch = _VALUE.unpack_from(value)
    return EndTxnMarker(ControlType(raw_type), coordinator_epoch)

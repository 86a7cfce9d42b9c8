"""The values a share-partition speaks in: record states, acknowledge types, ranges, limits.

The numbers are Kafka's wire numbers: a record state is what WriteShareGroupState and
ReadShareGroupState carry as ``DeliveryState`` ("0:Available,2:Acked,4:Archived"; 1 is the
in-memory Acquired, never persisted), an acknowledge type is what ShareFetch and
ShareAcknowledge carry in ``AcknowledgeTypes`` ("0:Gap,1:Accept,2:Release,3:Reject,4:Renew").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from wire.error_codes import ErrorCode


class RecordState(IntEnum):
    """Kafka's ``RecordState``: where one in-flight record is in its delivery.

    AVAILABLE records may be acquired; an ACQUIRED record is locked to one member until it is
    acknowledged, released or its lock expires; ACKNOWLEDGED and ARCHIVED are terminal, and a
    terminal prefix is what lets the share-partition start offset move on.  (Kafka 4.3 also
    declares ARCHIVING = 3 for KIP-1191, unused by its SharePartition.)
    """

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self is RecordState.ACKNOWLEDGED or self is RecordState.ARCHIVED


class AcknowledgeType(IntEnum):
    """The acknowledge types of ShareFetch/ShareAcknowledge (KIP-932; RENEW is KIP-1222).

    GAP marks an offset the client found no record at (compaction, transaction markers), and
    Kafka archives it exactly as a REJECT.
    """

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One ``AcquiredRecords`` entry of a ShareFetch response: offsets now locked to a member."""

    first_offset: int
    last_offset: int
    delivery_count: int

    @property
    def count(self) -> int:
        """How many offsets the range holds."""
        return self.last_offset - self.first_offset + 1


@dataclass(frozen=True, slots=True)
class StateBatch:
    """One ``StateBatch`` of WriteShareGroupState/ReadShareGroupState."""

    first_offset: int
    last_offset: int
    delivery_state: RecordState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """One ``AcknowledgementBatch`` as a client sent it, unchecked.

    ``acknowledge_types`` holds either one type for every offset of the range or one type per
    offset; anything else is refused by :meth:`SharePartition.acknowledge`.
    """

    first_offset: int
    last_offset: int
    acknowledge_types: Sequence[int]


@dataclass(frozen=True, slots=True)
class InFlightRange:
    """A range of in-flight records sharing one state (what :meth:`SharePartition.in_flight` shows)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str
    lock_deadline_ms: int | None


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """The per-group limits of one share-partition, with Kafka 4.3's defaults.

    Each is a broker default that a group config may override (Kafka's GroupConfig, clamped to
    the broker's min/max): ``group.share.partition.max.record.locks`` /
    ``share.partition.max.record.locks`` (2000), ``group.share.delivery.count.limit`` /
    ``share.delivery.count.limit`` (5, at least 2), ``group.share.record.lock.duration.ms`` /
    ``share.record.lock.duration.ms`` (30 s) and ``share.renew.acknowledge.enable`` (true).
    Group configs are dynamic, so the owner of a :class:`SharePartition` may replace its
    ``config`` between operations, as Kafka reads them on every use.
    """

    max_in_flight_records: int = 2000
    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30_000
    renew_acknowledge_enabled: bool = True

    def __post_init__(self) -> None:
        if self.max_in_flight_records < 1:
            raise ValueError(f"max_in_flight_records must be at least 1: {self.max_in_flight_records}")
        if self.delivery_count_limit < 2:
            raise ValueError(f"delivery_count_limit must be at least 2: {self.delivery_count_limit}")
        if self.record_lock_duration_ms < 1:
            raise ValueError(f"record_lock_duration_ms must be positive: {self.record_lock_duration_ms}")


class ShareStateError(Exception):
    """An operation refused with the error code Kafka answers for it (nothing was changed)."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code

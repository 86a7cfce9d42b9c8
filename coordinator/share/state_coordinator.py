"""The share coordinator: every share-partition's persisted state, on ``__share_group_state``.

Kafka's ``ShareCoordinatorShard`` without the I/O.  A share-partition's leader keeps the
in-flight records in memory (``share_partition.py``) and persists, after each change, the
start offset and the state batches that changed; this coordinator folds them into the state
it holds (``overlay_state_batches``) and writes it to its internal topic, keyed by (group,
topic id, partition), so that a new leader, or the same one after a restart, reads back
exactly what was acknowledged, released and archived.

Every write is stored as a ShareSnapshot record holding the whole state: the state is small
(bounded by ``group.share.partition.max.record.locks`` in flight, held as ranges) and the topic
is compacted by key, so a snapshot per write keeps replay to one record per share-partition
without Kafka's snapshot-every-N-updates scheme.  ShareUpdate records (Kafka's) are still
read and folded in when replayed.

The epochs are Kafka's fences: a write or initialisation with an older *state epoch* than the
stored one is FENCED_STATE_EPOCH (the group's offsets were reset or deleted since), and a write
or read with an older *leader epoch* is FENCED_LEADER_EPOCH (a deposed partition leader).
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from coordinator.coordinator import CoordinatorStorage, StoredMarker, StoredRecord
from coordinator.partitioned import PartitionedCoordinator
from coordinator.share.model import RecordState, StateBatch
from coordinator.share.persistence import overlay_state_batches
from log.clock import Clock
from log.errors import KafkaStorageError, LogError
from wire import stored_records
from wire.error_codes import ErrorCode
from wire.errors import DecodeError
from wire.internal_records.share_group_state import (
    SHARE_SNAPSHOT_KEY,
    SHARE_SNAPSHOT_VALUE,
    SHARE_UPDATE_KEY,
    SHARE_UPDATE_VALUE,
)
from wire.primitives import INT32_MAX

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"
SNAPSHOT_VERSION = 0
UNINITIALIZED = -1
"""The start offset of a share-partition with no state (ReadShareGroupState's answer)."""

ShareKey = tuple[str, bytes, int]
"""(group id, topic id, partition)."""


@dataclass(slots=True)
class ShareState:
    """What the coordinator holds of one share-partition."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: list[StateBatch] = field(default_factory=list)
    snapshot_epoch: int = 0
    create_timestamp_ms: int = 0

    def delivery_complete_count(self) -> int:
        """Records past the start offset that are done (KIP-1226's lag needs it), at most
        int32's maximum (the field's type)."""
        done = sum(
            b.last_offset - b.first_offset + 1
            for b in self.batches
            if b.delivery_state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        )
        return min(done, INT32_MAX)


class ShareSummary(NamedTuple):
    """ReadShareGroupStateSummary's answer: where a share-partition stands, without its batches."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int


class ShareStateError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def coordinator_key(key: ShareKey) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``: ``group:topicId:partition``, with the topic
    id as Kafka prints a Uuid (URL-safe base64, unpadded); its hash picks the partition."""
    group_id, topic_id, partition = key
    return f"{group_id}:{base64.urlsafe_b64encode(topic_id).rstrip(b'=').decode()}:{partition}"


class ShareCoordinator(PartitionedCoordinator):
    """The share-partitions' state, over the partitions of ``__share_group_state``."""

    def __init__(self, partitions: int, storage: CoordinatorStorage, clock: Clock) -> None:
        super().__init__(partitions, storage, clock)
        self._states: dict[ShareKey, ShareState] = {}

    def key_partition(self, key: ShareKey) -> int:
        return self.partition_for(coordinator_key(key))

    def key_availability(self, key: ShareKey) -> ErrorCode:
        return self.availability(coordinator_key(key))

    # --- loading -------------------------------------------------------------------------

    def load_partition(self, partition: int) -> None:
        self._mark_started()
        for stored in self._storage.read(partition):
            if isinstance(stored, StoredRecord):
                self._replay(stored)
        self._loaded.add(partition)

    def forget_partition(self, partition: int) -> None:
        for key in [k for k in self._states if self.key_partition(k) == partition]:
            del self._states[key]

    def _replay(self, stored: StoredRecord | StoredMarker) -> None:
        if not isinstance(stored, StoredRecord):
            return
        try:
            record_type = stored_records.read_prefix(stored.key)
            key_schema = (
                SHARE_SNAPSHOT_KEY if record_type == SHARE_SNAPSHOT_KEY.record_type else SHARE_UPDATE_KEY
            )
            if record_type not in (SHARE_SNAPSHOT_KEY.record_type, SHARE_UPDATE_KEY.record_type):
                raise DecodeError(f"unknown record type {record_type}")
            fields = stored_records.decode(key_schema, stored.key)
            key: ShareKey = (fields["group_id"], bytes(fields["topic_id"]), fields["partition"])
            if stored.value is None:
                self._states.pop(key, None)
            elif key_schema is SHARE_SNAPSHOT_KEY:
                self._states[key] = _state_from_snapshot(
                    stored_records.decode(SHARE_SNAPSHOT_VALUE, stored.value)
                )
            else:
                self._fold_update(key, stored_records.decode(SHARE_UPDATE_VALUE, stored.value))
        except (DecodeError, ValueError) as error:
            log.error("skipping an unreadable %s record: %s", SHARE_STATE_TOPIC, error)

    def _fold_update(self, key: ShareKey, value: dict) -> None:
        state = self._states.get(key)
        if state is None:
            return  # an update without its snapshot (compacted away): nothing to fold into
        state.start_offset = max(state.start_offset, value["start_offset"])
        state.leader_epoch = max(state.leader_epoch, value["leader_epoch"])
        state.batches = overlay_state_batches(
            state.batches, _batches(value["state_batches"]), state.start_offset
        )

    # --- the share-group state APIs ------------------------------------------------------

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState: a share-partition starts (again) at ``start_offset`` (-1:
        where ``share.auto.offset.reset`` says, on its first fetch)."""
        if start_offset < UNINITIALIZED:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, f"Start offset {start_offset} is not valid.")
        self._check_available(key)
        current = self._states.get(key)
        if current is not None and state_epoch < current.state_epoch:
            raise ShareStateError(
                ErrorCode.FENCED_STATE_EPOCH, "The state epoch is older than the current one."
            )
        leader_epoch = current.leader_epoch if current is not None else -1
        self._store(key, ShareState(state_epoch, leader_epoch, start_offset, [], 0, self._clock()))

    def read(self, key: ShareKey, leader_epoch: int) -> ShareState | None:
        """ReadShareGroupState: the state, None if the share-partition has none. A newer leader
        epoch is remembered (it fences the previous leader's writes)."""
        self._check_available(key)
        state = self._states.get(key)
        if state is None:
            return None
        if leader_epoch < state.leader_epoch and leader_epoch != -1:
            raise ShareStateError(
                ErrorCode.FENCED_LEADER_EPOCH, "The leader epoch is older than the current one."
            )
        if leader_epoch > state.leader_epoch:
            self._store(
                key,
                dataclasses.replace(
                    state, leader_epoch=leader_epoch, snapshot_epoch=state.snapshot_epoch + 1
                ),
            )
        return self._states[key]

    def summary(self, key: ShareKey) -> ShareSummary | None:
        """ReadShareGroupStateSummary: where the share-partition stands, fencing nothing."""
        self._check_available(key)
        state = self._states.get(key)
        if state is None:
            return None
        return ShareSummary(
            state.state_epoch, state.leader_epoch, state.start_offset, state.delivery_complete_count()
        )

    def write(
        self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int, batches: list[StateBatch]
    ) -> None:
        """WriteShareGroupState: fold the changed ``batches`` and the start offset in (-1: unchanged)."""
        if start_offset < UNINITIALIZED:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, f"Start offset {start_offset} is not valid.")
        self._check_available(key)
        state = self._states.get(key)
        if state is None:
            state = ShareState(state_epoch, leader_epoch, start_offset, [], 0, self._clock())
        if state_epoch < state.state_epoch:
            raise ShareStateError(
                ErrorCode.FENCED_STATE_EPOCH, "The state epoch is older than the current one."
            )
        if leader_epoch != -1 and leader_epoch < state.leader_epoch:
            raise ShareStateError(
                ErrorCode.FENCED_LEADER_EPOCH, "The leader epoch is older than the current one."
            )
        start = start_offset if start_offset >= 0 else state.start_offset
        self._store(
            key,
            ShareState(
                state_epoch,
                max(leader_epoch, state.leader_epoch),
                start,
                overlay_state_batches(state.batches, batches, start),
                state.snapshot_epoch + 1,
                state.create_timestamp_ms,
            ),
        )

    def delete(self, key: ShareKey) -> None:
        """DeleteShareGroupState: forget the share-partition (a tombstone)."""
        self._check_available(key)
        if key in self._states:
            self._append(key, (_encoded_key(key), None))
            del self._states[key]

    def states(self) -> Iterator[tuple[ShareKey, ShareState]]:
        """Every share-partition this coordinator holds (its loaded partitions)."""
        return iter(list(self._states.items()))

    # --- storage -------------------------------------------------------------------------

    def _check_available(self, key: ShareKey) -> None:
        error = self.key_availability(key)
        if error is not ErrorCode.NONE:
            raise ShareStateError(error, f"The share coordinator cannot serve this key now ({error.name}).")

    def _store(self, key: ShareKey, state: ShareState) -> None:
        value = stored_records.encode(
            SHARE_SNAPSHOT_VALUE,
            SNAPSHOT_VERSION,
            {
                "snapshot_epoch": state.snapshot_epoch,
                "state_epoch": state.state_epoch,
                "leader_epoch": state.leader_epoch,
                "start_offset": state.start_offset,
                "delivery_complete_count": state.delivery_complete_count(),
                "create_timestamp": state.create_timestamp_ms,
                "write_timestamp": self._clock(),
                "state_batches": [
                    {
                        "first_offset": b.first_offset,
                        "last_offset": b.last_offset,
                        "delivery_state": int(b.delivery_state),
                        "delivery_count": b.delivery_count,
                    }
                    for b in state.batches
                ],
            },
        )
        self._append(key, (_encoded_key(key), value))
        self._states[key] = state

    def _append(self, key: ShareKey, record: tuple[bytes, bytes | None]) -> None:
        try:
            self._storage.append(self.key_partition(key), [record], self._clock())
        except (OSError, KafkaStorageError) as error:
            log.error("cannot append to %s: %s", SHARE_STATE_TOPIC, error)
            raise ShareStateError(
                ErrorCode.NOT_COORDINATOR, "The share state could not be written."
            ) from error
        except LogError as error:
            log.error("cannot append to %s: %s", SHARE_STATE_TOPIC, error)
            raise ShareStateError(
                ErrorCode.UNKNOWN_SERVER_ERROR, "The share state could not be written."
            ) from error


def _encoded_key(key: ShareKey) -> bytes:
    group_id, topic_id, partition = key
    return stored_records.encode(
        SHARE_SNAPSHOT_KEY,
        stored_records.KEY_VERSION,
        {"group_id": group_id, "topic_id": topic_id, "partition": partition},
    )


def _batches(entries: list[dict]) -> list[StateBatch]:
    return [
        StateBatch(e["first_offset"], e["last_offset"], RecordState(e["delivery_state"]), e["delivery_count"])
        for e in entries
    ]


def _state_from_snapshot(value: dict) -> ShareState:
    return ShareState(
        value["state_epoch"],
        value["leader_epoch"],
        value["start_offset"],
        _batches(value["state_batches"]),
        value["snapshot_epoch"],
        value["create_timestamp"],
    )

"""The group coordinator: one object the broker talks to for every group and offset API.

It owns the groups, the committed offsets and the timers, routes each request to the rules
of its protocol, and answers the "can I serve this group at all?" questions the way Kafka's
``GroupCoordinatorService`` does (not started: COORDINATOR_NOT_AVAILABLE; the group's
``__consumer_offsets`` partition still loading: COORDINATOR_LOAD_IN_PROGRESS).

Sans-IO contract for the broker: call :meth:`load` (or :meth:`load_partition` per partition)
at start-up, then drive time with :meth:`next_deadline` / :meth:`on_time`, registering a
wake-up callback with :meth:`set_wakeup` to hear about deadlines earlier than the one being
waited for.  JoinGroup and SyncGroup complete through the responder they are given, possibly
much later (from another request or from :meth:`on_time`); everything else returns at once.
Storage is synchronous: :class:`CoordinatorStorage` appends to and reads back the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from coordinator.classic_group import (
    ClassicGroup,
    GroupError,
    GroupState,
    JoinResponder,
    SyncResponder,
    join_error,
    sync_error,
)
from coordinator.classic_protocol import ClassicGroups, JoinRequest, SyncRequest
from coordinator.config import CoordinatorConfig
from coordinator.consumer_group import ConsumerGroup
from coordinator.consumer_heartbeat import (
    ConsumerGroups,
    HeartbeatRequest,
    described_error,
    heartbeat_response,
)
from coordinator.offsets import CommitTopic, Offsets, Producer, TopicCatalog, TopicErrors, topics_with_error
from coordinator.partitioned import PartitionedCoordinator
from coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    Record,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_metadata,
    encode_offset_commit,
)
from coordinator.share.group import (
    SHARE_GROUP_TYPE,
    ShareGroup,
    ShareGroups,
    ShareHeartbeat,
    share_described_error,
    share_heartbeat_response,
)
from coordinator.streams.group import (
    STREAMS_GROUP_TYPE,
    StreamsGroup,
    StreamsGroups,
    StreamsHeartbeat,
    streams_described_error,
    streams_response,
)
from coordinator.streams.records import (
    STREAMS_RECORD_TYPES,
    RecordMap,
    changes,
    group_records,
    key_group,
    rebuild_group,
)
from log.errors import KafkaStorageError, LogError
from wire import stored_records
from wire.error_codes import ErrorCode
from wire.errors import DecodeError

if TYPE_CHECKING:
    from wire.messages import (
        ConsumerGroupDescribeResponseGroups,
        ConsumerGroupHeartbeatResponse,
        DeleteGroupsResponseResults,
        DescribeGroupsResponseGroups,
        LeaveGroupResponseMembers,
        ListGroupsResponseGroups,
        OffsetDeleteRequestTopics,
        OffsetFetchRequestTopics,
        OffsetFetchResponseGroups,
        ShareGroupDescribeResponseGroups,
        ShareGroupHeartbeatResponse,
        StreamsGroupDescribeResponseGroups,
        StreamsGroupHeartbeatResponse,
    )

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
# OffsetCommit v9 (KIP-848): members commit with their member epoch; a missing group is
# GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION.
FIRST_MEMBER_EPOCH_COMMIT_VERSION = 9
CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"


class StoredRecord(NamedTuple):
    """A record read back from a coordinator's topic."""

    key: bytes
    value: bytes | None  # None: a tombstone
    producer_id: int = NO_PRODUCER_ID
    """The producer whose transaction wrote it (TxnOffsetCommit), or -1."""


class StoredMarker(NamedTuple):
    """A transaction marker read back: ``producer_id``'s transaction ended here."""

    producer_id: int
    commit: bool


class CoordinatorStorage(Protocol):
    """A coordinator's internal topic partitions, as appendable and replayable record lists."""

    def append(
        self, partition: int, records: Sequence[Record], now_ms: int, producer: Producer | None = None
    ) -> None:
        """Append (key, value) records atomically, inside ``producer``'s transaction if given;
        raise OSError or a LogError on failure."""
        ...

    def append_marker(self, partition: int, producer: Producer, commit: bool, now_ms: int) -> None:
        """Append the marker ending ``producer``'s transaction in ``partition``."""
        ...

    def read(self, partition: int) -> Iterable[StoredRecord | StoredMarker]:
        """Every record and marker of ``partition`` in log order."""
        ...


class GroupCoordinator(PartitionedCoordinator):
    """Classic and consumer groups, and committed offsets, of every ``__consumer_offsets`` partition."""

    def __init__(
        self,
        config: CoordinatorConfig,
        storage: CoordinatorStorage,
        topics: TopicCatalog,
        clock: Callable[[], int],
    ) -> None:
        super().__init__(config.offsets_topic_partitions, storage, clock)
        self.config = config
        self._groups: dict[str, Any] = {}
        self.classic = ClassicGroups(self._groups, self._timer, clock, config, self._write)
        self.offsets = Offsets(topics, clock, config.offset_metadata_max_bytes, self._write)
        self.consumer = ConsumerGroups(self._groups, self._timer, clock, config, topics)
        self.share = ShareGroups(self._groups, self._timer, clock, config, topics)
        self.streams = StreamsGroups(self._groups, self._timer, clock, config, topics)
        self.streams.persist = self._persist_streams
        # Each streams group's records as last written or replayed (coordinator/streams/records.py).
        self._streams_records: dict[str, RecordMap] = {}
        # One table of group configs (GROUP config resources) for every protocol.
        self.share.group_configs = self.streams.group_configs = self.consumer.group_configs

    # --- partitions, loading and storage -------------------------------------------------

    def load(self) -> None:
        """Replay every partition at once, then serve (the broker yields between partitions instead)."""
        for partition in range(self.config.offsets_topic_partitions):
            self.load_partition(partition)

    def load_partition(self, partition: int) -> None:
        """Replay one partition; its groups are served from then on.

        The first load also starts the coordinator: until then every request is answered
        with COORDINATOR_NOT_AVAILABLE, and requests for groups of partitions not yet loaded
        with COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
        """
        if self._mark_started():
            self._schedule_cleanup()
        for stored in self._storage.read(partition):
            if isinstance(stored, StoredMarker):
                self.offsets.complete_transaction(
                    stored.producer_id, stored.commit, lambda group: self.partition_for(group) == partition
                )
            else:
                self._replay(stored)
        self._loaded.add(partition)
        for group in list(self._groups.values()):
            if isinstance(group, ClassicGroup) and self.partition_for(group.group_id) == partition:
                self.classic.on_loaded(group)
        for group_id, records in self._streams_records.items():
            if self.partition_for(group_id) == partition:
                self.streams.adopt(rebuild_group(group_id, records))

    def forget_partition(self, partition: int) -> None:
        """Forget the groups of ``partition``; members waiting on a join or sync are told
        NOT_COORDINATOR so they find the new coordinator at once."""
        for group_id in [g for g in self._groups if self.partition_for(g) == partition]:
            group = self._groups.pop(group_id)
            if isinstance(group, ClassicGroup):
                for member in group.members.values():
                    member.complete_join(join_error(ErrorCode.NOT_COORDINATOR, member.identity.member_id))
                    member.complete_sync(sync_error(ErrorCode.NOT_COORDINATOR))
        self.offsets.forget(lambda group_id: self.partition_for(group_id) == partition)
        for group_id in [g for g in self._streams_records if self.partition_for(g) == partition]:
            del self._streams_records[group_id]

    def _replay(self, stored: StoredRecord) -> None:
        key_bytes, value_bytes = stored.key, stored.value
        try:
            if stored_records.read_prefix(key_bytes) in STREAMS_RECORD_TYPES:
                self._replay_streams(key_bytes, value_bytes)
                return
            key = decode_key(key_bytes)
            if isinstance(key, OffsetCommitKey):
                value = None if value_bytes is None else decode_offset_value(value_bytes)
                if value is not None and stored.producer_id != NO_PRODUCER_ID:
                    self.offsets.replay_transactional(stored.producer_id, key, value)
                    return
                if value is not None and key.group not in self._groups:
                    # Offsets without group metadata belong to a "simple" group (assign()
                    # plus commit, or an admin tool).
                    self._groups[key.group] = ClassicGroup(key.group, GroupState.EMPTY, self._clock())
                self.offsets.replay(key, value)
            elif value_bytes is None:
                self._groups.pop(key.group, None)
                if self.offsets.has_offsets(key.group):
                    # The classic group gave way to a consumer group (whose membership is not
                    # persisted); its offsets live on in a simple group.
                    self._groups[key.group] = ClassicGroup(key.group, GroupState.EMPTY, self._clock())
            else:
                self._groups[key.group] = ClassicGroup.from_metadata(
                    key.group, decode_group_value(value_bytes), self._clock()
                )
        except DecodeError as error:
            log.warning("skipping undecodable __consumer_offsets record: %s", error)

    def _replay_streams(self, key: bytes, value: bytes | None) -> None:
        """Keep the last value of each of a streams group's keys; the group is rebuilt from
        them once its partition is loaded."""
        group_id = key_group(key)
        records = self._streams_records.setdefault(group_id, {})
        if value is None:
            records.pop(key, None)
            if not records:
                del self._streams_records[group_id]
        else:
            records[key] = value
            # The streams group takes the id over from whatever was replayed before it.
            self._groups.pop(group_id, None)

    def _persist_streams(self, group_id: str) -> ErrorCode:
        """Write what changed in the streams group's records since they were last written
        (tombstones for all of them once the group is gone)."""
        group = self._groups.get(group_id)
        wanted = group_records(group) if isinstance(group, StreamsGroup) and not group.dead else {}
        written = self._streams_records.get(group_id, {})
        records = changes(written, wanted)
        if not records:
            return ErrorCode.NONE
        error = self._write(group_id, records)
        if error is ErrorCode.NONE:
            if wanted:
                self._streams_records[group_id] = wanted
            else:
                self._streams_records.pop(group_id, None)
        return error

    def _write(self, group_id: str, records: list[Record], producer: Producer | None = None) -> ErrorCode:
        try:
            self._storage.append(self.partition_for(group_id), records, self._clock(), producer)
        except (OSError, KafkaStorageError) as error:
            # Kafka answers a storage failure with NOT_COORDINATOR: clients look the
            # coordinator up again and retry.
            log.error("cannot append to __consumer_offsets for group %s: %s", group_id, error)
            return ErrorCode.NOT_COORDINATOR
        except LogError as error:  # e.g. a group too large for max.message.bytes
            log.error("cannot append to __consumer_offsets for group %s: %s", group_id, error)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.NONE

    # --- time ----------------------------------------------------------------------------

    def _schedule_cleanup(self) -> None:
        self._timer.schedule(
            ("cleanup",), self._clock() + self.config.offsets_retention_check_interval_ms, self._cleanup
        )

    def _cleanup(self) -> None:
        """Expire old offsets and delete Empty groups left without any (Kafka's cleanup job)."""
        retention = self.config.offsets_retention_ms
        for group_id, group in list(self._groups.items()):
            if self.availability(group_id) is not ErrorCode.NONE:
                continue
            expired, all_expired = self.offsets.expired(group, group_id, retention)
            delete_group = all_expired and group.is_empty
            if not expired and not delete_group:
                continue
            if self._tombstone(group_id, expired, delete_group) is ErrorCode.NONE:
                log.info(
                    "group %s: expired %d offsets%s", group_id, len(expired), " and the group" * delete_group
                )
        self._schedule_cleanup()

    def _tombstone(self, group_id: str, offsets: list[OffsetCommitKey], delete_group: bool) -> ErrorCode:
        """Tombstone ``offsets`` (and the group if ``delete_group``) in one write, then drop them here."""
        records = [encode_offset_commit(key, None) for key in offsets]
        if delete_group:
            records.append(encode_group_metadata(GroupMetadataKey(group_id), None))
            records += changes(self._streams_records.get(group_id, {}), {})
        error = self._write(group_id, records)
        if error is ErrorCode.NONE:
            for key in offsets:
                self.offsets.replay(key, None)
            if delete_group:
                self._streams_records.pop(group_id, None)
                self._forget(group_id)
        return error

    def _forget(self, group_id: str) -> None:
        group = self._groups.pop(group_id)
        if isinstance(group, ClassicGroup):
            self.classic.forget(group)
        else:
            group.dead = True

    def _replace_empty_group(self, group_id: str, kind: type) -> None:
        """A group of the other protocol may take over an Empty group's id (and offsets)."""
        existing = self._groups.get(group_id)
        if existing is not None and type(existing) is not kind and existing.is_empty:
            self._tombstone(group_id, [], delete_group=True)

    # --- classic group membership --------------------------------------------------------

    def join_group(self, request: JoinRequest, respond: JoinResponder) -> None:
        error = self._membership_error(request.group_id)
        if error is ErrorCode.NONE and not (
            self.config.group_min_session_timeout_ms
            <= request.identity.session_timeout_ms
            <= self.config.group_max_session_timeout_ms
        ):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        if error is not ErrorCode.NONE:
            respond(join_error(error, request.identity.member_id))
            return
        self._replace_empty_group(request.group_id, ClassicGroup)
        if isinstance(self._groups.get(request.group_id), ConsumerGroup):
            # Classic members in a consumer group (Kafka's mixed mode) are not supported.
            respond(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, request.identity.member_id))
            return
        self.classic.join(request, respond)

    def sync_group(self, request: SyncRequest, respond: SyncResponder) -> None:
        error = self._membership_error(request.group_id)
        if error is not ErrorCode.NONE:
            respond(sync_error(error))
        else:
            self.classic.sync(request, respond)

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        error = self._membership_error(group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Kafka answers heartbeats blindly while loading: the member is not to rejoin
            # just because the coordinator restarted.
            return ErrorCode.NONE
        if error is not ErrorCode.NONE:
            return error
        return self.classic.heartbeat(group_id, generation_id, member_id, group_instance_id)

    def leave_group(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[LeaveGroupResponseMembers]]:
        error = self._membership_error(group_id)
        if error is not ErrorCode.NONE:
            return error, []
        return self.classic.leave(group_id, members)

    def _membership_error(self, group_id: str) -> ErrorCode:
        if not self._started:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        return self.availability(group_id)

    # --- offsets -------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_time_ms: int,
        topics: Sequence[CommitTopic],
        api_version: int,
        producer: Producer | None = None,
    ) -> list[TopicErrors]:
        """OffsetCommit (and TxnOffsetCommit, given the ``producer`` whose transaction the
        commit joins): response topics with an error code per partition."""
        valid, unknown = self.offsets.unknown_partitions(topics)
        if not valid:
            return unknown
        group = self._groups.get(group_id)
        try:
            error = self.availability(group_id)
            if error is not ErrorCode.NONE:
                raise GroupError(error)
            if group is None and generation_id < 0:
                # A "simple" consumer (assign() + commit) or an admin tool creates the group.
                group = self.classic.create_group(group_id)
            if group is None:
                # Since v9 a member of a group that does not exist is told so; older clients
                # understand ILLEGAL_GENERATION.
                raise GroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND
                    if api_version >= FIRST_MEMBER_EPOCH_COMMIT_VERSION and producer is None
                    else ErrorCode.ILLEGAL_GENERATION
                )
            group.validate_offset_commit(
                member_id, group_instance_id, generation_id, api_version, transactional=producer is not None
            )
        except GroupError as failure:
            return unknown + topics_with_error(valid, failure.code)
        if isinstance(group, ClassicGroup) and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            # Committing keeps a classic member's session alive, as a heartbeat would.
            self.classic.reschedule_heartbeat(group, member_id)
        return unknown + self.offsets.commit(group_id, retention_time_ms, valid, producer)

    def fetch_offsets(
        self,
        group_id: str,
        topics: Sequence[OffsetFetchRequestTopics] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
        require_stable: bool = False,
    ) -> OffsetFetchResponseGroups:
        """OffsetFetch for one group (``topics`` None = every committed partition).

        A member of a consumer group (OffsetFetch v9+) is checked against its epoch, so a
        fenced member cannot read positions it no longer owns.  ``require_stable`` (v7+): see
        :meth:`Offsets.fetch`.
        """
        error = self.availability(group_id)
        group = self._groups.get(group_id)
        if error is ErrorCode.NONE and isinstance(group, (ConsumerGroup, ShareGroup)):
            try:
                group.validate_offset_fetch(member_id, member_epoch)
            except GroupError as failure:
                error = failure.code
        if error is not ErrorCode.NONE:
            return {"group_id": group_id, "error_code": error, "topics": []}
        return {
            "group_id": group_id,
            "error_code": ErrorCode.NONE,
            "topics": self.offsets.fetch(group_id, topics, group is not None, require_stable),
        }

    def delete_offsets(
        self, group_id: str, topics: Sequence[OffsetDeleteRequestTopics]
    ) -> tuple[ErrorCode, list[TopicErrors]]:
        """OffsetDelete: (group-level error, response topics)."""
        error = self._membership_error(group_id)
        if error is not ErrorCode.NONE:
            return error, []
        valid, unknown = self.offsets.unknown_partitions(topics)
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        try:
            group.validate_offset_delete()
        except GroupError as failure:
            return failure.code, []
        return ErrorCode.NONE, unknown + self.offsets.delete(group, group_id, valid)

    def complete_transaction(self, partition: int, producer: Producer, commit: bool) -> None:
        """Write the marker ending ``producer``'s transaction to ``partition`` of
        ``__consumer_offsets``, then apply (commit) or drop (abort) the offsets it committed
        there.  Raises OSError or a LogError when the marker cannot be written."""
        self._storage.append_marker(partition, producer, commit, self._clock())
        self.offsets.complete_transaction(
            producer[0], commit, lambda group: self.partition_for(group) == partition
        )

    # --- administration ------------------------------------------------------------------

    def describe_groups(
        self, group_ids: list[str], missing_is_error: bool = False
    ) -> list[DescribeGroupsResponseGroups]:
        """DescribeGroups: a group that is not a classic group is described as Dead, or with
        ``missing_is_error`` (DescribeGroups v6+, KIP-1043) answered GROUP_ID_NOT_FOUND.
        Authorized operations are the broker's to add (``broker.requests.acl_checks``)."""
        return [self._describe_group(group_id, missing_is_error) for group_id in group_ids]

    def _describe_group(self, group_id: str, missing_is_error: bool) -> DescribeGroupsResponseGroups:
        described: DescribeGroupsResponseGroups = {
            "error_code": self.availability(group_id),
            "group_id": group_id,
            "group_state": GroupState.DEAD.value,
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
        }
        group = self._groups.get(group_id)
        if described["error_code"] is not ErrorCode.NONE:
            return described
        if not isinstance(group, ClassicGroup):
            if missing_is_error:
                what = "not found" if group is None else "is not a classic group"
                described["error_code"] = ErrorCode.GROUP_ID_NOT_FOUND
                described["error_message"] = f"Group {group_id} {what}."
            return described
        stable = group.is_in(GroupState.STABLE)
        described["group_state"] = group.state.value
        described["protocol_type"] = group.protocol_type or ""
        described["protocol_data"] = (group.protocol_name or "") if stable else ""
        described["members"] = [
            {
                "member_id": member.identity.member_id,
                "group_instance_id": member.identity.group_instance_id,
                "client_id": member.identity.client_id,
                "client_host": member.identity.client_host,
                "member_metadata": member.metadata(group.protocol_name or "") if stable else b"",
                "member_assignment": member.assignment,
            }
            for member in group.members.values()
        ]
        return described

    def list_groups(
        self, states: list[str], types: list[str]
    ) -> tuple[ErrorCode, list[ListGroupsResponseGroups]]:
        """ListGroups with Kafka's case-insensitive state and type filters."""
        error = self.listing_error()
        if error is not ErrorCode.NONE:
            return error, []
        wanted_states = {state.strip().lower() for state in states}
        wanted_types = {kind.strip().lower() for kind in types}
        listed: list[ListGroupsResponseGroups] = []
        for group_id, group in self._groups.items():
            state = group.state.value
            kind = _group_type(group)
            if wanted_states and state.lower() not in wanted_states:
                continue
            if wanted_types and kind not in wanted_types:
                continue
            listed.append(
                {
                    "group_id": group_id,
                    "protocol_type": group.protocol_type or "",
                    "group_state": state,
                    "group_type": kind,
                }
            )
        return ErrorCode.NONE, listed

    def delete_groups(self, group_ids: list[str]) -> list[DeleteGroupsResponseResults]:
        """DeleteGroups: only Empty groups, together with all their committed offsets."""
        return [{"group_id": group_id, "error_code": self._delete_group(group_id)} for group_id in group_ids]

    def _delete_group(self, group_id: str) -> ErrorCode:
        error = self.availability(group_id)
        if error is not ErrorCode.NONE:
            return error
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        try:
            group.validate_delete()
        except GroupError as failure:
            return failure.code
        return self._tombstone(group_id, self.offsets.tombstones(group_id), delete_group=True)

    # --- consumer groups (KIP-848) -------------------------------------------------------

    def consumer_group_heartbeat(self, request: HeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        error = self.availability(request.group_id) if request.group_id else ErrorCode.NONE
        if error is not ErrorCode.NONE:
            return heartbeat_response(None, 0, error_code=error)
        if request.member_epoch == 0:
            self._replace_empty_group(request.group_id, ConsumerGroup)
        return self.consumer.heartbeat(request)

    def consumer_group_describe(self, group_ids: list[str]) -> list[ConsumerGroupDescribeResponseGroups]:
        described = []
        for group_id in group_ids:
            error = self.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
            if error is ErrorCode.NONE:
                described.append(self.consumer.describe(group_id))
            else:
                described.append(described_error(group_id, error))
        return described

    # --- share groups (KIP-932) ----------------------------------------------------------

    def share_group_heartbeat(self, request: ShareHeartbeat) -> ShareGroupHeartbeatResponse:
        error = self.availability(request.group_id) if request.group_id else ErrorCode.NONE
        if error is not ErrorCode.NONE:
            return share_heartbeat_response(error)
        return self.share.heartbeat(request)

    def share_group_describe(self, group_ids: list[str]) -> list[ShareGroupDescribeResponseGroups]:
        described = []
        for group_id in group_ids:
            error = self.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
            if error is ErrorCode.NONE:
                described.append(self.share.describe(group_id))
            else:
                described.append(share_described_error(group_id, error))
        return described

    def has_group(self, group_id: str) -> bool:
        return group_id in self._groups

    def is_share_group(self, group_id: str) -> bool:
        return isinstance(self._groups.get(group_id), ShareGroup)

    def share_group_topics(self, group_id: str) -> set[str]:
        """The topics the share group's members subscribe to."""
        group = self._groups.get(group_id)
        return group.subscribed_topic_names() if isinstance(group, ShareGroup) else set()

    def share_group_is_empty(self, group_id: str) -> bool:
        group = self._groups.get(group_id)
        return isinstance(group, ShareGroup) and group.is_empty

    def adopt_share_groups(self, group_ids: Iterable[str]) -> None:
        """Know each of ``group_ids`` this coordinator serves as an (empty) share group: their
        share-partitions have state in ``__share_group_state``, though membership, which is
        not persisted, started empty after a restart."""
        for group_id in group_ids:
            if group_id not in self._groups and self.availability(group_id) is ErrorCode.NONE:
                self._groups[group_id] = ShareGroup(group_id)

    # --- streams groups (KIP-1071) ---------------------------------------------------------

    def streams_group_heartbeat(self, request: StreamsHeartbeat) -> StreamsGroupHeartbeatResponse:
        error = self.availability(request.group_id) if request.group_id else ErrorCode.NONE
        if error is not ErrorCode.NONE:
            return streams_response(request.member_id, 0, 0, error)
        if request.member_epoch == 0:
            self._replace_empty_group(request.group_id, StreamsGroup)
        response = self.streams.streams_heartbeat(request)
        error = self._persist_streams(request.group_id)
        if error is not ErrorCode.NONE:
            return streams_response(request.member_id, 0, 0, error)
        return response

    def streams_group_describe(self, group_ids: list[str]) -> list[StreamsGroupDescribeResponseGroups]:
        described = []
        for group_id in group_ids:
            error = self.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
            if error is ErrorCode.NONE:
                described.append(self.streams.streams_describe(group_id))
            else:
                described.append(streams_described_error(group_id, error))
        return described


def _group_type(group: object) -> str:
    if isinstance(group, StreamsGroup):
        return STREAMS_GROUP_TYPE
    if isinstance(group, ConsumerGroup):
        return CONSUMER_GROUP_TYPE
    if isinstance(group, ShareGroup):
        return SHARE_GROUP_TYPE
    return CLASSIC_GROUP_TYPE

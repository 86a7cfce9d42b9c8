"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and retention, as Kafka does them.

The in-memory map is a cache of ``__consumer_offsets``: a commit is first appended to the
group's partition and only then applied, through the same :meth:`Offsets.replay` that
rebuilds the map at start-up, so what clients read is always what a restart will read.

A transactional commit (TxnOffsetCommit) is written inside the producer's transaction and
stays pending until the transaction's marker reaches the partition: a commit marker applies it,
an abort marker drops it.  Meanwhile OffsetFetch with ``require_stable`` (read_committed
consumers) answers UNSTABLE_OFFSET_COMMIT for those partitions, as Kafka does (KIP-447).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from coordinator.records import (
    NO_LEADER_EPOCH,
    OffsetAndMetadata,
    OffsetCommitKey,
    Record,
    encode_offset_commit,
)
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        OffsetCommitResponsePartitions,
        OffsetDeleteRequestTopics,
        OffsetFetchRequestTopics,
        OffsetFetchResponseGroupsTopics,
        OffsetFetchResponsePartitions,
        TxnOffsetCommitRequestTopics,
        WriteTxnMarkersResponseTopics,
    )

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Producer = tuple[int, int]
"""(producer id, epoch) of a transactional write."""
OffsetWriter = Callable[[str, list[Record], Producer | None], ErrorCode]
INVALID_OFFSET = -1

CommitTopic: TypeAlias = "TxnOffsetCommitRequestTopics"
"""A topic of an OffsetCommit or TxnOffsetCommit request (OffsetCommit's also has an id)."""
TopicErrors: TypeAlias = "WriteTxnMarkersResponseTopics"
"""A response topic with an error code per partition: OffsetCommit, TxnOffsetCommit, OffsetDelete."""
_Requested = TypeVar("_Requested", "CommitTopic", "OffsetDeleteRequestTopics")


class TopicLike(Protocol):
    name: str
    topic_id: bytes
    partitions: int


class TopicCatalog(Protocol):
    """The broker's topics, as the coordinator needs them (``broker.state.topic_registry.TopicRegistry``)."""

    def get(self, name: str) -> TopicLike | None: ...

    def by_id(self, topic_id: bytes) -> TopicLike | None: ...

    def all(self) -> list[TopicLike]: ...


class OffsetGroup(Protocol):
    """What retention and OffsetDelete need from a group of either protocol."""

    def is_subscribed_to(self, topic: str) -> bool: ...

    def offset_expiry_base_ms(self, offset: OffsetAndMetadata) -> int | None: ...


class Offsets:
    """Every group's committed offsets on this coordinator, with Kafka's rules around them."""

    def __init__(
        self,
        topics: TopicCatalog,
        clock: Callable[[], int],
        metadata_max_bytes: int,
        write: OffsetWriter,
    ) -> None:
        self._topics = topics
        self._clock = clock
        self._metadata_max_bytes = metadata_max_bytes
        self._write = write
        self._by_group: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # Transactional commits not yet decided, by producer id.
        self._pending: dict[int, dict[OffsetCommitKey, OffsetAndMetadata]] = {}

    # --- state ---------------------------------------------------------------------------

    def replay(self, key: OffsetCommitKey, value: OffsetAndMetadata | None) -> None:
        """Apply one ``__consumer_offsets`` record (a commit, or a tombstone when None)."""
        if value is None:
            offsets = self._by_group.get(key.group)
            if offsets is not None:
                offsets.pop((key.topic, key.partition), None)
                if not offsets:
                    del self._by_group[key.group]
        else:
            self._by_group.setdefault(key.group, {})[key.topic, key.partition] = value

    def forget(self, of_group: Callable[[str], bool]) -> None:
        """Drop the committed and pending offsets of the groups ``of_group`` selects."""
        for group_id in [g for g in self._by_group if of_group(g)]:
            del self._by_group[group_id]
        for producer_id, pending in list(self._pending.items()):
            kept = {key: value for key, value in pending.items() if not of_group(key.group)}
            if kept:
                self._pending[producer_id] = kept
            else:
                del self._pending[producer_id]

    def replay_transactional(self, producer_id: int, key: OffsetCommitKey, value: OffsetAndMetadata) -> None:
        """Hold a commit written inside ``producer_id``'s transaction until its marker."""
        self._pending.setdefault(producer_id, {})[key] = value

    def complete_transaction(
        self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]
    ) -> None:
        """The transaction's marker reached a partition: apply (commit) or drop (abort) what
        ``producer_id`` committed there for the groups ``in_partition`` accepts."""
        pending = self._pending.get(producer_id)
        if not pending:
            return
        for key in [key for key in pending if in_partition(key.group)]:
            value = pending.pop(key)
            if commit:
                self.replay(key, value)
        if not pending:
            del self._pending[producer_id]

    def _unstable(self, group_id: str) -> set[TopicPartition]:
        return {
            (key.topic, key.partition)
            for pending in self._pending.values()
            for key in pending
            if key.group == group_id
        }

    # --- OffsetCommit --------------------------------------------------------------------

    def unknown_partitions(self, topics: Sequence[_Requested]) -> tuple[list[_Requested], list[TopicErrors]]:
        """Split request topics into (existing, response entries for unknown ones).

        Kafka checks this in the request handler, before the coordinator sees the request:
        offsets for topics or partitions that do not exist are refused per partition.
        """
        valid: list[_Requested] = []
        unknown: list[TopicErrors] = []
        for topic in topics:
            info = self._topics.get(topic["name"])
            count = info.partitions if info is not None else 0
            good = [p for p in topic["partitions"] if 0 <= p["partition_index"] < count]
            bad = [p["partition_index"] for p in topic["partitions"] if not 0 <= p["partition_index"] < count]
            if good:
                valid.append(topic | {"partitions": good})
            if bad:
                unknown.append(_topic_result(topic["name"], bad, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        return valid, unknown

    def commit(
        self,
        group_id: str,
        retention_time_ms: int,
        topics: Sequence[CommitTopic],
        producer: Producer | None = None,
    ) -> list[TopicErrors]:
        """Store offsets of existing partitions for a validated committer; response topics.

        With ``producer`` the commit is part of that producer's transaction (pending).
        """
        now = self._clock()
        # OffsetCommit v2-4 let clients pick a retention; -1 means the broker's default.
        expire = now + retention_time_ms if retention_time_ms >= 0 else None
        records: list[Record] = []
        applied: list[tuple[OffsetCommitKey, OffsetAndMetadata]] = []
        response: list[TopicErrors] = []
        for topic in topics:
            results: list[OffsetCommitResponsePartitions] = []
            for partition in topic["partitions"]:
                metadata = partition.get("committed_metadata")
                if metadata is not None and len(metadata) > self._metadata_max_bytes:
                    results.append(
                        _partition_result(partition["partition_index"], ErrorCode.OFFSET_METADATA_TOO_LARGE)
                    )
                    continue
                key = OffsetCommitKey(group_id, topic["name"], partition["partition_index"])
                value = OffsetAndMetadata(
                    offset=partition["committed_offset"],
                    leader_epoch=partition.get("committed_leader_epoch", NO_LEADER_EPOCH),
                    metadata=metadata or "",
                    commit_timestamp_ms=now,
                    expire_timestamp_ms=expire,
                )
                records.append(encode_offset_commit(key, value))
                applied.append((key, value))
                results.append(_partition_result(partition["partition_index"], ErrorCode.NONE))
            response.append({"name": topic["name"], "partitions": results})
        if records:
            error = self._write(group_id, records, producer)
            if error is not ErrorCode.NONE:
                return topics_with_error(topics, error)
            for key, value in applied:
                if producer is None:
                    self.replay(key, value)
                else:
                    self.replay_transactional(producer[0], key, value)
        return response

    # --- OffsetFetch ---------------------------------------------------------------------

    def fetch(
        self,
        group_id: str,
        topics: Sequence[OffsetFetchRequestTopics] | None,
        group_exists: bool,
        require_stable: bool = False,
    ) -> list[OffsetFetchResponseGroupsTopics]:
        """Committed offsets of the requested partitions (all of them when ``topics`` is None).

        Partitions without a commit get offset -1 and no error, which consumers read as "use
        auto.offset.reset".  A group that does not exist simply has no commits.  With
        ``require_stable``, partitions with an undecided transactional commit are
        UNSTABLE_OFFSET_COMMIT (the consumer retries).
        """
        committed = self._by_group.get(group_id, {}) if group_exists else {}
        unstable = self._unstable(group_id) if require_stable else set()

        def fetched(topic: str, partition: int) -> OffsetFetchResponsePartitions:
            if (topic, partition) in unstable:
                return _fetched(partition, None) | {"error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT}
            return _fetched(partition, committed.get((topic, partition)))

        if topics is None:
            by_topic: dict[str, list[OffsetFetchResponsePartitions]] = {}
            for topic, partition in [*committed, *(unstable - committed.keys())]:
                by_topic.setdefault(topic, []).append(fetched(topic, partition))
            return [{"name": name, "partitions": partitions} for name, partitions in by_topic.items()]
        return [
            {
                "name": topic["name"],
                "partitions": [fetched(topic["name"], i) for i in topic["partition_indexes"]],
            }
            for topic in topics
        ]

    # --- OffsetDelete --------------------------------------------------------------------

    def delete(
        self, group: OffsetGroup, group_id: str, topics: Sequence[OffsetDeleteRequestTopics]
    ) -> list[TopicErrors]:
        """Drop commits of partitions the group no longer consumes (KIP-496)."""
        records: list[Record] = []
        keys: list[OffsetCommitKey] = []
        response: list[TopicErrors] = []
        committed = self._by_group.get(group_id, {})
        for topic in topics:
            name = topic["name"]
            if group.is_subscribed_to(name):
                response.append(_topic_result(name, _indexes(topic), ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                continue
            for partition in topic["partitions"]:
                if (name, partition["partition_index"]) in committed:
                    key = OffsetCommitKey(group_id, name, partition["partition_index"])
                    records.append(encode_offset_commit(key, None))
                    keys.append(key)
            response.append(_topic_result(name, _indexes(topic), ErrorCode.NONE))
        if records:
            error = self._write(group_id, records, None)
            if error is not ErrorCode.NONE:
                return topics_with_error(topics, error)
            for key in keys:
                self.replay(key, None)
        return response

    # --- retention and group deletion ----------------------------------------------------

    def expired(
        self, group: OffsetGroup, group_id: str, retention_ms: int
    ) -> tuple[list[OffsetCommitKey], bool]:
        """Commits of ``group_id`` past retention, and whether no commit would remain."""
        now = self._clock()
        expired: list[OffsetCommitKey] = []
        all_expired = True
        for (topic, partition), value in self._by_group.get(group_id, {}).items():
            base = None if group.is_subscribed_to(topic) else group.offset_expiry_base_ms(value)
            if base is None:
                all_expired = False
                continue
            # Commits from OffsetCommit v1-4 that carried their own expiry keep that rule.
            deadline = value.expire_timestamp_ms
            if deadline is None:
                deadline = base + retention_ms
            if now >= deadline:
                expired.append(OffsetCommitKey(group_id, topic, partition))
            else:
                all_expired = False
        return expired, all_expired

    def has_offsets(self, group_id: str) -> bool:
        return group_id in self._by_group

    def committed(self) -> Iterator[tuple[str, str, int, int]]:
        """Every committed offset as (group, topic, partition, offset), for lag metrics. A
        generator over live state: callers must not yield to the event loop while walking it."""
        for group_id, offsets in self._by_group.items():
            for (topic, partition), value in offsets.items():
                yield group_id, topic, partition, value.offset

    def tombstones(self, group_id: str) -> list[OffsetCommitKey]:
        """Keys of every commit of ``group_id`` (deleting a group deletes its offsets)."""
        return [
            OffsetCommitKey(group_id, topic, partition)
            for topic, partition in self._by_group.get(group_id, {})
        ]


def _fetched(partition: int, value: OffsetAndMetadata | None) -> OffsetFetchResponsePartitions:
    if value is None:
        return {
            "partition_index": partition,
            "committed_offset": INVALID_OFFSET,
            "committed_leader_epoch": NO_LEADER_EPOCH,
            "metadata": "",
            "error_code": ErrorCode.NONE,
        }
    return {
        "partition_index": partition,
        "committed_offset": value.offset,
        "committed_leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "error_code": ErrorCode.NONE,
    }


def _partition_result(index: int, code: ErrorCode) -> OffsetCommitResponsePartitions:
    return {"partition_index": index, "error_code": code}


def _indexes(topic: CommitTopic | OffsetDeleteRequestTopics) -> list[int]:
    return [partition["partition_index"] for partition in topic["partitions"]]


def topics_with_error(
    topics: Iterable[CommitTopic | OffsetDeleteRequestTopics], code: ErrorCode
) -> list[TopicErrors]:
    """Response topics answering every requested partition with ``code``."""
    return [_topic_result(topic["name"], _indexes(topic), code) for topic in topics]


def _topic_result(name: str, indexes: Iterable[int], code: ErrorCode) -> TopicErrors:
    return {"name": name, "partitions": [_partition_result(index, code) for index in indexes]}

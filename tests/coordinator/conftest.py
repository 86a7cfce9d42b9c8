"""A coordinator on a fake clock and in-memory storage, with helpers that read like a client.

Nothing here sleeps: :meth:`Harness.advance` moves the clock and fires the timers that are
due, which is exactly what the broker's timer task does in real time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from coordinator.classic_protocol import JoinRequest, SyncRequest
from coordinator.config import CoordinatorConfig
from coordinator.consumer_heartbeat import HeartbeatRequest
from coordinator.coordinator import GroupCoordinator, StoredMarker, StoredRecord
from coordinator.records import MemberIdentity

START_MS = 1_700_000_000_000


class FakeClock:
    def __init__(self) -> None:
        self.now = START_MS

    def __call__(self) -> int:
        return self.now


class MemoryStorage:
    """A coordinator topic as lists of records and markers per partition."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[StoredRecord | StoredMarker]] = {}
        self.fail = False

    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        now_ms: int,
        producer: tuple[int, int] | None = None,
    ) -> None:
        if self.fail:
            raise OSError("disk on fire")
        producer_id = producer[0] if producer else -1
        self.partitions.setdefault(partition, []).extend(StoredRecord(k, v, producer_id) for k, v in records)

    def append_marker(self, partition: int, producer: tuple[int, int], commit: bool, now_ms: int) -> None:
        if self.fail:
            raise OSError("disk on fire")
        self.partitions.setdefault(partition, []).append(StoredMarker(producer[0], commit))

    def read(self, partition: int) -> Iterable[StoredRecord | StoredMarker]:
        return list(self.partitions.get(partition, []))


@dataclass
class Topic:
    name: str
    partitions: int
    topic_id: bytes = field(default_factory=lambda: bytes(16))


class Topics:
    def __init__(self, **partitions: int) -> None:
        self.topics = {
            name: Topic(name, count, bytes([i + 1]) * 16)
            for i, (name, count) in enumerate(partitions.items())
        }

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def by_id(self, topic_id: bytes) -> Topic | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def all(self) -> list[Topic]:
        return list(self.topics.values())

    def id_of(self, name: str) -> bytes:
        return self.topics[name].topic_id

    def add(self, name: str, partitions: int) -> None:
        self.topics[name] = Topic(name, partitions, bytes([len(self.topics) + 1]) * 16)


class Reply(list):
    """Collects what a responder receives; ``.body`` is the single response (or None)."""

    @property
    def body(self) -> dict[str, Any] | None:
        assert len(self) <= 1, f"answered more than once: {self}"
        return self[0] if self else None

    @property
    def error(self) -> int:
        assert self.body is not None, "not answered yet"
        return self.body["error_code"]


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, null user data."""
    parts = [struct.pack(">hi", 0, len(topics))]
    for topic in topics:
        parts.append(struct.pack(">h", len(topic)) + topic.encode())
    parts.append(struct.pack(">i", -1))
    return b"".join(parts)


class Harness:
    """A coordinator to drive; pass ``clock``, ``storage`` and ``topics`` to restart over old ones."""

    def __init__(
        self,
        config: CoordinatorConfig,
        *,
        load: bool = True,
        clock: FakeClock | None = None,
        storage: Any = None,
        topics: Topics | None = None,
    ) -> None:
        self.clock = clock or FakeClock()
        self.config = config
        self.storage = storage if storage is not None else MemoryStorage()
        self.topics = topics or Topics(orders=6, payments=3)
        self.coordinator = GroupCoordinator(config, self.storage, self.topics, self.clock)
        if load:
            self.coordinator.load()

    def advance(self, ms: int) -> None:
        """Move the clock, stopping at every deadline on the way as a real timer task would."""
        target = self.clock.now + ms
        while (deadline := self.coordinator.next_deadline()) is not None and deadline <= target:
            self.clock.now = max(self.clock.now, deadline)
            self.coordinator.on_time(self.clock.now)
        self.clock.now = target
        self.coordinator.on_time(target)

    def wait_for(self, *replies: Reply) -> None:
        """Let the initial rebalance delay run out (it restarts while members keep joining)."""
        for _ in range(100):
            if all(reply.body is not None for reply in replies):
                return
            self.advance(max(self.config.group_initial_rebalance_delay_ms, 1))
        raise AssertionError("the join phase never completed")

    def restart(self) -> Harness:
        """A new coordinator over the same storage (same clock), loaded."""
        return Harness(self.config, clock=self.clock, storage=self.storage, topics=self.topics)

    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        instance: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        version: int = 5,
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        client_id: str = "client",
    ) -> Reply:
        reply = Reply()
        request = JoinRequest(
            group,
            MemberIdentity(member_id, instance, client_id, "/127.0.0.1", rebalance_ms, session_ms),
            protocol_type=protocol_type,
            protocols=protocols if protocols is not None else [("range", subscription("orders"))],
            api_version=version,
        )
        self.coordinator.join_group(request, reply.append)
        return reply

    def join_new(self, group: str, **kwargs: Any) -> tuple[str, Reply]:
        """The v4+ two-step join: get a member id, then join with it."""
        first = self.join(group, **kwargs)
        assert first.error == 79, first.body  # MEMBER_ID_REQUIRED
        member_id = first.body["member_id"]
        return member_id, self.join(group, member_id, **kwargs)

    def sync(
        self,
        group: str,
        generation: int,
        member_id: str,
        assignments: dict[str, bytes] | None = None,
        *,
        instance: str | None = None,
        version: int = 3,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Reply:
        reply = Reply()
        request = SyncRequest(
            group,
            generation,
            member_id,
            instance,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments or {},
            api_version=version,
        )
        self.coordinator.sync_group(request, reply.append)
        return reply

    def heartbeat(self, group: str, generation: int, member_id: str, instance: str | None = None) -> int:
        return self.coordinator.heartbeat(group, generation, member_id, instance)

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
        version: int = 8,
        metadata: str | None = None,
        retention_ms: int = -1,
        producer: tuple[int, int] | None = None,
    ) -> dict[tuple[str, int], int]:
        """Commit (inside ``producer``'s transaction if given) and return the error code per
        (topic, partition)."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "committed_metadata": metadata,
                }
            )
        topics = [{"name": name, "partitions": parts} for name, parts in by_topic.items()]
        response = self.coordinator.commit_offsets(
            group, generation, member_id, instance, retention_ms, topics, version, producer
        )
        return {(t["name"], p["partition_index"]): p["error_code"] for t in response for p in t["partitions"]}

    def committed(self, group: str, topics: dict[str, list[int]] | None = None) -> dict[tuple[str, int], int]:
        request = None if topics is None else [{"name": n, "partition_indexes": p} for n, p in topics.items()]
        result = self.coordinator.fetch_offsets(group, request)
        assert result["error_code"] == 0, result
        return {
            (t["name"], p["partition_index"]): p["committed_offset"]
            for t in result["topics"]
            for p in t["partitions"]
        }

    def cg_heartbeat(
        self,
        group: str,
        member_id: str,
        epoch: int,
        *,
        topics: list[str] | None = None,
        regex: str | None = None,
        owned: dict[str, list[int]] | None = None,
        instance: str | None = None,
        assignor: str | None = None,
        rebalance_ms: int = -1,
    ) -> dict[str, Any]:
        """A ConsumerGroupHeartbeat; ``owned`` by topic name (None = unchanged)."""
        joining = epoch == 0
        request = HeartbeatRequest(
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=instance,
            rack_id=None,
            rebalance_timeout_ms=30_000 if joining and rebalance_ms == -1 else rebalance_ms,
            subscribed_topic_names=topics
            if topics is not None or regex
            else (["orders"] if joining else None),
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            owned={self.topics.id_of(t): ps for t, ps in owned.items()}
            if owned is not None
            else ({} if joining else None),
            client_id="cg-client",
            client_host="/127.0.0.1",
        )
        return self.coordinator.consumer_group_heartbeat(request)

    def assigned(self, response: dict[str, Any]) -> dict[str, list[int]]:
        """The heartbeat response's assignment by topic name."""
        assert response["assignment"] is not None, response
        return {
            self.topics.by_id(tp["topic_id"]).name: sorted(tp["partitions"])
            for tp in response["assignment"]["topic_partitions"]
        }

    def state(self, group: str) -> str:
        return self.coordinator.describe_groups([group])[0]["group_state"]

    def stable_group(self, group: str, *clients: str, **join_kwargs: Any) -> tuple[int, dict[str, str]]:
        """Bring ``clients`` into one Stable generation; returns (generation, client -> member id)."""
        members: dict[str, str] = {}
        replies: dict[str, Reply] = {}
        for client in clients:
            members[client], replies[client] = self.join_new(group, client_id=client, **join_kwargs)
        self.wait_for(*replies.values())
        first = next(iter(replies.values())).body
        generation, leader = first["generation_id"], first["leader"]
        for reply in replies.values():
            assert reply.error == 0, reply.body
        assignments = {member: f"assignment-of-{client}".encode() for client, member in members.items()}
        syncs = {
            client: self.sync(group, generation, member, assignments if member == leader else None)
            for client, member in members.items()
        }
        for reply in syncs.values():
            assert reply.error == 0, reply.body
        assert self.state(group) == "Stable"
        return generation, members


@pytest.fixture
def config() -> CoordinatorConfig:
    """Kafka's defaults, except that streams groups assign at once (as the compat suite's
    brokers do); tests/coordinator/test_streams_assignment_delay.py covers the delays."""
    return CoordinatorConfig(
        group_initial_rebalance_delay_ms=3000,
        streams_initial_rebalance_delay_ms=0,
        streams_assignment_interval_ms=0,
    )


@pytest.fixture
def h(config: CoordinatorConfig) -> Harness:
    return Harness(config)

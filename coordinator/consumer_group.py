"""The data model of a KIP-848 consumer group and the reconciliation of one member.

Three epochs drive the consumer protocol.  The *group epoch* goes up whenever membership or
subscriptions change; the *assignment epoch* says which group epoch the target assignment was
computed for; each *member epoch* says which target the member has caught up with.  A member
moves towards its target in steps (Kafka's ``CurrentAssignmentBuilder``): it first gives up
partitions it must revoke (UNREVOKED_PARTITIONS, same epoch), then takes the new epoch and
the partitions that are free, waiting (UNRELEASED_PARTITIONS) for those another member still
holds.  A partition is never owned by two members at once.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from coordinator.assignors import Assignment, TopicId
from coordinator.classic_group import CONSUMER_PROTOCOL_TYPE, GroupError
from coordinator.records import OffsetAndMetadata
from wire.error_codes import ErrorCode

Owned = dict[TopicId, list[int]] | None
"""The partitions a member reports owning in its heartbeat, by topic (None: unchanged since the last)."""
OwnerEpochs = dict[tuple[TopicId, int], int]
"""The epoch of the member that still owns each assigned partition, for moves between members."""

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(frozen=True)
class ConsumerMember:
    """One member of a consumer group, as of its last heartbeat (immutable: replaced on change)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def with_epoch(
        self, epoch: int, state: MemberState, assigned: Assignment, pending_revocation: Assignment
    ) -> ConsumerMember:
        return dataclasses.replace(
            self,
            member_epoch=epoch,
            previous_member_epoch=self.member_epoch,
            state=state,
            assigned=assigned,
            pending_revocation=pending_revocation,
        )

    def held_partitions(self) -> Iterator[tuple[TopicId, int]]:
        """Every partition the member holds: assigned to it, or still being revoked from it."""
        for assignment in (self.assigned, self.pending_revocation):
            for topic, partitions in assignment.items():
                for partition in partitions:
                    yield topic, partition


def owns_any(owned: Owned, partitions: Assignment) -> bool:
    """Whether the member still reports owning one of ``partitions`` (None: unknown, assume so)."""
    if owned is None:
        return True
    return any(p in partitions.get(topic, ()) for topic, ps in owned.items() for p in ps)


def reconcile(
    member: ConsumerMember, assignment_epoch: int, target: Assignment, owner_epoch: OwnerEpochs, owned: Owned
) -> ConsumerMember:
    """The member's next step towards ``target`` (Kafka's ``CurrentAssignmentBuilder``)."""
    revoking_epoch = member.member_epoch
    if member.state is MemberState.STABLE and member.member_epoch == assignment_epoch:
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        revoking_epoch += 1
    return _next_assignment(member, revoking_epoch, assignment_epoch, target, owner_epoch, owned)


def _next_assignment(
    member: ConsumerMember,
    revoking_epoch: int,
    assignment_epoch: int,
    target: Assignment,
    owner_epoch: OwnerEpochs,
    owned: Owned,
) -> ConsumerMember:
    kept: Assignment = {}
    revoking: Assignment = {}
    pending: dict[TopicId, set[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        if current & wanted:
            kept[topic] = current & wanted
        if current - wanted:
            revoking[topic] = current - wanted
        free = set()
        for partition in wanted - current:
            if owner_epoch.get((topic, partition), -1) == -1:
                free.add(partition)
            else:
                unreleased = True
        if free:
            pending[topic] = free
    if revoking and owns_any(owned, revoking):
        return member.with_epoch(
            revoking_epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=kept, pending_revocation=revoking
        )
    assigned = {
        topic: frozenset(kept.get(topic, frozenset()) | pending.get(topic, set()))
        for topic in {*kept, *pending}
    }
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(assignment_epoch, state=state, assigned=assigned, pending_revocation={})


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(eq=False)
class ConsumerGroup:
    """A consumer group's members, epochs and target assignment."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # Which member epoch holds each partition (assigned or still being revoked).
    owner_epoch: OwnerEpochs = field(default_factory=dict)
    # Subscribed topic name -> (topic id, partition count); a change bumps the group epoch.
    subscription_metadata: dict[str, tuple[TopicId, int]] = field(default_factory=dict)
    dead: bool = False

    protocol_type = CONSUMER_PROTOCOL_TYPE

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    @property
    def is_empty(self) -> bool:
        return not self.members

    def put_member(self, member: ConsumerMember) -> None:
        """Add or update a member, keeping the partition ownership index in step."""
        self.remove_member(member.member_id, keep_target=True)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for held in member.held_partitions():
            self.owner_epoch[held] = member.member_epoch

    def remove_member(self, member_id: str, keep_target: bool = False) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        for held in member.held_partitions():
            self.owner_epoch.pop(held, None)
        if not keep_target:
            self.target.pop(member_id, None)
        return member

    def subscribed_topic_names(self) -> set[str]:
        return {topic for member in self.members.values() for topic in member.subscribed_topic_names}

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members asked for, else the broker's first one."""
        votes = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return votes.most_common(1)[0][0] if votes else default

    # --- offsets (Kafka's Group interface) -----------------------------------------------

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        member_epoch: int,
        api_version: int,
        transactional: bool = False,
    ) -> None:
        """A member commits under its current epoch (OffsetCommit v9+).  A transactional commit
        (TxnOffsetCommit, any version: the producer passes the consumer's group metadata) with a
        wrong epoch is ILLEGAL_GENERATION, as Kafka answers it."""
        if member_epoch < 0 and not self.members:
            return
        if transactional and member_epoch < 0 and not member_id and group_instance_id is None:
            return  # TxnOffsetCommit validates the member only if the producer names one
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if api_version < 9 and not transactional:
            # Consumer-protocol members must commit with their member epoch (v9+).
            raise GroupError(ErrorCode.UNSUPPORTED_VERSION)
        if member_epoch != member.member_epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id or "")
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if member_epoch != member.member_epoch:
            raise GroupError(ErrorCode.STALE_MEMBER_EPOCH)

    def validate_offset_delete(self) -> None:
        """Consumer groups may always delete offsets of topics they do not subscribe to."""

    def validate_delete(self) -> None:
        if self.members:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def offset_expiry_base_ms(self, offset: OffsetAndMetadata) -> int | None:
        return offset.commit_timestamp_ms

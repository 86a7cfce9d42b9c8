"""The data model of a classic (JoinGroup/SyncGroup) group, as Kafka's ``ClassicGroup`` keeps it.

Only bookkeeping lives here: members, the static-member index, protocol votes, which members
still owe a JoinGroup or SyncGroup, and the state with its legal transitions.  The rules of
the protocol (when to rebalance, what to answer) are in :mod:`coordinator.classic_protocol`.
Parked JoinGroup/SyncGroup requests are held as *responders*: callables that deliver the
response body to whoever waits for it (a trio task in the broker, a list in the tests).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from coordinator.consumer_protocol import subscribed_topics
from coordinator.records import GroupMetadata, MemberIdentity, MemberMetadata, OffsetAndMetadata
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import JoinGroupResponse, JoinGroupResponseMembers, SyncGroupResponse

JoinResponder: TypeAlias = "Callable[[JoinGroupResponse], None]"
SyncResponder: TypeAlias = "Callable[[SyncGroupResponse], None]"
_Response = TypeVar("_Response", "JoinGroupResponse", "SyncGroupResponse")
Protocols = list[tuple[str, bytes]]

CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""


class GroupState(Enum):
    """Kafka's classic group states; the values are the names DescribeGroups reports."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class GroupError(Exception):
    """A request failed validation; ``code`` is the Kafka error code to answer with."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


@dataclass(eq=False)
class ClassicMember:
    """One member: its identity and timeouts, supported protocols and last assignment."""

    identity: MemberIdentity
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_responder: JoinResponder | None = None
    sync_responder: SyncResponder | None = None
    # A member that has not yet received a JoinGroup response cannot heartbeat, so its
    # "session" is the new-member join timeout instead (Kafka's isNew).
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_responder is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_responder is not None

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols with the same metadata in the same order (no rebalance needed)."""
        return list(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name, _ in self.protocols if name in candidates)

    def has_satisfied_heartbeat(self) -> bool:
        """A parked JoinGroup/SyncGroup counts as a heartbeat, except for new members."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)

    def park_join(self, responder: JoinResponder | None) -> None:
        """Hold ``responder`` until the join phase completes.

        A JoinGroup that replaces one still parked (a client retrying on a new connection)
        releases the old waiter with REBALANCE_IN_PROGRESS instead of leaving it hanging.
        """
        previous, self.join_responder = self.join_responder, responder
        if previous is not responder:
            _respond(previous, join_error(ErrorCode.REBALANCE_IN_PROGRESS, self.identity.member_id))

    def park_sync(self, responder: SyncResponder) -> None:
        """Hold ``responder`` until the leader's assignment arrives (see :meth:`park_join`)."""
        previous, self.sync_responder = self.sync_responder, responder
        if previous is not responder:
            _respond(previous, sync_error(ErrorCode.REBALANCE_IN_PROGRESS))

    def complete_join(self, response: JoinGroupResponse) -> bool:
        """Answer the parked JoinGroup, if any; whether there was one."""
        responder, self.join_responder = self.join_responder, None
        return _respond(responder, response)

    def complete_sync(self, response: SyncGroupResponse) -> bool:
        """Answer the parked SyncGroup, if any; whether there was one."""
        responder, self.sync_responder = self.sync_responder, None
        return _respond(responder, response)


def _respond(responder: Callable[[_Response], None] | None, response: _Response) -> bool:
    """Deliver ``response`` to a parked request; False when nothing was parked."""
    if responder is None:
        return False
    responder(response)
    return True


def join_error(code: ErrorCode, member_id: str = UNKNOWN_MEMBER_ID) -> JoinGroupResponse:
    """A JoinGroup response carrying only an error (Kafka leaves the other fields default)."""
    return {
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


def sync_error(code: ErrorCode) -> SyncGroupResponse:
    return {"error_code": code, "protocol_type": None, "protocol_name": None, "assignment": b""}


@dataclass(eq=False)
class ClassicGroup:
    """A classic group's state; mutated only by the protocol logic."""

    group_id: str
    state: GroupState
    state_timestamp_ms: int
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    previous_state: GroupState = GroupState.DEAD
    # Set when a member joins during the initial rebalance, to extend its delay.
    new_member_added: bool = False
    # Topics the members of a "consumer" group subscribe to, computed when a generation
    # starts; None when unknown (another protocol type, or unparsable metadata).
    subscribed_topics: set[str] | None = None
    _protocol_support: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_metadata(cls, group_id: str, value: GroupMetadata, now_ms: int) -> ClassicGroup:
        """Rebuild a group from its last persisted metadata (Stable if it had members)."""
        group = cls(
            group_id=group_id,
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            state_timestamp_ms=value.current_state_timestamp_ms
            if value.current_state_timestamp_ms >= 0
            else now_ms,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader,
        )
        for meta in value.members:
            group.add(
                ClassicMember(
                    identity=meta.identity,
                    protocol_type=value.protocol_type,
                    protocols=[(value.protocol or "", meta.subscription)],
                    assignment=meta.assignment,
                )
            )
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    def to_metadata(self, assignment: dict[str, bytes]) -> GroupMetadata:
        """What is persisted after a rebalance: enough to resume the generation after restart."""
        return GroupMetadata(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp_ms=self.state_timestamp_ms,
            members=tuple(
                MemberMetadata(
                    identity=member.identity,
                    subscription=member.metadata(self.protocol_name or ""),
                    assignment=assignment.get(member.identity.member_id, b""),
                )
                for member in self.members.values()
            ),
        )

    # --- state ---------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS_STATES[state]:
            raise AssertionError(f"group {self.group_id}: illegal transition {self.state} -> {state}")
        self.previous_state = self.state
        self.state = state
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # --- membership ----------------------------------------------------------------------

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        """Kafka's format: ``<instance id or client id>-<uuid>``."""
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: ClassicMember, join_responder: JoinResponder | None = None) -> None:
        if member.identity.group_instance_id is not None:
            self.static_members[member.identity.group_instance_id] = member.identity.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.identity.member_id
        self.members[member.identity.member_id] = member
        self._protocol_support.update(member.protocol_names())
        member.park_join(join_responder)
        self.pending_join_members.discard(member.identity.member_id)

    def remove(self, member_id: str) -> ClassicMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._protocol_support.subtract(member.protocol_names())
            if member.identity.group_instance_id is not None:
                self.static_members.pop(member.identity.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(
        self,
        member: ClassicMember,
        protocols: Protocols,
        rejoined_as: MemberIdentity,
        join_responder: JoinResponder | None,
    ) -> None:
        """A known member joined again: it takes the protocols and timeouts it now asks for,
        and keeps its ids, client id and host (Kafka's ``updateMember``)."""
        self._protocol_support.subtract(member.protocol_names())
        member.protocols = list(protocols)
        self._protocol_support.update(member.protocol_names())
        member.identity = dataclasses.replace(
            member.identity,
            rebalance_timeout_ms=rejoined_as.rebalance_timeout_ms,
            session_timeout_ms=rejoined_as.session_timeout_ms,
        )
        member.park_join(join_responder)

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> ClassicMember:
        """Give a static member a new member id, fencing whatever the old id had parked."""
        old = self.members.pop(old_member_id)
        old.complete_join(join_error(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        old.complete_sync(sync_error(ErrorCode.FENCED_INSTANCE_ID))
        identity = dataclasses.replace(old.identity, member_id=new_member_id)
        new = dataclasses.replace(old, identity=identity, is_new=False)
        self.members[new_member_id] = new
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return new

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ClassicMember:
        """The member, or UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID as Kafka's ``validateMember``."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
        member = self.members.get(member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.identity.member_id
                return True
        return False

    def rebalance_timeout_ms(self) -> int:
        """How long a rebalance may take: the largest rebalance timeout of any member."""
        return max((member.identity.rebalance_timeout_ms for member in self.members.values()), default=0)

    def awaiting_join_count(self) -> int:
        return sum(1 for member in self.members.values() if member.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_join_members

    # --- protocols -----------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocol_names: set[str]) -> bool:
        """Whether a member with these protocols may join (Kafka's ``supportsProtocols``)."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocol_names)
        return self.protocol_type == protocol_type and any(
            self._protocol_support[name] == len(self.members) for name in protocol_names
        )

    def select_protocol(self) -> str:
        """The protocol every member supports that most members prefer."""
        candidates = {name for name, count in self._protocol_support.items() if count == len(self.members)}
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return votes.most_common(1)[0][0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.subscribed_topics = self.compute_subscribed_topics()
        self.pending_sync_members.clear()

    def join_members(self) -> list[JoinGroupResponseMembers]:
        """The member list the leader receives in its JoinGroup response."""
        return [
            {
                "member_id": member.identity.member_id,
                "group_instance_id": member.identity.group_instance_id,
                "metadata": member.metadata(self.protocol_name or ""),
            }
            for member in self.members.values()
        ]

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members of a "consumer" group subscribe to, or None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            member_topics = subscribed_topics(member.metadata(self.protocol_name))
            if member_topics is None:
                return None
            topics |= member_topics
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a live member consumes ``topic`` (then its offsets are kept, KIP-496)."""
        if self.subscribed_topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in self.subscribed_topics

    # --- offsets (Kafka's Group interface) -----------------------------------------------

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        api_version: int,
        transactional: bool = False,
    ) -> None:
        """Who may commit: members of the current generation, or anyone while Empty.

        Generation -1 with no member id is a "simple" consumer (assign() + commit) or an
        admin tool; it may only commit while no member owns the group's partitions.  Every
        OffsetCommit version may commit to a classic group (``api_version`` matters only for
        consumer groups).  A transactional commit (TxnOffsetCommit) names a member only if its
        producer was given the consumer's group metadata, and is not refused while a rebalance
        completes, as in Kafka: it only takes effect when its transaction commits.
        """
        if self.is_in(GroupState.DEAD):
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and self.is_empty:
            return
        identified = generation_id >= 0 or bool(member_id) or group_instance_id is not None
        if transactional and not identified:
            return  # TxnOffsetCommit validates the member only if the producer names one
        if identified:
            self.validate_member(member_id, group_instance_id)
            if generation_id != self.generation_id:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        elif not self.is_empty:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if self.is_in(GroupState.COMPLETING_REBALANCE) and not transactional:
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)

    def validate_offset_delete(self) -> None:
        if self.is_in(GroupState.DEAD):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND)
        if not self.is_empty and self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def validate_delete(self) -> None:
        if self.is_in(GroupState.DEAD):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND)
        if not self.is_empty:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def offset_expiry_base_ms(self, offset: OffsetAndMetadata) -> int | None:
        """When ``offset``'s retention period started, or None if it cannot expire now.

        Offsets of an Empty group age from the moment the group became empty (KIP-211);
        a Stable consumer group's offsets of topics it no longer subscribes to age from
        their commit; offsets of a simple group (no protocol) always age from their commit.
        """
        if self.protocol_type is None:
            return offset.commit_timestamp_ms
        if self.is_empty:
            return self.state_timestamp_ms
        if (
            self.protocol_type == CONSUMER_PROTOCOL_TYPE
            and self.subscribed_topics is not None
            and self.is_in(GroupState.STABLE)
        ):
            return offset.commit_timestamp_ms
        return None

"""Share groups' membership (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe.

A share group's members do not own partitions: several members may be assigned one
partition and the partition's leader hands each record to one of them at a time (see
``share_partition.py``).  So membership is simpler than the consumer protocol's: no
revocation step, no reconciliation; a member takes its target assignment, and the target's
epoch, on its next heartbeat (Kafka's ``ShareGroupAssignmentBuilder``).  The server-side
assignor is Kafka's "simple" one for share groups: every subscribed partition gets at least one
member and every member at least one partition, balanced.

Kafka's rules are kept: a member chooses its own id (ShareGroupHeartbeat v1), joins with epoch
0, leaves with -1, is fenced on a wrong epoch and removed after the session timeout; the group
is at most ``group.share.max.size`` members.  As for consumer groups here, membership is not
persisted: after a coordinator restart members are told UNKNOWN_MEMBER_ID and rejoin, which for
a share group changes nothing a client sees (the in-flight state lives with the partitions).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, cast

from coordinator.assignors import Assignment, TopicId
from coordinator.classic_group import GroupError
from coordinator.consumer_heartbeat import described_assignment, described_error
from coordinator.group_protocol import GroupProtocol
from coordinator.offsets import TopicCatalog
from coordinator.records import OffsetAndMetadata
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        ShareGroupDescribeResponseGroups,
        ShareGroupDescribeResponseMembers,
        ShareGroupHeartbeatResponse,
    )

log = logging.getLogger(__name__)

SHARE_GROUP_TYPE = "share"
SHARE_PROTOCOL_TYPE = "share"
SHARE_ASSIGNOR = "simple"
LEAVE_EPOCH = -1


class ShareGroupState(Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    """A ShareGroupHeartbeat request; None fields mean "unchanged since last time"."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str
    client_host: str


@dataclass(slots=True)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)


@dataclass(eq=False)
class ShareGroup:
    """One share group: its members, their subscriptions and the target assignment."""

    group_id: str
    members: dict[str, ShareMember] = field(default_factory=dict)
    group_epoch: int = 0
    assignment_epoch: int = 0
    target: dict[str, Assignment] = field(default_factory=dict)
    # Subscribed topic name -> (topic id, partition count); a change bumps the group epoch.
    subscription_metadata: dict[str, tuple[TopicId, int]] = field(default_factory=dict)
    dead: bool = False

    protocol_type = SHARE_PROTOCOL_TYPE

    @property
    def state(self) -> ShareGroupState:
        if self.dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> set[str]:
        return {topic for member in self.members.values() for topic in member.subscribed_topic_names}

    # --- what the offset APIs ask of any group (Kafka's Group interface) -------------------
    # A share group has no committed offsets: its progress is the share-partitions' state,
    # read and changed through the share-group offset APIs. Kafka answers the consumer offset
    # APIs for it as for a group that does not exist.

    def validate_offset_commit(
        self,
        member_id: str,
        group_instance_id: str | None,
        member_epoch: int,
        api_version: int,
        transactional: bool = False,
    ) -> None:
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND)

    def validate_offset_delete(self) -> None:
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND)

    def validate_delete(self) -> None:
        if self.members:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP)

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def offset_expiry_base_ms(self, offset: OffsetAndMetadata) -> int | None:
        return None


def simple_assignment(member_ids: list[str], partitions: dict[TopicId, int]) -> dict[str, Assignment]:
    """Kafka's share-group "simple" assignor for members subscribed to the same topics.

    With at least as many partitions as members, partitions are dealt out round-robin (each
    partition to one member); with more members than partitions, members are dealt out over
    the partitions (each member to one partition, a partition shared by several members).
    Members and partitions are taken in a fixed order, so an unchanged group keeps its
    assignment.
    """
    members = sorted(member_ids)
    every = [(topic, index) for topic, count in sorted(partitions.items()) for index in range(count)]
    assignment: dict[str, dict[TopicId, set[int]]] = {member: {} for member in members}
    if not members or not every:
        return {member: {} for member in members}
    if len(every) >= len(members):
        pairs = [(members[i % len(members)], tp) for i, tp in enumerate(every)]
    else:
        pairs = [(member, every[i % len(every)]) for i, member in enumerate(members)]
    for member, (topic, index) in pairs:
        assignment[member].setdefault(topic, set()).add(index)
    return {member: {t: frozenset(p) for t, p in topics.items()} for member, topics in assignment.items()}


class ShareHeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def share_heartbeat_response(
    code: ErrorCode, message: str | None = None, member_id: str | None = None, member_epoch: int = 0
) -> ShareGroupHeartbeatResponse:
    return {
        "error_code": code,
        "error_message": message,
        "member_id": member_id,
        "member_epoch": member_epoch,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }


def share_described_error(
    group_id: str, code: ErrorCode, message: str | None = None
) -> ShareGroupDescribeResponseGroups:
    """A ShareGroupDescribe entry carrying only an error: the same fields as ConsumerGroupDescribe's."""
    return cast("ShareGroupDescribeResponseGroups", described_error(group_id, code, message))


@dataclass(eq=False)
class ShareGroups(GroupProtocol[ShareGroup]):
    """Runs share-group membership over the coordinator's groups."""

    kind = ShareGroup
    _topics: TopicCatalog
    # Group configs by group id (Kafka's key names), read at each use.
    group_configs: dict[str, dict[str, int]] = field(default_factory=dict)

    def _setting(self, group_id: str, key: str, default: int) -> int:
        return self.group_configs.get(group_id, {}).get(key, default)

    def heartbeat(self, request: ShareHeartbeat) -> ShareGroupHeartbeatResponse:
        try:
            _validate(request)
            if request.member_epoch == LEAVE_EPOCH:
                return self._leave(request)
            return self._heartbeat(request)
        except ShareHeartbeatError as error:
            return share_heartbeat_response(error.code, error.message)

    def _heartbeat(self, request: ShareHeartbeat) -> ShareGroupHeartbeatResponse:
        joining = request.member_epoch == 0
        group = self._group_to_join(request.group_id, request.member_id, joining)
        member = group.members.get(request.member_id)
        if member is None:
            if not joining:
                raise ShareHeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {request.group_id}.",
                )
            if len(group.members) >= self._config.share_max_size:
                raise ShareHeartbeatError(
                    ErrorCode.GROUP_MAX_SIZE_REACHED,
                    f"The share group has reached its maximum capacity of {self._config.share_max_size} members.",
                )
            member = ShareMember(request.member_id)
            group.members[member.member_id] = member
        elif not joining and request.member_epoch != member.member_epoch:
            raise ShareHeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a {'smaller' if request.member_epoch < member.member_epoch else 'larger'} "
                f"member epoch ({request.member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        previous = dict(member.assigned)
        member.client_id, member.client_host = request.client_id, request.client_host
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        changed = False
        if request.subscribed_topic_names is not None:
            subscribed = frozenset(request.subscribed_topic_names)
            changed = subscribed != member.subscribed_topic_names
            member.subscribed_topic_names = subscribed
        self._refresh(group, changed)
        member.member_epoch = group.assignment_epoch
        member.assigned = group.target.get(member.member_id, {})
        self._schedule_session_timeout(group.group_id, member.member_id)
        response = share_heartbeat_response(ErrorCode.NONE, None, member.member_id, member.member_epoch)
        response["heartbeat_interval_ms"] = self._setting(
            group.group_id, "share.heartbeat.interval.ms", self._config.share_heartbeat_interval_ms
        )
        if joining or member.assigned != previous:
            response["assignment"] = {
                "topic_partitions": [
                    {"topic_id": topic, "partitions": sorted(partitions)}
                    for topic, partitions in sorted(member.assigned.items())
                ]
            }
        return response

    def _group_to_join(self, group_id: str, member_id: str, joining: bool) -> ShareGroup:
        group = self.group(group_id)
        if group is not None:
            return group
        if group_id in self._groups:
            raise ShareHeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not joining:
            # Kafka says GROUP_ID_NOT_FOUND, which clients treat as fatal; here the group is only
            # unknown because membership is not persisted (a restart, a new coordinator), so the
            # member is told to rejoin.
            raise ShareHeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Group {group_id} has no member {member_id}."
            )
        group = ShareGroup(group_id)
        self._groups[group_id] = group
        return group

    def _refresh(self, group: ShareGroup, changed: bool) -> None:
        """Bump the group epoch once when membership or subscriptions ``changed`` or the
        subscribed topics changed size, then recompute the target assignment."""
        metadata = {}
        for name in group.subscribed_topic_names():
            info = self._topics.get(name)
            if info is not None:
                metadata[name] = (info.topic_id, info.partitions)
        if changed or metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            partitions = dict(metadata.values())
            group.target = simple_assignment(list(group.members), partitions)
            group.assignment_epoch = group.group_epoch
            log.info("share group %s: epoch %d", group.group_id, group.group_epoch)

    def _leave(self, request: ShareHeartbeat) -> ShareGroupHeartbeatResponse:
        group = self.group(request.group_id)
        if group is None or request.member_id not in group.members:
            raise ShareHeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {request.member_id} is not a member of group {request.group_id}.",
            )
        self.remove_member(group, request.member_id)
        return share_heartbeat_response(ErrorCode.NONE, None, request.member_id, LEAVE_EPOCH)

    def remove_member(self, group: ShareGroup, member_id: str) -> None:
        if group.members.pop(member_id, None) is None:
            return
        self._timer.cancel(("share-session", group.group_id, member_id))
        group.target.pop(member_id, None)
        self._refresh(group, changed=True)
        log.info("share group %s: member %s left, epoch %d", group.group_id, member_id, group.group_epoch)

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        def expire() -> None:
            group = self.group(group_id)
            if group is not None:
                log.info("share group %s: member %s session timed out", group_id, member_id)
                self.remove_member(group, member_id)

        timeout = self._setting(group_id, "share.session.timeout.ms", self._config.share_session_timeout_ms)
        self._timer.schedule(("share-session", group_id, member_id), self._clock() + timeout, expire)

    def describe(self, group_id: str) -> ShareGroupDescribeResponseGroups:
        group = self.group(group_id)
        if group is None:
            what = "not found" if self._groups.get(group_id) is None else "is not a share group"
            return share_described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} {what}.")
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "group_id": group_id,
            "group_state": group.state.value,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": SHARE_ASSIGNOR,
            "members": [self._describe_member(m) for m in group.members.values()],
        }

    def _describe_member(self, member: ShareMember) -> ShareGroupDescribeResponseMembers:
        return {
            "member_id": member.member_id,
            "rack_id": member.rack_id,
            "member_epoch": member.member_epoch,
            "client_id": member.client_id,
            "client_host": member.client_host,
            "subscribed_topic_names": sorted(member.subscribed_topic_names),
            "assignment": described_assignment(self._topics, member.assigned),
        }


def _validate(request: ShareHeartbeat) -> None:
    """Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid``."""

    def invalid(message: str) -> ShareHeartbeatError:
        return ShareHeartbeatError(ErrorCode.INVALID_REQUEST, message)

    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if request.rack_id == "":
        raise invalid("RackId can't be empty.")
    if not request.member_id:
        raise invalid("MemberId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise invalid("SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_EPOCH:
        raise invalid("MemberEpoch is invalid.")

"""The KIP-848 consumer protocol: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

A port of the rules of Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``: each heartbeat
updates the member, bumps the group epoch when subscriptions (or the subscribed topics'
partition counts) change, recomputes the target assignment with a server-side assignor when
the group epoch is ahead of it, and moves the member one reconciliation step towards its
target.  Sessions and revocations are bounded by timers.

Unlike Kafka, consumer group membership is not persisted in ``__consumer_offsets`` (committed
offsets are): after a restart, members heartbeating into a group the coordinator does not
know are answered UNKNOWN_MEMBER_ID, on which clients drop their partitions and rejoin with
epoch 0 — a rebalance instead of Kafka's seamless failover.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coordinator.assignors import ASSIGNORS, Assignment, MemberSpec, TopicId
from coordinator.consumer_group import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Owned,
    reconcile,
)
from coordinator.group_protocol import GroupProtocol
from coordinator.offsets import TopicCatalog
from coordinator.topic_regex import InvalidTopicRegex, compile_topic_regex, matches
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        ConsumerGroupDescribeResponseAssignment,
        ConsumerGroupDescribeResponseGroups,
        ConsumerGroupDescribeResponseMembers,
        ConsumerGroupDescribeResponseTopicPartitions,
        ConsumerGroupHeartbeatResponse,
    )

log = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
CONSUMER_MEMBER_TYPE = 1


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat request; None fields mean "unchanged since last time"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: Owned
    client_id: str
    client_host: str


def heartbeat_response(
    member_id: str | None,
    member_epoch: int,
    heartbeat_interval_ms: int = 0,
    *,
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> ConsumerGroupHeartbeatResponse:
    """A ConsumerGroupHeartbeat response without an assignment (added when the member needs one)."""
    return {
        "error_code": error_code,
        "error_message": error_message,
        "member_id": member_id,
        "member_epoch": member_epoch,
        "heartbeat_interval_ms": heartbeat_interval_ms,
        "assignment": None,
    }


def described_error(
    group_id: str, code: ErrorCode, message: str | None = None
) -> ConsumerGroupDescribeResponseGroups:
    """A ConsumerGroupDescribe entry carrying only an error (Kafka leaves the rest default)."""
    return {
        "group_id": group_id,
        "error_code": code,
        "error_message": message,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
    }


@dataclass(eq=False)
class ConsumerGroups(GroupProtocol[ConsumerGroup]):
    """Runs the consumer protocol over the coordinator's groups; ``_topics`` resolves what
    members subscribe to."""

    kind = ConsumerGroup
    _topics: TopicCatalog
    # KIP-848 group configs (GROUP config resources) by group id: Kafka's key names
    # ("consumer.session.timeout.ms") to values, read at each use so a change applies at once.
    group_configs: dict[str, dict[str, int]] = field(default_factory=dict)

    def _group_setting(self, group_id: str, key: str, default: int) -> int:
        return self.group_configs.get(group_id, {}).get(key, default)

    # --- heartbeat -----------------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request)
            return self._heartbeat(request)
        except HeartbeatError as error:
            return heartbeat_response(None, 0, error_code=error.code, error_message=error.message)

    def _validate(self, request: HeartbeatRequest) -> None:
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not request.group_id:
            raise invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if epoch > 0 or epoch == LEAVE_EPOCH:
            if not request.member_id:
                raise invalid("MemberId can't be empty.")
        elif epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.owned is None or request.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
                )
        elif epoch == STATIC_LEAVE_EPOCH:
            if not request.member_id:
                raise invalid("MemberId can't be empty.")
            if request.instance_id is None:
                raise invalid("InstanceId can't be null.")
        else:
            raise invalid("MemberEpoch is invalid.")
        if request.server_assignor is not None and request.server_assignor not in self._assignors():
            raise HeartbeatError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {request.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self._assignors())}.",
            )
        if request.subscribed_topic_regex is not None:
            try:
                compile_topic_regex(request.subscribed_topic_regex)
            except InvalidTopicRegex as error:
                raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION, str(error)) from None

    def _assignors(self) -> list[str]:
        return [name for name in self._config.consumer_assignors if name in ASSIGNORS]

    def _heartbeat(self, request: HeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        joining = request.member_epoch == 0
        group = self.group(request.group_id)
        if group is None:
            if not joining:
                # Kafka says GROUP_ID_NOT_FOUND, which clients treat as fatal; here the group
                # is only unknown because membership is not persisted, so let the member rejoin.
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is unknown.")
            if request.group_id in self._groups:
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group."
                )
            group = self.kind(request.group_id)
            self._groups[request.group_id] = group
        member_id = request.member_id or str(uuid.uuid4())
        if len(group.members) >= self._config.consumer_max_size and member_id not in group.members:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self._config.consumer_max_size} members.",
            )
        member = self._current_member(group, member_id, request)
        updated = dataclasses.replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms
            if request.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            server_assignor=request.server_assignor or member.server_assignor,
            subscribed_topic_names=frozenset(request.subscribed_topic_names)
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=request.subscribed_topic_regex
            if request.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            client_id=request.client_id,
            client_host=request.client_host,
        )
        subscription_changed = (
            updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.subscribed_topic_regex != member.subscribed_topic_regex
        )
        group.put_member(updated)
        metadata = self._subscription_metadata(group)
        if subscription_changed or metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            group.group_epoch += 1
            log.info("consumer group %s: epoch %d", group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        reconciled = reconcile(
            updated, group.assignment_epoch, group.target.get(member_id, {}), group.owner_epoch, request.owned
        )
        group.put_member(reconciled)
        self._schedule_session_timeout(group.group_id, member_id)
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            if reconciled != updated:
                self._schedule_rebalance_timeout(group.group_id, reconciled)
        else:
            self._timer.cancel(("revoke", group.group_id, member_id))
        full_request = joining or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        response = heartbeat_response(
            member_id,
            reconciled.member_epoch,
            self._heartbeat_interval_ms(group.group_id),
        )
        if full_request or reconciled.assigned != member.assigned:
            response["assignment"] = {
                "topic_partitions": [
                    {"topic_id": topic, "partitions": sorted(partitions)}
                    for topic, partitions in sorted(reconciled.assigned.items())
                ]
            }
        return response

    def _current_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest
    ) -> ConsumerMember:
        """The member as the coordinator knows it, after epoch and static-membership checks."""
        joining = request.member_epoch == 0
        instance_id = request.instance_id
        if instance_id is not None:
            existing_id = group.static_members.get(instance_id)
            if joining:
                if existing_id is None or existing_id == member_id:
                    return group.members.get(member_id) or ConsumerMember(member_id)
                existing = group.members[existing_id]
                if existing.member_epoch != STATIC_LEAVE_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {instance_id} cannot join the group "
                        f"because the instance id is owned by {existing_id} member.",
                    )
                # A static member coming back (KIP-345 for KIP-848): it inherits the previous
                # incarnation's partitions and target under its new member id.
                target = group.target.get(existing_id, {})
                group.remove_member(existing_id)
                self._cancel_timers(group.group_id, existing_id)
                group.target[member_id] = target
                return dataclasses.replace(
                    existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
                )
            if existing_id is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if existing_id != member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} was fenced by member {existing_id}.",
                )
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            return ConsumerMember(member_id)
        if not joining:
            self._check_epoch(member, request)
        return member

    @staticmethod
    def _check_epoch(member: ConsumerMember, request: HeartbeatRequest) -> None:
        received = request.member_epoch
        if received > member.member_epoch:
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({received}) than the one known by "
                f"the group coordinator ({member.member_epoch}). The member must abandon all its partitions "
                "and rejoin.",
            )
        if received < member.member_epoch:
            # The response that bumped the epoch may have been lost: accept the previous epoch
            # if the member owns no more than it is assigned.
            owned = request.owned or {}
            subset = all(set(ps) <= member.assigned.get(topic, frozenset()) for topic, ps in owned.items())
            if received != member.previous_member_epoch or not subset:
                raise HeartbeatError(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({received}) than the one known "
                    f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                    "partitions and rejoin.",
                )

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[TopicId, int]]:
        """Existing topics any member subscribes to (by name or regex), with their size."""
        names = set(group.subscribed_topic_names())
        patterns = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        if patterns:
            for topic in self._topics.all():
                if topic.name not in INTERNAL_TOPICS and any(matches(p, topic.name) for p in patterns):
                    names.add(topic.name)
        metadata = {}
        for name in names:
            info = self._topics.get(name)
            if info is not None:
                metadata[name] = (info.topic_id, info.partitions)
        return metadata

    def _member_topics(self, member: ConsumerMember, group: ConsumerGroup) -> frozenset[TopicId]:
        topics = set()
        for name, (topic_id, _) in group.subscription_metadata.items():
            if name in member.subscribed_topic_names or (
                member.subscribed_topic_regex and matches(member.subscribed_topic_regex, name)
            ):
                topics.add(topic_id)
        return frozenset(topics)

    def _compute_target(self, group: ConsumerGroup) -> None:
        name = group.preferred_assignor(self._assignors()[0])
        specs = [
            MemberSpec(
                member_id=m.member_id,
                instance_id=m.instance_id,
                topics=self._member_topics(m, group),
                current=group.target.get(m.member_id, {}),
            )
            for m in group.members.values()
        ]
        partitions = {topic_id: count for topic_id, count in group.subscription_metadata.values()}
        group.target = ASSIGNORS[name](specs, partitions)
        group.assignment_epoch = group.group_epoch
        log.info(
            "consumer group %s: target assignment for epoch %d (%s)", group.group_id, group.group_epoch, name
        )

    # --- leaving, fencing and timers -----------------------------------------------------

    def _leave(self, request: HeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        group = self.group(request.group_id)
        if group is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is unknown.")
        response = heartbeat_response(request.member_id, request.member_epoch)
        if request.instance_id is None:
            if request.member_id not in group.members:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is unknown.")
            self.fence(group, request.member_id)
            return response
        existing_id = group.static_members.get(request.instance_id)
        if existing_id is None:
            raise HeartbeatError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown."
            )
        if existing_id != request.member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID)
        if request.member_epoch == STATIC_LEAVE_EPOCH:
            # A static member leaving "for now" keeps its partitions until its session ends.
            member = group.members[existing_id]
            group.put_member(
                dataclasses.replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
            )
            return response
        self.fence(group, existing_id)
        return response

    def fence(self, group: ConsumerGroup, member_id: str) -> None:
        """Remove a member; the others get a new target assignment on their next heartbeat."""
        if group.remove_member(member_id) is None:
            return
        self._cancel_timers(group.group_id, member_id)
        group.subscription_metadata = self._subscription_metadata(group)
        group.group_epoch += 1
        log.info("consumer group %s: member %s left, epoch %d", group.group_id, member_id, group.group_epoch)

    def _fence_by_id(self, group_id: str, member_id: str, epoch: int | None = None) -> None:
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is not None and member is not None and (epoch is None or member.member_epoch == epoch):
            log.info("consumer group %s: fencing member %s", group_id, member_id)
            self.fence(group, member_id)

    def _heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_setting(
            group_id, "consumer.heartbeat.interval.ms", self._config.consumer_heartbeat_interval_ms
        )

    def _session_timeout_ms(self, group_id: str) -> int:
        return self._group_setting(
            group_id, "consumer.session.timeout.ms", self._config.consumer_session_timeout_ms
        )

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self._timer.schedule(
            ("session", group_id, member_id),
            self._clock() + self._session_timeout_ms(group_id),
            lambda: self._fence_by_id(group_id, member_id),
        )

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerMember) -> None:
        """A member that does not revoke partitions within its rebalance timeout is fenced."""
        epoch = member.member_epoch
        self._timer.schedule(
            ("revoke", group_id, member.member_id),
            self._clock() + member.rebalance_timeout_ms,
            lambda: self._fence_by_id(group_id, member.member_id, epoch),
        )

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self._timer.cancel(("session", group_id, member_id))
        self._timer.cancel(("revoke", group_id, member_id))

    # --- describe ------------------------------------------------------------------------

    def describe(self, group_id: str) -> ConsumerGroupDescribeResponseGroups:
        group = self.group(group_id)
        if group is None:
            what = "not found" if self._groups.get(group_id) is None else "is not a consumer group"
            return described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} {what}.")
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "group_id": group_id,
            "group_state": group.state.value,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": group.preferred_assignor(self._assignors()[0]),
            "members": [self._describe_member(group, m) for m in group.members.values()],
        }

    def _describe_member(
        self, group: ConsumerGroup, member: ConsumerMember
    ) -> ConsumerGroupDescribeResponseMembers:
        return {
            "member_id": member.member_id,
            "instance_id": member.instance_id,
            "rack_id": member.rack_id,
            "member_epoch": member.member_epoch,
            "client_id": member.client_id,
            "client_host": member.client_host,
            "subscribed_topic_names": sorted(member.subscribed_topic_names),
            "subscribed_topic_regex": member.subscribed_topic_regex,
            "assignment": described_assignment(self._topics, member.assigned),
            "target_assignment": described_assignment(self._topics, group.target.get(member.member_id, {})),
            "member_type": CONSUMER_MEMBER_TYPE,
        }


def described_assignment(
    topics: TopicCatalog, assignment: Assignment
) -> ConsumerGroupDescribeResponseAssignment:
    """An assignment as the group-describing APIs show it: topic ids with their names."""
    entries: list[ConsumerGroupDescribeResponseTopicPartitions] = []
    for topic_id, partitions in sorted(assignment.items()):
        info = topics.by_id(topic_id)
        entries.append(
            {"topic_id": topic_id, "topic_name": info.name if info else "", "partitions": sorted(partitions)}
        )
    return {"topic_partitions": entries}

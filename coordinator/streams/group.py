"""Streams groups (KIP-1071): Kafka Streams' own rebalance protocol, StreamsGroupHeartbeat and
StreamsGroupDescribe.

A streams group is the consumer protocol (``consumer_heartbeat.py``) with tasks in place of
partitions: a task is (subtopology, partition), the broker assigns tasks, and a member gives
a task up (it stops reporting it among its active tasks) before another member gets it, under
the same three epochs. So this module reuses that machinery and adds what Streams needs: the
topology (``topology.py``), the tasks it makes against the topics that exist, a status
instead of tasks while the topology cannot run (missing source or internal topics, wrongly
partitioned topics), the members' process ids, endpoints and tags,
and the ``group.streams.*`` settings.

Tasks travel as the consumer machinery's (topic id -> partitions) assignments, keyed by the
subtopology id's bytes, so a task moves between members only after its owner gave it up. Kafka's
sticky assignor (``task_assignor.py``) computes the target: active tasks, and standby tasks
(``streams.num.standby.replicas``, 0 by default) which a member gets without a revocation step
(a standby holds no partition); warm-up tasks are not assigned, as in Kafka 4.3. Members with a
user endpoint (``application.server``) learn which partitions every endpoint serves
(``endpoints.py``). The group (epochs, topology, members and their tasks) is persisted in
``__consumer_offsets`` as Kafka writes it (``records.py``), so a coordinator taking over its
partition serves it where it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from coordinator.assignors import Assignment, TopicId
from coordinator.consumer_group import ConsumerGroup, ConsumerMember
from coordinator.consumer_heartbeat import ConsumerGroups, HeartbeatError, HeartbeatRequest, described_error
from coordinator.streams.endpoints import endpoint_partitions
from coordinator.streams.task_assignor import TaskMember, assign_tasks
from coordinator.streams.topology import (
    ConfiguredTopology,
    InternalTopic,
    StreamsStatus,
    StreamsTopology,
    configure,
)
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        StreamsGroupDescribeResponseAssignment,
        StreamsGroupDescribeResponseGroups,
        StreamsGroupDescribeResponseMembers,
        StreamsGroupDescribeResponseTopology,
        StreamsGroupHeartbeatRequestStateChangelogTopics,
        StreamsGroupHeartbeatResponse,
        StreamsGroupHeartbeatResponseActiveTasks,
        StreamsGroupHeartbeatResponsePartitionsByUserEndpoint,
    )

log = logging.getLogger(__name__)

STREAMS_GROUP_TYPE = "streams"
INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DELAY = "Assignment delayed due to the configured assignment interval."
STREAMS_PROTOCOL_TYPE = "streams"
ACCEPTABLE_RECOVERY_LAG = 10_000
TASK_OFFSET_INTERVAL_MS = 60_000


@dataclass(slots=True)
class StreamsMemberInfo:
    """What a Streams member says of itself besides its tasks."""

    process_id: str = ""
    topology_epoch: int = -1
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class StreamsHeartbeat:
    """A StreamsGroupHeartbeat request; None fields mean "unchanged since last time"."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    topology: StreamsTopology | None
    active_tasks: dict[str, list[int]] | None
    process_id: str | None
    user_endpoint: tuple[str, int] | None
    client_tags: tuple[tuple[str, str], ...] | None
    shutdown_application: bool
    client_id: str
    client_host: str
    standby_or_warmup_sent: bool = False
    endpoint_information_epoch: int = -1


@dataclass(eq=False)
class StreamsGroup(ConsumerGroup):
    """A consumer group underneath, plus the topology and what it makes of the topics."""

    topology: StreamsTopology | None = None
    configured: ConfiguredTopology = field(default_factory=ConfiguredTopology)
    info: dict[str, StreamsMemberInfo] = field(default_factory=dict)
    shutdown_requested: bool = False
    # Standby tasks by member (``streams.num.standby.replicas``), and what each was last told.
    standby: dict[str, Assignment] = field(default_factory=dict)
    standby_sent: dict[str, Assignment] = field(default_factory=dict)
    # Bumped whenever a member with a user endpoint gets tasks (on joining, or when the tasks
    # it holds change): members that saw another epoch get every endpoint's partitions again.
    endpoint_epoch: int = 0
    # When the target assignment may next be computed (the initial rebalance delay of a new
    # group, then the assignment interval after each), and why it waits (a heartbeat status).
    assign_after_ms: int | None = None
    assignment_delayed: str | None = None

    protocol_type = STREAMS_PROTOCOL_TYPE


def task_key(subtopology_id: str) -> TopicId:
    return subtopology_id.encode()


def _by_subtopology(assignment: Assignment) -> dict[str, frozenset[int]]:
    return {key.decode(): partitions for key, partitions in assignment.items()}


def _by_key(tasks: dict[str, frozenset[int]]) -> Assignment:
    return {task_key(sub): partitions for sub, partitions in tasks.items() if partitions}


def tasks_field(assignment: Assignment) -> list[StreamsGroupHeartbeatResponseActiveTasks]:
    return [
        {"subtopology_id": key.decode(), "partitions": sorted(partitions)}
        for key, partitions in sorted(assignment.items())
    ]


@dataclass(eq=False)
class StreamsGroups(ConsumerGroups):
    """The streams protocol over the coordinator's groups."""

    kind = StreamsGroup
    persist: Callable[[str], ErrorCode] = lambda _group_id: ErrorCode.NONE
    """Writes the group's records (set by the coordinator, ``coordinator/streams/records.py``);
    called here after what changes a group off a heartbeat: a member fenced by a timer."""

    def adopt(self, group: StreamsGroup) -> None:
        """Serve ``group``, rebuilt from its records (a coordinator taking over its partition):
        its tasks worked out against the topics as they are now, and each member's session
        timer started, so that members that do not come back are fenced as if never away."""
        group.subscription_metadata = self._subscription_metadata(group)
        self._groups[group.group_id] = group
        for member_id in group.members:
            self._schedule_session_timeout(group.group_id, member_id)

    def _fence_by_id(self, group_id: str, member_id: str, epoch: int | None = None) -> None:
        super()._fence_by_id(group_id, member_id, epoch)
        self.persist(group_id)

    # --- what differs from the consumer protocol ------------------------------------------

    def _heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_setting(
            group_id, "streams.heartbeat.interval.ms", self._config.streams_heartbeat_interval_ms
        )

    def _session_timeout_ms(self, group_id: str) -> int:
        return self._group_setting(
            group_id, "streams.session.timeout.ms", self._config.streams_session_timeout_ms
        )

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, tuple[TopicId, int]]:
        """The tasks of each subtopology, while the topology can run (none otherwise)."""
        if not isinstance(group, StreamsGroup) or group.topology is None:
            return {}
        group.configured = configure(group.topology, self._partition_counts(group.topology))
        if not group.configured.ready or self._missing(group.configured):
            return {}  # no tasks until the topology can run
        return {sub: (task_key(sub), count) for sub, count in group.configured.tasks.items()}

    def _member_topics(self, member: ConsumerMember, group: ConsumerGroup) -> frozenset[TopicId]:
        return frozenset(key for key, _count in group.subscription_metadata.values())

    def _compute_target(self, group: ConsumerGroup) -> None:
        """Kafka's sticky task assignor over the group's members, from their previous targets,
        once the group's initial rebalance delay (a new group) or assignment interval (since the
        last assignment) has passed; until then a timer computes it when due, and heartbeats say
        ASSIGNMENT_DELAYED, as Kafka 4.3 does."""
        if not isinstance(group, StreamsGroup):
            super()._compute_target(group)
            return
        now = self._clock()
        if group.assign_after_ms is None:  # a new group: wait for more members first
            delay = self._group_setting(
                group.group_id,
                "streams.initial.rebalance.delay.ms",
                self._config.streams_initial_rebalance_delay_ms,
            )
            group.assign_after_ms = now + delay
            group.assignment_delayed = INITIAL_DELAY
        if now < group.assign_after_ms:
            self._timer.schedule(
                ("streams-assignment", group.group_id),
                group.assign_after_ms,
                lambda: self._assign_when_due(group),
            )
            return
        self._timer.cancel(("streams-assignment", group.group_id))
        self._assign(group)
        interval = self._group_setting(
            group.group_id, "streams.assignment.interval.ms", self._config.streams_assignment_interval_ms
        )
        group.assign_after_ms = now + interval
        group.assignment_delayed = INTERVAL_DELAY

    def _assign_when_due(self, group: StreamsGroup) -> None:
        """The timer of a delayed assignment: compute it (and write it) if the group still
        needs one and is still this coordinator's."""
        if (
            self._groups.get(group.group_id) is group
            and group.members
            and group.group_epoch > group.assignment_epoch
        ):
            self._compute_target(group)
            self.persist(group.group_id)

    def _assign(self, group: StreamsGroup) -> None:
        replicas = self._group_setting(
            group.group_id, "streams.num.standby.replicas", self._config.streams_num_standby_replicas
        )
        stateful = [
            s.subtopology_id
            for s in (group.topology.subtopologies if group.topology else ())
            if s.state_changelog_topics
        ]
        members = [
            TaskMember(
                member_id,
                _process_of(group, member_id),
                _by_subtopology(group.target.get(member_id, {})),
                _by_subtopology(group.standby.get(member_id, {})),
            )
            for member_id in group.members
        ]
        tasks = {sub: count for sub, (_key, count) in group.subscription_metadata.items()}
        assignment = assign_tasks(members, tasks, stateful, replicas)
        group.target = {member_id: _by_key(a.active) for member_id, a in assignment.items()}
        group.standby = {member_id: _by_key(a.standby) for member_id, a in assignment.items()}
        group.assignment_epoch = group.group_epoch
        log.info("streams group %s: target assignment for epoch %d", group.group_id, group.group_epoch)

    def _missing(self, configured: ConfiguredTopology) -> list[str]:
        """The internal topics the configured topology needs that do not exist."""
        return [t.name for t in configured.to_create if self._topics.get(t.name) is None]

    def _partition_counts(self, topology: StreamsTopology) -> dict[str, int]:
        names = {t for s in topology.subtopologies for t in s.source_topics}
        names |= {
            t.name
            for s in topology.subtopologies
            for t in (*s.state_changelog_topics, *s.repartition_source_topics)
        }
        counts = {}
        for name in names:
            info = self._topics.get(name)
            if info is not None:
                counts[name] = info.partitions
        return counts

    # --- the heartbeat ---------------------------------------------------------------------

    def missing_internal_topics(self, group_id: str, topology: StreamsTopology | None) -> list[InternalTopic]:
        """The internal topics the broker must create before the group's topology can run."""
        group = self.group(group_id)
        current = group.topology if isinstance(group, StreamsGroup) else None
        if current is not None and topology is not None and topology != current:
            return []  # a topology the group will refuse creates nothing
        chosen = current or topology
        if chosen is None:
            return []
        configured = configure(chosen, self._partition_counts(chosen))
        return [t for t in configured.to_create if self._topics.get(t.name) is None]

    def streams_heartbeat(self, request: StreamsHeartbeat) -> StreamsGroupHeartbeatResponse:
        try:
            _validate(request)
        except HeartbeatError as error:
            return streams_response(request.member_id, 0, 0, error.code, error.message)
        group = self.group(request.group_id)
        if group is None and request.group_id in self._groups:
            return streams_response(
                request.member_id,
                0,
                0,
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Group {request.group_id} is not a streams group.",
            )
        created = group is None and request.member_epoch == 0
        if created:
            group = StreamsGroup(request.group_id)
            self._groups[request.group_id] = group
        if isinstance(group, StreamsGroup) and request.topology is not None:
            current = group.topology
            if current is not None and current != request.topology:
                # Kafka 4.3: a group keeps the topology it started with for as long as it exists.
                return streams_response(
                    "", 0, 0, ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet."
                )
            if current is None:
                # Set before the heartbeat, which then works out the tasks and a target.
                group.topology = request.topology
                log.info("streams group %s: topology epoch %d", group.group_id, request.topology.epoch)
        if isinstance(group, StreamsGroup) and request.member_epoch >= 0:
            # Before the heartbeat: a joining member's process id is what the assignor balances by.
            self._remember(group, request)
        consumer_response = self.heartbeat(_as_consumer_request(request))
        if isinstance(group, StreamsGroup):
            _forget_departed(group)
        if consumer_response["error_code"] != ErrorCode.NONE:
            return streams_response(
                request.member_id,
                0,
                0,
                ErrorCode(consumer_response["error_code"]),
                consumer_response.get("error_message"),
            )
        group = self.group(request.group_id)
        if not isinstance(group, StreamsGroup) or request.member_epoch < 0:  # the member left
            return streams_response(request.member_id, consumer_response["member_epoch"], 0)
        member_id = request.member_id
        response = streams_response(
            member_id, consumer_response["member_epoch"], self._heartbeat_interval_ms(group.group_id)
        )
        statuses = list(group.configured.status)
        missing = self._missing(group.configured)
        if group.configured.ready and missing:
            statuses.append(
                (StreamsStatus.MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {', '.join(missing)}")
            )
        if group.group_epoch > group.assignment_epoch and group.assignment_delayed is not None:
            statuses.append((StreamsStatus.ASSIGNMENT_DELAYED, group.assignment_delayed))
        if group.shutdown_requested:
            statuses.append(
                (
                    StreamsStatus.SHUTDOWN_APPLICATION,
                    "A client requested the shutdown of the whole application.",
                )
            )
        response["status"] = [
            {"status_code": int(code), "status_detail": detail} for code, detail in statuses
        ] or None
        standby = group.standby.get(member_id, {})
        if (
            consumer_response["assignment"] is not None
            or request.member_epoch == 0
            or standby != group.standby_sent.get(member_id)
        ):
            member = group.members[member_id]
            response["active_tasks"] = tasks_field(member.assigned)
            response["standby_tasks"] = tasks_field(standby)
            response["warmup_tasks"] = []
            group.standby_sent[member_id] = standby
            if group.info[member_id].user_endpoint is not None:
                group.endpoint_epoch += 1
        if group.endpoint_epoch != request.endpoint_information_epoch:
            response["partitions_by_user_endpoint"] = self._partitions_by_endpoint(group, member_id)
        if created:
            # Kafka 4.3 keeps a group's endpoint epoch in memory only, and the group its first
            # heartbeat created is rebuilt from its records: the epoch starts over at 0.
            group.endpoint_epoch = 0
        response["endpoint_information_epoch"] = group.endpoint_epoch
        return response

    def _partitions_by_endpoint(
        self, group: StreamsGroup, member_id: str
    ) -> list[StreamsGroupHeartbeatResponsePartitionsByUserEndpoint]:
        """Every member's endpoint with its partitions, the heartbeating member's last."""
        topology = group.topology
        if topology is None:
            return []
        counts = self._partition_counts(topology)
        entries = []
        for other in [*(m for m in group.members if m != member_id), member_id]:
            endpoint = group.info[other].user_endpoint
            if endpoint is not None:
                active = _by_subtopology(group.members[other].assigned)
                standby = _by_subtopology(group.standby_sent.get(other, {}))
                entries.append(endpoint_partitions(endpoint, active, standby, topology, counts))
        return entries

    def _remember(self, group: StreamsGroup, request: StreamsHeartbeat) -> None:
        info = group.info.setdefault(request.member_id, StreamsMemberInfo())
        if request.process_id is not None:
            info.process_id = request.process_id
        if request.user_endpoint is not None:
            info.user_endpoint = request.user_endpoint
        if request.client_tags is not None:
            info.client_tags = request.client_tags
        if request.topology is not None:
            info.topology_epoch = request.topology.epoch
        if request.shutdown_application:
            group.shutdown_requested = True

    def refresh(self, group_id: str) -> None:
        """Re-read the topics the topology needs (internal topics were just created)."""
        group = self.group(group_id)
        if isinstance(group, StreamsGroup):
            metadata = self._subscription_metadata(group)
            if metadata != group.subscription_metadata:
                group.subscription_metadata = metadata
                group.group_epoch += 1

    # --- describe ------------------------------------------------------------------------

    def streams_describe(self, group_id: str) -> StreamsGroupDescribeResponseGroups:
        group = self.group(group_id)
        if not isinstance(group, StreamsGroup):
            what = "not found" if self._groups.get(group_id) is None else "is not a streams group"
            return streams_described_error(
                group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} {what}."
            )
        topology = group.topology
        described_topology: StreamsGroupDescribeResponseTopology | None = None
        if topology is not None:
            described_topology = {
                "epoch": topology.epoch,
                "subtopologies": [
                    {
                        "subtopology_id": s.subtopology_id,
                        "source_topics": list(s.source_topics),
                        "repartition_sink_topics": list(s.repartition_sink_topics),
                        "state_changelog_topics": [_topic_info(t) for t in s.state_changelog_topics],
                        "repartition_source_topics": [_topic_info(t) for t in s.repartition_source_topics],
                    }
                    for s in topology.subtopologies
                ],
            }
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "group_id": group_id,
            "group_state": _state(group),
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "topology": described_topology,
            "members": [self._streams_member(group, m) for m in group.members.values()],
        }

    def _streams_member(
        self, group: StreamsGroup, member: ConsumerMember
    ) -> StreamsGroupDescribeResponseMembers:
        info = group.info.get(member.member_id, StreamsMemberInfo())
        return {
            "member_id": member.member_id,
            "member_epoch": member.member_epoch,
            "instance_id": member.instance_id,
            "rack_id": member.rack_id,
            "client_id": member.client_id,
            "client_host": member.client_host,
            "topology_epoch": info.topology_epoch,
            "process_id": info.process_id,
            "user_endpoint": None
            if info.user_endpoint is None
            else {"host": info.user_endpoint[0], "port": info.user_endpoint[1]},
            "client_tags": [{"key": k, "value": v} for k, v in info.client_tags],
            # Kafka 4.3 refuses heartbeats that carry task offsets (the handler does too).
            "task_offsets": [],
            "task_end_offsets": [],
            "assignment": _assignment(member.assigned, group.standby_sent.get(member.member_id, {})),
            "target_assignment": _assignment(
                group.target.get(member.member_id, {}), group.standby.get(member.member_id, {})
            ),
            "is_classic": False,
        }


def _process_of(group: StreamsGroup, member_id: str) -> str:
    """A member's process (its member id if it named none: a process of its own)."""
    info = group.info.get(member_id)
    return info.process_id if info is not None and info.process_id else member_id


def _forget_departed(group: StreamsGroup) -> None:
    """Drop what the group keeps of members that left or never joined (a refused join)."""
    for gone in set(group.info) - set(group.members):
        del group.info[gone]
    for gone in set(group.standby_sent) - set(group.members):
        del group.standby_sent[gone]


def _state(group: StreamsGroup) -> str:
    """Kafka's streams group states: Empty, NotReady (the topology cannot run), Assigning,
    Reconciling, Stable, Dead."""
    state = group.state.value
    if state not in ("Empty", "Dead") and not group.subscription_metadata:
        return "NotReady"
    return state


def _topic_info(topic: InternalTopic) -> StreamsGroupHeartbeatRequestStateChangelogTopics:
    return {
        "name": topic.name,
        "partitions": topic.partitions,
        "replication_factor": topic.replication_factor,
        "topic_configs": [{"key": k, "value": v} for k, v in topic.configs],
    }


def _assignment(active: Assignment, standby: Assignment) -> StreamsGroupDescribeResponseAssignment:
    return {"active_tasks": tasks_field(active), "standby_tasks": tasks_field(standby), "warmup_tasks": []}


def _as_consumer_request(request: StreamsHeartbeat) -> HeartbeatRequest:
    """The consumer protocol's view of the heartbeat: tasks as partitions of subtopology "topics"."""
    owned = (
        None
        if request.active_tasks is None
        else {
            task_key(sub): list(partitions) for sub, partitions in request.active_tasks.items() if partitions
        }
    )
    return HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        # A joining member "subscribes" to its topology's source topics: a new member changes
        # the subscriptions, which is what moves the group epoch in the consumer machinery.
        subscribed_topic_names=sources_of(request.topology) if request.member_epoch == 0 else None,
        subscribed_topic_regex=None,
        server_assignor=None,
        owned=owned if request.member_epoch != 0 else {},
        client_id=request.client_id,
        client_host=request.client_host,
    )


def sources_of(topology: StreamsTopology | None) -> list[str]:
    if topology is None:
        return []
    return sorted(
        {
            t
            for s in topology.subtopologies
            for t in (*s.source_topics, *(r.name for r in s.repartition_source_topics))
        }
    )


def _validate(request: StreamsHeartbeat) -> None:
    """Kafka's ``throwIfStreamsGroupHeartbeatRequestIsInvalid``, as far as this broker checks it."""

    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

    if not request.member_id:
        raise invalid("MemberId can't be empty.")
    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topology is None:
            raise invalid("Topology must be non-null when joining.")
        if not request.process_id:
            raise invalid("ProcessId can't be empty.")
        if request.active_tasks or request.standby_or_warmup_sent:
            raise invalid("ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.")


def streams_response(
    member_id: str,
    member_epoch: int,
    heartbeat_interval_ms: int,
    code: ErrorCode = ErrorCode.NONE,
    message: str | None = None,
) -> StreamsGroupHeartbeatResponse:
    return {
        "error_code": code,
        "error_message": message,
        "member_id": member_id,
        "member_epoch": member_epoch,
        "heartbeat_interval_ms": heartbeat_interval_ms,
        "acceptable_recovery_lag": ACCEPTABLE_RECOVERY_LAG,
        "task_offset_interval_ms": TASK_OFFSET_INTERVAL_MS,
        "status": None,
        "active_tasks": None,
        "standby_tasks": None,
        "warmup_tasks": None,
        "endpoint_information_epoch": 0,
        "partitions_by_user_endpoint": None,
    }


def streams_described_error(
    group_id: str, code: ErrorCode, message: str | None = None
) -> StreamsGroupDescribeResponseGroups:
    """A StreamsGroupDescribe entry carrying only an error (ConsumerGroupDescribe's, with a
    topology instead of an assignor)."""
    entry: dict[str, Any] = dict(described_error(group_id, code, message))
    del entry["assignor_name"]
    entry["topology"] = None
    return cast("StreamsGroupDescribeResponseGroups", entry)

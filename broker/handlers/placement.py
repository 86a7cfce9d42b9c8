"""ElectLeaders and partition reassignments.

In a cluster, ElectLeaders moves leadership as Kafka's controller does (``broker.services.cluster``).  On a
single node every partition has one replica, this node, which leads it; nothing can move and no election
can change anything. So these APIs answer what Kafka answers for a partition already where it
should be: an election is ELECTION_NOT_NEEDED, a reassignment to this node completes at once
(and is never listed as ongoing), cancelling one finds NO_REASSIGNMENT_IN_PROGRESS, and a
replica list naming another broker is INVALID_REPLICA_ASSIGNMENT. ``kafka-leader-election`` and
``kafka-reassign-partitions`` then print what they print against a healthy one-node Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.replica_assignment import replica_lists_error
from broker.services.cluster.etcd_client import EtcdError
from broker.services.cluster.reassignment import target_replicas
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsRequestPartitions,
        AlterPartitionReassignmentsResponse,
        AlterPartitionReassignmentsResponsePartitions,
        AlterPartitionReassignmentsResponseResponses,
        DescribeLogDirsRequestTopics,
        ElectLeadersRequest,
        ElectLeadersResponse,
        ElectLeadersResponsePartitionResult,
        ElectLeadersResponseReplicaElectionResults,
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
        ListPartitionReassignmentsResponsePartitions,
    )

ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
PREFERRED, UNCLEAN = 0, 1  # ElectLeaders election_type


def missing_partition(ctx: RequestContext, topic: str, partition: int) -> str | None:
    """Kafka's message for a partition that does not exist, or None."""
    info = ctx.broker.topics.get(topic)
    if info is None:
        return f"No such topic as {topic}"
    if not 0 <= partition < info.partitions:
        return f"No such partition as {topic}-{partition}"
    return None


async def _election(
    ctx: RequestContext, election_type: int, topic: str, partition: int
) -> ElectLeadersResponsePartitionResult:
    missing = missing_partition(ctx, topic, partition)
    if missing is not None:
        return {
            "partition_id": partition,
            "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "error_message": missing,
        }
    cluster = ctx.broker.cluster
    code = ErrorCode.ELECTION_NOT_NEEDED
    if cluster is not None:
        try:
            code = await cluster.elect_leader(topic, partition, unclean=election_type == UNCLEAN)
        except EtcdError as exc:
            return {
                "partition_id": partition,
                "error_code": ErrorCode.REQUEST_TIMED_OUT,
                "error_message": str(exc),
            }
    message = {
        ErrorCode.NONE: None,
        ErrorCode.ELECTION_NOT_NEEDED: ELECTION_NOT_NEEDED_MESSAGE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: f"Failed to elect leader for partition {topic}-{partition} "
        "under strategy PreferredReplicaPartitionLeaderElectionStrategy",
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: f"Failed to elect leader for partition {topic}-{partition} "
        "under strategy UncleanPartitionLeaderElectionStrategy",
    }.get(code)
    return {"partition_id": partition, "error_code": code, "error_message": message}


async def handle_elect_leaders(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if not cluster_authorized(ctx):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "replica_election_results": [],
        }
    election_type = request.get("election_type", PREFERRED)
    wanted_partitions = request["topic_partitions"]
    if wanted_partitions is None:
        # All partitions: Kafka answers only those it elected (none on a single node).
        wanted_partitions = [
            {"topic": t.name, "partitions": list(range(t.partitions))} for t in ctx.broker.topics.all()
        ]
        results: list[ElectLeadersResponseReplicaElectionResults] = [
            {"topic": wanted["topic"], "partition_result": elected}
            for wanted in wanted_partitions
            if (elected := [r for r in await _elections(ctx, election_type, wanted) if r["error_code"] == 0])
        ]
    else:
        results = [
            {"topic": wanted["topic"], "partition_result": await _elections(ctx, election_type, wanted)}
            for wanted in wanted_partitions
        ]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": results}


async def _elections(
    ctx: RequestContext, election_type: int, wanted: DescribeLogDirsRequestTopics
) -> list[ElectLeadersResponsePartitionResult]:
    return [await _election(ctx, election_type, wanted["topic"], p) for p in wanted["partitions"]]


async def _reassignment(
    ctx: RequestContext,
    topic: str,
    wanted: AlterPartitionReassignmentsRequestPartitions,
    allow_rf_change: bool,
) -> AlterPartitionReassignmentsResponsePartitions:
    partition, replicas = wanted["partition_index"], wanted["replicas"]
    code: ErrorCode = ErrorCode.NONE
    message: str | None = None
    cluster = ctx.broker.cluster
    if missing_partition(ctx, topic, partition) is not None:
        code, message = (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "This server does not host this topic-partition.",
        )
    elif replicas is not None and (problem := replica_lists_error(ctx, [replicas], 1)) is not None:
        code, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    elif cluster is None:
        if replicas is None:
            code, message = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment in progress."
    else:
        current = cluster.metadata.image.partition(topic, partition)
        if (
            replicas is not None
            and not allow_rf_change
            and current is not None
            and len(replicas) != len(target_replicas(current))
        ):
            code = ErrorCode.INVALID_REPLICATION_FACTOR
            message = "The replication factor is changed but allowReplicationFactorChange is false"
        else:
            try:
                code = await cluster.reassign(topic, partition, replicas)
            except EtcdError as exc:
                code, message = ErrorCode.REQUEST_TIMED_OUT, str(exc)
            if code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS:
                message = "No reassignment in progress."
    return {"partition_index": partition, "error_code": code, "error_message": message}


async def handle_alter_partition_reassignments(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    allowed = cluster_authorized(ctx)
    allow_rf_change = request.get("allow_replication_factor_change", True)
    responses: list[AlterPartitionReassignmentsResponseResponses] = []
    for topic in request["topics"] if allowed else []:
        partitions = [
            await _reassignment(ctx, topic["name"], p, allow_rf_change) for p in topic["partitions"]
        ]
        responses.append({"name": topic["name"], "partitions": partitions})
    return {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": request["allow_replication_factor_change"],
        "error_code": ErrorCode.NONE if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        "error_message": None,
        "responses": responses,
    }


async def handle_list_partition_reassignments(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    """Ongoing reassignments (a single node never has one: each completes when asked for)."""
    if not cluster_authorized(ctx):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "topics": []}
    cluster = ctx.broker.cluster
    ongoing = cluster.reassignments() if cluster is not None else []
    wanted = request.get("topics")
    if wanted is not None:
        asked = {(t["name"], p) for t in wanted for p in t["partition_indexes"]}
        ongoing = [entry for entry in ongoing if (entry[0], entry[1]) in asked]
    topics: dict[str, list[ListPartitionReassignmentsResponsePartitions]] = {}
    for topic, partition, record in ongoing:
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "replicas": list(record.replicas),
                "adding_replicas": list(record.adding),
                "removing_replicas": list(record.removing),
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": [{"name": name, "partitions": partitions} for name, partitions in topics.items()],
    }


HANDLERS = {
    ApiKey.ELECT_LEADERS: Served(handle_elect_leaders),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Served(handle_alter_partition_reassignments),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Served(handle_list_partition_reassignments),
}

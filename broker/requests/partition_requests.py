"""What the partition-addressed APIs (Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords)
share: finding a partition with Kafka's error precedence, and the topic/partition response shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import authorized
from broker.services.security.acl_model import ResourceType
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.requests.context import RequestContext
    from broker.state.topic_registry import TopicInfo
    from log.partition_log import PartitionLog


def leader_epoch_error(requested: int, current: int) -> ErrorCode | None:
    """KIP-320 fencing: a client that knows a newer or older leader epoch than ours."""
    if requested == -1 or requested == current:
        return None
    return ErrorCode.UNKNOWN_LEADER_EPOCH if requested > current else ErrorCode.FENCED_LEADER_EPOCH


def replica_error(
    ctx: RequestContext,
    topic: str,
    index: int,
    current_leader_epoch: int,
    topic_epoch: int,
    *,
    any_replica: bool = False,
) -> ErrorCode | None:
    """Why this broker may not answer for the partition: a fenced or unknown leader epoch
    (alone, against the topic's epoch; in a cluster, against the replica's), then, in a
    cluster, not leading it (NOT_LEADER_OR_FOLLOWER), in Kafka's order. ``any_replica``: a
    follower may answer too (a consumer's Fetch v11+, KIP-392)."""
    replicas = ctx.broker.replicas
    if replicas is None:
        return leader_epoch_error(current_leader_epoch, topic_epoch)
    known = replicas.known_leader((topic, index))
    if known is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    epoch_error = leader_epoch_error(current_leader_epoch, known[1])
    if epoch_error is not None:
        return epoch_error
    return None if any_replica or replicas.is_leader(topic, index) else ErrorCode.NOT_LEADER_OR_FOLLOWER


def find_partition(
    ctx: RequestContext,
    topic: str,
    index: int,
    current_leader_epoch: int = -1,
    *,
    cluster_trusted: bool = False,
    any_replica: bool = False,
) -> tuple[PartitionLog, TopicInfo] | ErrorCode:
    """The partition's log and topic, or the error Kafka answers first: the API's operation
    refused on the topic (``broker.requests.acl_checks``), unknown partition, then a fenced or
    unknown leader epoch or (in a cluster) another leader, then an offline log directory. ``cluster_trusted``: the caller's
    cluster operation (CLUSTER_ACTION) already covers every topic; ``any_replica``: a follower
    answers too (a consumer fetching from the closest replica)."""
    if not cluster_trusted and not authorized(ctx, ResourceType.TOPIC, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    partition_log = ctx.broker.partitions.get(topic, index)
    info = ctx.broker.topics.get(topic)
    if partition_log is None or info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    epoch_error = replica_error(
        ctx, topic, index, current_leader_epoch, info.leader_epoch, any_replica=any_replica
    )
    if epoch_error is not None:
        return epoch_error
    if not partition_log.is_online:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return partition_log, info

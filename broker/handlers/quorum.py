"""DescribeQuorum (KIP-595/853): the metadata quorum, told as it is.

Odradek has no Raft log. A single node decides all metadata by itself: the quorum has one voter,
this node, which leads it, and no observers. In a cluster the metadata lives in etcd and one
broker at a time holds the controller lease: that broker is the one voter and leader, and every
other live broker is an observer, so every broker tells the same quorum. Since no metadata log
exists its offsets are 0 and every replica is caught up (fetch and caught-up times are now);
a directory id is known only for the answering node (the others' are Kafka's zero id, as Kafka
shows a replica whose directory it does not know). ``kafka-metadata-quorum describe
--status/--replication`` shows exactly that. A node's listed endpoint is its client listener
(it has no separate controller listener).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.cluster_view import NodeAddress, controller_id, live_nodes
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DescribeQuorumRequest,
        DescribeQuorumResponse,
        DescribeQuorumResponseCurrentVoters,
        DescribeQuorumResponseNodes,
        DescribeQuorumResponsePartitions,
        DescribeQuorumResponseTopics,
    )

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 0  # the one leader there has ever been


def directory_uuid(directory_id: str) -> bytes:
    """Kafka's textual id (unpadded URL-safe base64) as the 16 bytes of a ``uuid`` field."""
    return base64.urlsafe_b64decode(directory_id + "=" * (-len(directory_id) % 4))


def _unknown_partition(index: int) -> DescribeQuorumResponsePartitions:
    return {
        "partition_index": index,
        "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "leader_id": 0,
        "leader_epoch": 0,
        "high_watermark": 0,
        "current_voters": [],
        "observers": [],
    }


def _replica(ctx: RequestContext, node_id: int, now: int) -> DescribeQuorumResponseCurrentVoters:
    known = node_id == ctx.broker.node_id
    return {
        "replica_id": node_id,
        "replica_directory_id": directory_uuid(ctx.broker.directory_id) if known else bytes(16),
        "log_end_offset": 0,
        "last_fetch_timestamp": now,
        "last_caught_up_timestamp": now,
    }


def _partition(
    ctx: RequestContext, index: int, leader: int, nodes: list[NodeAddress]
) -> DescribeQuorumResponsePartitions:
    if index != 0:
        return _unknown_partition(index)
    now = ctx.broker.clock()
    others = [node.node_id for node in nodes if node.node_id != leader]
    return {
        "partition_index": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "leader_id": leader,
        "leader_epoch": LEADER_EPOCH,
        "high_watermark": 0,
        "current_voters": [_replica(ctx, leader, now)] if leader >= 0 else [],
        "observers": [_replica(ctx, node_id, now) for node_id in others],
    }


def _voter_nodes(
    ctx: RequestContext, leader: int, nodes: list[NodeAddress]
) -> list[DescribeQuorumResponseNodes]:
    """The voter's endpoint (Kafka lists the voters' listeners)."""
    return [
        {
            "node_id": node.node_id,
            "listeners": [{"name": ctx.listener_name, "host": node.host, "port": node.port}],
        }
        for node in nodes
        if node.node_id == leader
    ]


async def handle_describe_quorum(
    ctx: RequestContext, request: DescribeQuorumRequest
) -> DescribeQuorumResponse:
    if not cluster_authorized(ctx):
        return {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": None,
            "topics": [],
            "nodes": [],
        }
    leader = controller_id(ctx.broker)  # the one voter: the controller (a single node itself)
    nodes = live_nodes(ctx.broker, ctx.listener_name)
    topics: list[DescribeQuorumResponseTopics] = []
    for topic in request["topics"][:1]:  # Kafka answers for one partition: the metadata log's
        wanted = topic["partitions"][:1]
        if topic["topic_name"] != METADATA_TOPIC:
            partitions = [_unknown_partition(p["partition_index"]) for p in wanted]
        else:
            partitions = [_partition(ctx, p["partition_index"], leader, nodes) for p in wanted]
        topics.append({"topic_name": topic["topic_name"], "partitions": partitions})
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": topics,
        "nodes": _voter_nodes(ctx, leader, nodes),
    }


HANDLERS = {ApiKey.DESCRIBE_QUORUM: Served(handle_describe_quorum)}

"""DescribeQuorum (KIP-595/853): the metadata quorum of a single node, told as it is.

Odradek has no Raft log: this one node decides all metadata by itself. So the quorum has one
voter, this node, which leads it; no observers; and since no metadata log exists its offsets are
0 and the leader, the only replica, is always caught up (fetch and caught-up times are now).
``kafka-metadata-quorum describe --status/--replication`` shows exactly that. The node's
listed endpoint is its client listener (it has no separate controller listener).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DescribeQuorumRequest,
        DescribeQuorumResponse,
        DescribeQuorumResponseCurrentVoters,
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


def _partition(ctx: RequestContext, index: int) -> DescribeQuorumResponsePartitions:
    if index != 0:
        return _unknown_partition(index)
    broker = ctx.broker
    now = broker.clock()
    voter: DescribeQuorumResponseCurrentVoters = {
        "replica_id": broker.node_id,
        "replica_directory_id": directory_uuid(broker.directory_id),
        "log_end_offset": 0,
        "last_fetch_timestamp": now,
        "last_caught_up_timestamp": now,
    }
    return {
        "partition_index": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "leader_id": broker.node_id,
        "leader_epoch": LEADER_EPOCH,
        "high_watermark": 0,
        "current_voters": [voter],
        "observers": [],
    }


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
    topics: list[DescribeQuorumResponseTopics] = []
    for topic in request["topics"][:1]:  # Kafka answers for one partition: the metadata log's
        wanted = topic["partitions"][:1]
        if topic["topic_name"] != METADATA_TOPIC:
            partitions = [_unknown_partition(p["partition_index"]) for p in wanted]
        else:
            partitions = [_partition(ctx, p["partition_index"]) for p in wanted]
        topics.append({"topic_name": topic["topic_name"], "partitions": partitions})
    endpoint = ctx.broker.endpoint_for(ctx.listener_name)
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": topics,
        "nodes": [
            {
                "node_id": ctx.broker.node_id,
                "listeners": [{"name": endpoint.name, "host": endpoint.host, "port": endpoint.port}],
            }
        ],
    }


HANDLERS = {ApiKey.DESCRIBE_QUORUM: Served(handle_describe_quorum)}

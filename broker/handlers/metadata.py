"""Metadata: brokers, topics, partitions and leaders — and topic auto-creation.

Auto-creation happens here, as in modern Kafka (Produce to an unknown topic does not create
it): when ``auto.create.topics.enable`` is on and the request allows it (v4+), an unknown
topic with a legal name is created with ``num.partitions``.  Like Kafka 4 (KRaft), whose
brokers forward the creation to the controller, the response that triggered the creation
still says UNKNOWN_TOPIC_OR_PARTITION (with no partitions; not LEADER_NOT_AVAILABLE); clients
retry and find the topic whole, every partition with its leader at once, never a partial list
(``compat_tests/test_metadata.py::test_auto_created_topic_appears_whole``, run against Kafka
4.3.1 too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import (
    authorized,
    cluster_authorized,
    cluster_operations_field,
    operations_field,
)
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.cluster_view import controller_id, live_nodes, partition_state, topic_complete
from broker.services.partition_limits import PartitionBudget
from broker.services.security.acl_model import AclOperation, ResourceType
from broker.services.topic_admin import NewTopic, TopicError, register_topic_async, validate_new_topic
from broker.state.topic_registry import TopicInfo, topic_name_error
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DescribeTopicPartitionsRequest,
        DescribeTopicPartitionsResponse,
        DescribeTopicPartitionsResponseNextCursor,
        DescribeTopicPartitionsResponsePartitions,
        DescribeTopicPartitionsResponseTopics,
        MetadataRequest,
        MetadataResponse,
        MetadataResponsePartitions,
        MetadataResponseTopics,
    )

ZERO_UUID = bytes(16)
FIRST_VERSION_WITH_TOPIC_IDS = 12


def partition_entries(ctx: RequestContext, topic: TopicInfo) -> list[MetadataResponsePartitions]:
    """Every partition of ``topic`` with its leader, replicas and ISR (``broker.services.cluster_view``).

    A partition whose log here is offline (a disk error, or unopenable at start-up) lists this
    node among its offline replicas, as Kafka reports replicas on a failed log directory;
    requests to it answer KAFKA_STORAGE_ERROR until the log comes back.  A partition without a
    live leader answers LEADER_NOT_AVAILABLE, as Kafka's does.
    """
    broker = ctx.broker
    entries: list[MetadataResponsePartitions] = []
    for index in range(topic.partitions):
        state = partition_state(broker, topic, index)
        if state is None:
            continue
        plog = broker.partitions.get(topic.name, index)
        offline = [] if plog is None or plog.is_online else [broker.node_id]
        entries.append(
            {
                "error_code": ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": index,
                "leader_id": state.leader,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": state.replicas,
                "isr_nodes": state.isr,
                "offline_replicas": offline,
            }
        )
    return entries


def topic_entry(ctx: RequestContext, topic: TopicInfo, with_operations: bool) -> MetadataResponseTopics:
    return {
        "error_code": ErrorCode.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": partition_entries(ctx, topic),
        "topic_authorized_operations": operations_field(ctx, ResourceType.TOPIC, topic.name, with_operations),
    }


def error_entry(name: str | None, code: ErrorCode, topic_id: bytes = ZERO_UUID) -> MetadataResponseTopics:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": []}


async def auto_create_topic(ctx: RequestContext, name: str) -> None:
    """Create ``name`` with the broker's defaults, within the partition limits like any request
    (a ``num.partitions`` above them, or a full broker, refuses the creation)."""
    topic = validate_new_topic(ctx.broker, NewTopic(name, -1, -1, {}))
    PartitionBudget(ctx.broker.config, ctx.broker.topics, topic.partitions).reserve(topic.partitions)
    await register_topic_async(ctx.broker, topic)


async def resolve_topic(ctx: RequestContext, name: str, auto_create: bool) -> TopicInfo | ErrorCode:
    """Find ``name``, creating it if allowed (which takes CREATE on the cluster or on the topic);
    otherwise the error Kafka answers with."""
    topic = ctx.broker.topics.get(name)
    if topic is not None:
        return topic if topic_complete(ctx.broker, topic) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not (auto_create and ctx.broker.config.get_bool("auto.create.topics.enable")):
        return (
            ErrorCode.INVALID_TOPIC_EXCEPTION
            if topic_name_error(name)
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
    if not (
        cluster_authorized(ctx, AclOperation.CREATE)
        or authorized(ctx, ResourceType.TOPIC, name, AclOperation.CREATE)
    ):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if topic_name_error(name):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    try:
        await auto_create_topic(ctx, name)
    except TopicError as exc:
        return exc.code
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def handle_metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    version = ctx.api_version
    with_operations = bool(request.get("include_topic_authorized_operations"))
    requested = request["topics"]
    topics: list[MetadataResponseTopics] = []
    if requested is None or (version == 0 and not requested):
        # Listing every topic leaves out those the principal may not describe, without a word.
        topics = [
            topic_entry(ctx, t, with_operations)
            for t in broker.topics.all()
            if authorized(ctx, ResourceType.TOPIC, t.name, AclOperation.DESCRIBE)
            and topic_complete(broker, t)
        ]
    elif version < FIRST_VERSION_WITH_TOPIC_IDS and any(
        t["name"] is None or t["topic_id"] != ZERO_UUID for t in requested
    ):
        # v10-11 declare topic ids but Kafka does not resolve them; it refuses the request
        # (InvalidRequestException) and answers every topic with INVALID_REQUEST, a null
        # name as "" since these versions' responses cannot carry a null.
        topics = [error_entry(t["name"] or "", ErrorCode.INVALID_REQUEST, t["topic_id"]) for t in requested]
    else:
        auto_create = request.get("allow_auto_topic_creation", True)
        for wanted in requested:
            name = wanted["name"]
            if name is None:
                by_id = broker.topics.by_id(wanted["topic_id"])
                if by_id is None:
                    topics.append(error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, wanted["topic_id"]))
                elif not authorized(ctx, ResourceType.TOPIC, by_id.name, AclOperation.DESCRIBE):
                    # Ids are not secret (Kafka): the id comes back, the name does not.
                    topics.append(error_entry(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, wanted["topic_id"]))
                else:
                    topics.append(topic_entry(ctx, by_id, with_operations))
                continue
            if not authorized(ctx, ResourceType.TOPIC, name, AclOperation.DESCRIBE):
                topics.append(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            found = await resolve_topic(ctx, name, auto_create)
            if isinstance(found, TopicInfo):
                topics.append(topic_entry(ctx, found, with_operations))
            else:
                topics.append(error_entry(name, found))
    return {
        "brokers": [
            {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
            for node in live_nodes(broker, ctx.listener_name)
        ],
        "cluster_id": broker.cluster_id,
        "controller_id": controller_id(broker),
        "topics": topics,
        "cluster_authorized_operations": cluster_operations_field(
            ctx, bool(request.get("include_cluster_authorized_operations"))
        ),
    }


def described_topic(entry: MetadataResponseTopics) -> DescribeTopicPartitionsResponseTopics:
    """A Metadata topic entry as DescribeTopicPartitions answers it: its partitions with empty
    ELR lists (no eligible leader replicas here, as in a Kafka cluster without KIP-966's ELR)."""
    described: DescribeTopicPartitionsResponseTopics = {
        "error_code": entry["error_code"],
        "name": entry["name"],
        "topic_id": entry.get("topic_id", ZERO_UUID),
        "is_internal": entry.get("is_internal", False),
        "partitions": [described_partition(p) for p in entry["partitions"]],
    }
    if "topic_authorized_operations" in entry:
        described["topic_authorized_operations"] = entry["topic_authorized_operations"]
    return described


def described_partition(partition: MetadataResponsePartitions) -> DescribeTopicPartitionsResponsePartitions:
    return {
        "error_code": partition["error_code"],
        "partition_index": partition["partition_index"],
        "leader_id": partition["leader_id"],
        "leader_epoch": partition.get("leader_epoch", -1),
        "replica_nodes": partition["replica_nodes"],
        "isr_nodes": partition["isr_nodes"],
        "eligible_leader_replicas": [],
        "last_known_elr": [],
        "offline_replicas": partition.get("offline_replicas", []),
    }


async def handle_describe_topic_partitions(
    ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    """DescribeTopicPartitions (KIP-966): Metadata's topics, paged by partitions.

    As Kafka: an empty topic list means every topic; topics go out sorted by name from the
    cursor's topic (its partitions from the cursor's index), at most
    ``min(max.request.partition.size.limit, response_partition_limit)`` partitions, with a
    cursor to the first partition left out; a named topic before the cursor is skipped, and a
    cursor naming a topic the list lacks makes the request invalid.
    """
    registry = ctx.broker.topics
    cursor = request["cursor"]
    after = cursor["topic_name"] if cursor is not None else ""
    listing_all = not request["topics"]
    names = (
        [t.name for t in registry.all() if authorized(ctx, ResourceType.TOPIC, t.name)]
        if listing_all
        else [t["name"] for t in request["topics"]]
    )
    wanted = sorted({name for name in names if name >= after})
    if cursor is not None and not listing_all and cursor["topic_name"] not in wanted:
        return {
            "topics": [
                described_topic(error_entry(t["name"], ErrorCode.INVALID_REQUEST)) for t in request["topics"]
            ]
        }
    remaining = min(
        ctx.broker.config.get_int("max.request.partition.size.limit"), request["response_partition_limit"]
    )
    topics: list[DescribeTopicPartitionsResponseTopics] = []
    next_cursor: DescribeTopicPartitionsResponseNextCursor | None = None
    for name in wanted:
        if remaining <= 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        topic = registry.get(name)
        if not authorized(ctx, ResourceType.TOPIC, name):
            topics.append(described_topic(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
            continue
        if topic is None:
            code = (
                ErrorCode.INVALID_TOPIC_EXCEPTION
                if topic_name_error(name)
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            unknown = described_topic(error_entry(name, code))
            unknown["topic_authorized_operations"] = operations_field(ctx, ResourceType.TOPIC, name, True)
            topics.append(unknown)
            continue
        start = cursor["partition_index"] if cursor is not None and name == cursor["topic_name"] else 0
        entry = described_topic(topic_entry(ctx, topic, with_operations=True))
        partitions = entry["partitions"]
        entry["partitions"] = partitions[start : start + remaining]
        topics.append(entry)
        if start + remaining < len(partitions):
            next_cursor = {"topic_name": name, "partition_index": start + remaining}
            break
        remaining -= len(entry["partitions"])
    return {"topics": topics, "next_cursor": next_cursor}


HANDLERS = {
    ApiKey.METADATA: Served(handle_metadata),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: Served(handle_describe_topic_partitions),
}

"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords.

Validation and error codes follow Kafka's controller: INVALID_TOPIC_EXCEPTION for bad
names, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR when a single
node is asked for more than one replica, INVALID_CONFIG for unknown config names, and
duplicate names in one request rejected with INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from broker.config.config_defs import TOPIC_CONFIGS
from broker.requests.acl_checks import authorized, cluster_authorized, unauthorized_names
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.error_mapping import error_code_of
from broker.requests.partition_requests import replica_error
from broker.requests.replica_assignment import replica_lists_error
from broker.requests.throttling import count_mutation
from broker.services.partition_limits import PartitionBudget
from broker.services.security.acl_model import AclOperation, ResourceType
from broker.services.topic_admin import (
    NewTopic,
    TopicError,
    add_partitions_async,
    delete_topic_async,
    register_topic_async,
    validate_new_topic,
)
from broker.state.topic_registry import INTERNAL_TOPICS, TopicInfo
from log.errors import LogError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        CreatePartitionsRequest,
        CreatePartitionsRequestTopics,
        CreatePartitionsResponse,
        CreatePartitionsResponseResults,
        CreateTopicsRequest,
        CreateTopicsRequestAssignments,
        CreateTopicsRequestTopics,
        CreateTopicsResponse,
        CreateTopicsResponseConfigs,
        CreateTopicsResponseTopics,
        DeleteRecordsRequest,
        DeleteRecordsRequestPartitions,
        DeleteRecordsResponse,
        DeleteRecordsResponsePartitions,
        DeleteTopicsRequest,
        DeleteTopicsResponse,
        DeleteTopicsResponseResponses,
    )

ZERO_UUID = bytes(16)


def created_configs(ctx: RequestContext, name: str) -> list[CreateTopicsResponseConfigs]:
    """The new topic's effective configs, as CreateTopics v5+ returns them."""
    info = ctx.broker.topics.get(name)
    overrides = info.configs if info else {}
    defaults = ctx.broker.config.topic_defaults()
    return [
        {
            "name": key,
            "value": overrides.get(key, defaults.get(key)),
            "read_only": False,
            "config_source": 1 if key in overrides else 5,
            "is_sensitive": False,
        }
        for key in sorted(TOPIC_CONFIGS)
    ]


def apply_assignment(
    ctx: RequestContext, topic: NewTopic, assignments: list[CreateTopicsRequestAssignments]
) -> NewTopic:
    """Turn CreateTopics' manual assignment into a partition count (Kafka's rules)."""
    if topic.partitions != -1 or topic.replication_factor != -1:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.",
        )
    indexes = sorted(a["partition_index"] for a in assignments)
    if indexes != list(range(len(assignments))):
        raise TopicError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Partitions should be a consecutive 0-based integer sequence",
        )
    ordered = [a["broker_ids"] for a in sorted(assignments, key=lambda a: a["partition_index"])]
    problem = replica_lists_error(ctx, ordered, len(assignments))
    if problem:
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
    return topic._replace(
        partitions=len(assignments),
        replication_factor=len(ordered[0]),
        assignments=tuple(tuple(replicas) for replicas in ordered),
    )


def requested_partitions(ctx: RequestContext, topics: list[CreateTopicsRequestTopics]) -> int:
    """Partitions a CreateTopics request asks for in all, counted as Kafka's controller counts
    them before validating any topic: assignments, else the count, -1 meaning num.partitions."""
    default = ctx.broker.config.get_int("num.partitions")
    return sum(
        len(t["assignments"])
        if t["assignments"]
        else default
        if t["num_partitions"] == -1
        else max(t["num_partitions"], 0)
        for t in topics
    )


def refuse_all(names: list[str], error: TopicError) -> list[CreatePartitionsResponseResults]:
    """The same error for every topic of a CreatePartitions request refused as a whole."""
    return [{"name": name, "error_code": error.code, "error_message": error.message} for name in names]


def uncreatable(ctx: RequestContext, names: list[str]) -> set[str]:
    """The topics the principal may not create: CREATE on the cluster allows every topic,
    else CREATE on each topic is needed."""
    if cluster_authorized(ctx, AclOperation.CREATE):
        return set()
    return unauthorized_names(ctx, ResourceType.TOPIC, names, AclOperation.CREATE)


async def handle_create_topics(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    denied = uncreatable(ctx, [t["name"] for t in request["topics"]])
    try:
        requested = requested_partitions(ctx, [t for t in request["topics"] if t["name"] not in denied])
        budget = PartitionBudget(
            ctx.broker.config, ctx.broker.topics, requested, bool(request.get("validate_only"))
        )
    except TopicError as exc:
        refused: list[CreateTopicsResponseTopics] = [
            {"name": t["name"], "topic_id": ZERO_UUID, "error_code": exc.code, "error_message": exc.message}
            for t in request["topics"]
        ]
        return {"throttle_time_ms": 0, "topics": refused}
    counts = Counter(t["name"] for t in request["topics"])
    results: list[CreateTopicsResponseTopics] = []
    for wanted in request["topics"]:
        name = wanted["name"]
        result: CreateTopicsResponseTopics = {
            "name": name,
            "topic_id": ZERO_UUID,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        if counts[name] > 1:
            results.append(
                result
                | {"error_code": ErrorCode.INVALID_REQUEST, "error_message": f"Duplicate topic name {name}"}
            )
            continue
        if name in denied:
            results.append(
                result
                | {
                    "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "error_message": "Authorization failed.",
                }
            )
            continue
        configs = {c["name"]: c["value"] for c in wanted["configs"] if c["value"] is not None}
        topic = NewTopic(name, wanted["num_partitions"], wanted["replication_factor"], configs)
        try:
            if wanted["assignments"]:
                topic = apply_assignment(ctx, topic, wanted["assignments"])
            topic = validate_new_topic(ctx.broker, topic)
            if not count_mutation(ctx, topic.partitions):
                raise TopicError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
            budget.reserve(topic.partitions)
            if request.get("validate_only"):
                topic_id = ZERO_UUID
            else:
                info = await register_topic_async(ctx.broker, topic)
                topic, topic_id = topic._replace(partitions=info.partitions), info.topic_id
        except TopicError as exc:
            results.append(result | {"error_code": exc.code, "error_message": exc.message})
            continue
        created = result | {
            "topic_id": topic_id,
            "num_partitions": topic.partitions,
            "replication_factor": topic.replication_factor,
        }
        if authorized(ctx, ResourceType.TOPIC, name, AclOperation.DESCRIBE_CONFIGS):
            created["configs"] = created_configs(ctx, name)
        else:
            created["configs"] = []
            created["topic_config_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        results.append(created)
    return {"throttle_time_ms": 0, "topics": results}


async def handle_delete_topics(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    broker = ctx.broker
    if ctx.api_version >= 6:
        wanted = [(t["name"], t["topic_id"]) for t in request["topics"]]
    else:
        wanted = [(name, ZERO_UUID) for name in request["topic_names"]]
    responses: list[DeleteTopicsResponseResponses] = []
    every_topic = cluster_authorized(ctx, AclOperation.DELETE)
    for name, topic_id in wanted:
        info = broker.topics.get(name) if name is not None else broker.topics.by_id(topic_id)
        entry: DeleteTopicsResponseResponses = {
            "name": name,
            "topic_id": topic_id,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        # Kafka's controller: without DELETE on the cluster, a topic named needs DESCRIBE (else
        # its existence is not revealed) and DELETE; one given by id is named only if describable.
        target = name if name is not None else info.name if info is not None else None
        describable = (
            every_topic
            or target is None
            or authorized(ctx, ResourceType.TOPIC, target, AclOperation.DESCRIBE)
        )
        if name is not None and not describable:
            responses.append(entry | {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
            continue
        if info is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
            responses.append(entry | {"error_code": code})
            continue
        if not (every_topic or authorized(ctx, ResourceType.TOPIC, info.name, AclOperation.DELETE)):
            shown = info.name if describable else None
            responses.append(entry | {"name": shown, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
            continue
        if not broker.config.get_bool("delete.topic.enable"):
            responses.append(entry | {"error_code": ErrorCode.TOPIC_DELETION_DISABLED})
            continue
        if info.internal:
            responses.append(
                entry
                | {
                    "error_code": ErrorCode.INVALID_TOPIC_EXCEPTION,
                    "error_message": "Cannot delete internal topics",
                }
            )
            continue
        if not count_mutation(ctx, info.partitions):
            responses.append(entry | {"error_code": ErrorCode.THROTTLING_QUOTA_EXCEEDED})
            continue
        await delete_topic_async(broker, info)
        broker.metrics.forget_topic(info.name)
        responses.append(entry | {"name": info.name, "topic_id": info.topic_id, "error_code": ErrorCode.NONE})
    return {"throttle_time_ms": 0, "responses": responses}


def create_partitions_error(
    ctx: RequestContext, wanted: CreatePartitionsRequestTopics, info: TopicInfo | None, duplicate: bool
) -> tuple[ErrorCode, str | None] | None:
    """Why one topic of a CreatePartitions request cannot grow as asked, or None."""
    name, count = wanted["name"], wanted["count"]
    if duplicate:
        return ErrorCode.INVALID_REQUEST, f"Duplicate topic name {name}"
    if not authorized(ctx, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    if info.internal:
        return ErrorCode.INVALID_REQUEST, f"Cannot add partitions to internal topic {name}"
    if count < info.partitions:
        return (
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {info.partitions} partitions, which is higher than the requested {count}.",
        )
    if count == info.partitions:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {count} partitions."
    assignments = wanted.get("assignments")
    if assignments:
        problem = replica_lists_error(ctx, [a["broker_ids"] for a in assignments], count - info.partitions)
        if problem:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    return None


async def handle_create_partitions(
    ctx: RequestContext, request: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    """Grow topics; the partitions the whole request adds are checked against the limits first,
    so an oversized request adds nothing at all (Kafka commits its first 10,000 partitions)."""
    broker = ctx.broker
    counts = Counter(t["name"] for t in request["topics"])
    checked = []
    for wanted in request["topics"]:
        info = broker.topics.get(wanted["name"])
        problem = create_partitions_error(ctx, wanted, info, counts[wanted["name"]] > 1)
        checked.append((wanted, info, problem))
    adding = sum(
        wanted["count"] - info.partitions
        for wanted, info, problem in checked
        if problem is None and info is not None
    )
    try:
        budget = PartitionBudget(broker.config, broker.topics, adding, request["validate_only"])
    except TopicError as exc:
        return {"throttle_time_ms": 0, "results": refuse_all([t["name"] for t in request["topics"]], exc)}
    results: list[CreatePartitionsResponseResults] = []
    for wanted, _, problem in checked:
        name, count = wanted["name"], wanted["count"]
        if problem is None:
            # Check again: an earlier topic's creation awaited, and another request may have grown
            # (or deleted) this topic meanwhile.
            info = broker.topics.get(name)
            problem = create_partitions_error(ctx, wanted, info, duplicate=False)
        if problem is None and info is not None:  # create_partitions_error refuses a missing topic
            try:
                if not count_mutation(ctx, count - info.partitions):
                    raise TopicError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
                budget.reserve(count - info.partitions)
            except TopicError as exc:
                problem = exc.code, exc.message
            else:
                if not request["validate_only"]:
                    await add_partitions_async(broker, info, count)
        code, message = problem or (ErrorCode.NONE, None)
        results.append({"name": name, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "results": results}


def delete_partition_records(
    ctx: RequestContext, topic: str, wanted: DeleteRecordsRequestPartitions
) -> DeleteRecordsResponsePartitions:
    index = wanted["partition_index"]
    partition_log = ctx.broker.partitions.get(topic, index)
    if not authorized(ctx, ResourceType.TOPIC, topic):
        return {
            "partition_index": index,
            "low_watermark": -1,
            "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
    if partition_log is None:
        return {
            "partition_index": index,
            "low_watermark": -1,
            "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
    if topic in INTERNAL_TOPICS:
        # Kafka's ReplicaManager: "Cannot delete records of internal topic". Moving the log start
        # of __consumer_offsets forward would drop committed offsets at the next replay.
        return {
            "partition_index": index,
            "low_watermark": -1,
            "error_code": ErrorCode.INVALID_TOPIC_EXCEPTION,
        }
    not_leader = replica_error(ctx, topic, index, -1, 0)  # in a cluster: only the leader deletes
    if not_leader is not None:
        return {"partition_index": index, "low_watermark": -1, "error_code": not_leader}
    offset = wanted["offset"]
    if offset == -1:
        offset = partition_log.high_watermark
    if offset < 0 or offset > partition_log.high_watermark:  # Kafka: not past what consumers see
        return {"partition_index": index, "low_watermark": -1, "error_code": ErrorCode.OFFSET_OUT_OF_RANGE}
    try:
        partition_log.delete_records(offset)
    except LogError as exc:
        return {"partition_index": index, "low_watermark": -1, "error_code": error_code_of(exc)}
    return {
        "partition_index": index,
        "low_watermark": partition_log.log_start_offset,
        "error_code": ErrorCode.NONE,
    }


async def handle_delete_records(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [delete_partition_records(ctx, t["name"], p) for p in t["partitions"]],
            }
            for t in request["topics"]
        ],
    }


HANDLERS = {
    ApiKey.CREATE_TOPICS: Served(handle_create_topics),
    ApiKey.DELETE_TOPICS: Served(handle_delete_topics),
    ApiKey.CREATE_PARTITIONS: Served(handle_create_partitions),
    ApiKey.DELETE_RECORDS: Served(handle_delete_records),
}

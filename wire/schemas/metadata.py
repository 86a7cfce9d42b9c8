"""Metadata (key 3): brokers, controller, topics, partitions, leaders and replicas.

Quirks clients rely on (see KAFKA-FACTS.md):

- ``topics``: in version 0 an empty array means "all topics"; from version 1 a **null**
  array means all topics and an empty array means none.
- ``allow_auto_topic_creation`` (v4+, default true) asks for ``auto.create.topics.enable``
  behaviour for unknown topics (answered ``LEADER_NOT_AVAILABLE`` while being created, or
  ``UNKNOWN_TOPIC_OR_PARTITION``).
- ``leader_epoch`` (v7+) feeds the Java consumer's position validation through
  OffsetForLeaderEpoch; leader epochs must never decrease across restarts.
- Version 10 adds ``topic_id`` (zero uuid for unknown topics); from version 12 a topic may
  be requested by id with a null name.  ``cluster_authorized_operations`` exists only in
  8-10 (KIP-700 moved it to DescribeCluster); the authorized-operations ints default to
  INT32_MIN ("not requested").
- Version 13 (Kafka 4.0, KIP-1102) adds a top-level ``error_code``.
  kafka-python infers "broker 0.11" from Metadata v4.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

METADATA = api(
    ApiKey.METADATA,
    "0-13",
    flexible="9+",
    request=(
        F(
            "topics",
            "[]",
            "0+",
            F("topic_id", "uuid", "10+"),
            F("name", "string", "0+", nullable="10+"),
            nullable="1+",
        ),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+"),
        F(
            "brokers",
            "[]",
            "0+",
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "1+", nullable="1+", default=None),
        ),
        F("cluster_id", "string", "2+", nullable="2+", default=None),
        F("controller_id", "int32", "1+", default=-1),
        F(
            "topics",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("name", "string", "0+", nullable="12+"),
            F("topic_id", "uuid", "10+"),
            F("is_internal", "bool", "1+"),
            F(
                "partitions",
                "[]",
                "0+",
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", "7+", default=-1),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("offline_replicas", "[]int32", "5+"),
            ),
            F("topic_authorized_operations", "int32", "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
        ),
        F("cluster_authorized_operations", "int32", "8-10", default=AUTHORIZED_OPERATIONS_OMITTED),
        F("error_code", "int16", "13+"),
    ),
)

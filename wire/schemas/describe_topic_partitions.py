"""DescribeTopicPartitions (key 75): paginated topic/partition metadata (KIP-966).

Quirks clients rely on (see KAFKA-FACTS.md):

- The Java admin client's ``describeTopics`` (3.8+) uses this API when advertised and falls
  back to Metadata otherwise; Spark's driver goes through it.
- Pagination: at most ``response_partition_limit`` (default 2000) partitions per response;
  ``cursor``/``next_cursor`` are **nullable structs** (null = start / no more pages)
  naming the topic and partition to continue from.  Topics are answered in name order.
- ``eligible_leader_replicas`` and ``last_known_elr`` are nullable arrays (KIP-966 ELR);
  ``topic_authorized_operations`` defaults to INT32_MIN ("not requested").
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DESCRIBE_TOPIC_PARTITIONS = api(
    ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    "0",
    flexible="0+",
    request=(
        F("topics", "[]", "0+", F("name", "string")),
        F("response_partition_limit", "int32", default=2000),
        F(
            "cursor",
            "{}",
            "0+",
            F("topic_name", "string"),
            F("partition_index", "int32"),
            nullable="0+",
            default=None,
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "topics",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("name", "string", "0+", nullable="0+"),
            F("topic_id", "uuid"),
            F("is_internal", "bool"),
            F(
                "partitions",
                "[]",
                "0+",
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", default=-1),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("eligible_leader_replicas", "[]int32", "0+", nullable="0+", default=None),
                F("last_known_elr", "[]int32", "0+", nullable="0+", default=None),
                F("offline_replicas", "[]int32"),
            ),
            F("topic_authorized_operations", "int32", default=-(2**31)),
        ),
        F(
            "next_cursor",
            "{}",
            "0+",
            F("topic_name", "string"),
            F("partition_index", "int32"),
            nullable="0+",
            default=None,
        ),
    ),
)

"""CreateTopics (key 19): create topics (admin clients, kafka-topics, Spark tests).

Quirks clients rely on:

- ``num_partitions``/``replication_factor`` may be -1 (v4+, KIP-464) to use the broker
  defaults (``num.partitions``, ``default.replication.factor``); with ``assignments`` both
  must be -1.
- ``validate_only`` (v1+) checks without creating.  ``timeout_ms`` defaults to 60000.
- Version 5 (first flexible) returns the resulting partition count, replication factor and
  configs (KIP-525) and the tagged ``topic_config_error_code``; version 6 may return
  ``THROTTLING_QUOTA_EXCEEDED``; version 7 returns the new ``topic_id``.
- Kafka 4.x accepts only CreateTopics >= 2; v0-1 are declared for error responses.
- Note Kafka's JSON spells the request's top-level fields ``timeoutMs``/``validateOnly``;
  the snake_case names are the same either way.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

CREATE_TOPICS = api(
    ApiKey.CREATE_TOPICS,
    "0-7",
    flexible="5+",
    request=(
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F("num_partitions", "int32"),
            F("replication_factor", "int16"),
            F(
                "assignments",
                "[]",
                "0+",
                F("partition_index", "int32"),
                F("broker_ids", "[]int32"),
            ),
            F(
                "configs",
                "[]",
                "0+",
                F("name", "string"),
                F("value", "string", "0+", nullable="0+"),
            ),
        ),
        F("timeout_ms", "int32", "0+", default=60000),
        F("validate_only", "bool", "1+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F("topic_id", "uuid", "7+"),
            F("error_code", "int16"),
            F("error_message", "string", "1+", nullable="0+"),
            F("topic_config_error_code", "int16", "5+", tag=0),
            F("num_partitions", "int32", "5+", default=-1),
            F("replication_factor", "int16", "5+", default=-1),
            F(
                "configs",
                "[]",
                "5+",
                F("name", "string", "5+"),
                F("value", "string", "5+", nullable="5+"),
                F("read_only", "bool", "5+"),
                F("config_source", "int8", "5+", default=-1),
                F("is_sensitive", "bool", "5+"),
                nullable="5+",
            ),
        ),
    ),
)

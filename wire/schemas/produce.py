"""Produce (key 0): append record batches to partitions.

Quirks clients rely on (see KAFKA-FACTS.md):

- ``acks == 0`` means the broker sends no response at all, not even an error.
- Versions 0-2 carry message sets of magic 0/1; version 3 added ``transactional_id`` and the
  v2 record batch.  Kafka 4.x rejects Produce 0-2 but still *advertises* min version 0
  (KAFKA-18659: librdkafka builds before 2.11.1 disable magic v2 and compression unless
  Produce 0 is listed).  The v0-2 schemas are declared so that we can at least encode
  error responses for them.
- Version 10 adds the tagged ``current_leader`` (per partition) and ``node_endpoints``
  (top level), used with ``NOT_LEADER_OR_FOLLOWER`` to redirect clients (KIP-951).
- Version 11 may return ``TRANSACTION_ABORTABLE``; version 12 has the same fields as 11
  (KIP-890 part 2: a transactional v12 produce implicitly adds the partition to the
  transaction).  Version 13 (Kafka 4.1, KIP-516) replaces topic names with topic ids, which
  is only safe to advertise because Metadata hands out real, persistent topic ids.
- Field names follow Kafka's JSON: ``topic_data`` / ``partition_data`` / ``index`` in the
  request, ``responses`` / ``partition_responses`` / ``index`` in the response.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

PRODUCE = api(
    ApiKey.PRODUCE,
    "0-13",
    flexible="9+",
    request=(
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16"),
        F("timeout_ms", "int32"),
        F(
            "topic_data",
            "[]",
            "0+",
            F("name", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            F(
                "partition_data",
                "[]",
                "0+",
                F("index", "int32"),
                F("records", "records", nullable="0+"),
            ),
        ),
    ),
    response=(
        F(
            "responses",
            "[]",
            "0+",
            F("name", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            F(
                "partition_responses",
                "[]",
                "0+",
                F("index", "int32"),
                F("error_code", "int16"),
                F("base_offset", "int64"),
                F("log_append_time_ms", "int64", "2+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F(
                    "record_errors",
                    "[]",
                    "8+",
                    F("batch_index", "int32", "8+"),
                    F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
                ),
                F("error_message", "string", "8+", nullable="8+", default=None),
                F(
                    "current_leader",
                    "{}",
                    "10+",
                    F("leader_id", "int32", "10+", default=-1),
                    F("leader_epoch", "int32", "10+", default=-1),
                    tag=0,
                ),
            ),
        ),
        F("throttle_time_ms", "int32", "1+"),
        F(
            "node_endpoints",
            "[]",
            "10+",
            F("node_id", "int32", "10+"),
            F("host", "string", "10+"),
            F("port", "int32", "10+"),
            F("rack", "string", "10+", nullable="10+", default=None),
            tag=0,
        ),
    ),
)

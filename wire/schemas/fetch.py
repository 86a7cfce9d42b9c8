"""Fetch (key 1): read record batches from partitions (consumers and follower replicas).

Quirks clients rely on (see KAFKA-FACTS.md):

- The broker returns whole batches starting with the one that contains ``fetch_offset``,
  at least one batch even if it is larger than ``max_bytes``/``partition_max_bytes``
  (KIP-74).  A fetch at the high watermark is an empty success; below the log start or
  above the end is ``OFFSET_OUT_OF_RANGE``.  ``records`` is a raw record set (memoryview).
- ``max_wait_ms``/``min_bytes`` make it a long poll.
- Version 4 adds ``isolation_level`` and the transactional fields (last stable offset,
  aborted transactions) and is the first version with record format v2; Kafka 4.x accepts
  only Fetch >= 4.  The v0-3 schemas are still declared (error responses, old clients).
- Version 7 adds fetch sessions (KIP-227): ``session_id`` 0 with ``session_epoch`` -1 is a
  sessionless full fetch; a broker that does not keep sessions answers ``session_id`` 0.
- Version 12 is the first flexible version; ``diverging_epoch``, ``current_leader`` and
  ``snapshot_id`` are tagged fields.  Version 13 replaces topic names with topic ids
  (the Java consumer caps Fetch at 12 while a partition lacks a topic id).
- Version 15 moves the follower's replica id into the tagged ``replica_state`` (KIP-903);
  version 16 adds tagged ``node_endpoints`` (KIP-951); version 17 adds the tagged
  ``replica_directory_id`` (KIP-853).  Fetch 18 (Kafka 4.1, KIP-1166) is not declared.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

FETCH = api(
    ApiKey.FETCH,
    "0-17",
    flexible="12+",
    request=(
        F("cluster_id", "string", "12+", nullable="12+", tag=0, default=None),
        F("replica_id", "int32", "0-14", default=-1),
        F(
            "replica_state",
            "{}",
            "15+",
            F("replica_id", "int32", "15+", default=-1),
            F("replica_epoch", "int64", "15+", default=-1),
            tag=1,
        ),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        F("isolation_level", "int8", "4+"),
        F("session_id", "int32", "7+"),
        F("session_epoch", "int32", "7+", default=-1),
        F(
            "topics",
            "[]",
            "0+",
            F("topic", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "9+", default=-1),
                F("fetch_offset", "int64"),
                F("last_fetched_epoch", "int32", "12+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("partition_max_bytes", "int32"),
                F("replica_directory_id", "uuid", "17+", tag=0),
            ),
        ),
        F(
            "forgotten_topics_data",
            "[]",
            "7+",
            F("topic", "string", "7-12"),
            F("topic_id", "uuid", "13+"),
            F("partitions", "[]int32", "7+"),
        ),
        F("rack_id", "string", "11+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "7+"),
        F("session_id", "int32", "7+"),
        F(
            "responses",
            "[]",
            "0+",
            F("topic", "string", "0-12"),
            F("topic_id", "uuid", "13+"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("high_watermark", "int64"),
                F("last_stable_offset", "int64", "4+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F(
                    "diverging_epoch",
                    "{}",
                    "12+",
                    F("epoch", "int32", "12+", default=-1),
                    F("end_offset", "int64", "12+", default=-1),
                    tag=0,
                ),
                F(
                    "current_leader",
                    "{}",
                    "12+",
                    F("leader_id", "int32", "12+", default=-1),
                    F("leader_epoch", "int32", "12+", default=-1),
                    tag=1,
                ),
                F(
                    "snapshot_id",
                    "{}",
                    "12+",
                    F("end_offset", "int64", default=-1),
                    F("epoch", "int32", default=-1),
                    tag=2,
                ),
                F(
                    "aborted_transactions",
                    "[]",
                    "4+",
                    F("producer_id", "int64", "4+"),
                    F("first_offset", "int64", "4+"),
                    nullable="4+",
                ),
                F("preferred_read_replica", "int32", "11+", default=-1),
                F("records", "records", nullable="0+"),
            ),
        ),
        F(
            "node_endpoints",
            "[]",
            "16+",
            F("node_id", "int32", "16+"),
            F("host", "string", "16+"),
            F("port", "int32", "16+"),
            F("rack", "string", "16+", nullable="16+", default=None),
            tag=0,
        ),
    ),
)

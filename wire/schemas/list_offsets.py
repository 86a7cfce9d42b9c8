"""ListOffsets (key 2): look up offsets by timestamp or by special position.

Quirks clients rely on (see KAFKA-FACTS.md):

- ``timestamp`` is either a real timestamp (first offset whose timestamp is >= it, else
  offset -1) or a special value: -1 latest (high watermark, or the last stable offset for
  ``isolation_level`` 1 = read_committed), -2 earliest (log start offset), -3 max
  timestamp (v7+, KIP-734), -4 earliest local (v8+, KIP-405), -5 latest tiered (v9+,
  KIP-1005).  Earliest and latest must never go backwards.
- Version 0 returns a list of offsets (``old_style_offsets``, capped by
  ``max_num_offsets``); version 1+ a single ``timestamp``/``offset`` pair.  Kafka 4.x
  accepts only ListOffsets >= 1; v0 is declared for error responses.
- ``replica_id`` is -1 for consumers (-2 for debug tools).  Version 10 adds ``timeout_ms``
  (KIP-1075).  kafka-python infers "broker 4.0" from ListOffsets v10.
  Version 11 (Kafka 4.1, KIP-1023) is not declared.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

LIST_OFFSETS = api(
    ApiKey.LIST_OFFSETS,
    "0-10",
    flexible="6+",
    request=(
        F("replica_id", "int32"),
        F("isolation_level", "int8", "2+"),
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition_index", "int32"),
                F("current_leader_epoch", "int32", "4+", default=-1),
                F("timestamp", "int64"),
                F("max_num_offsets", "int32", "0", default=1),
            ),
        ),
        F("timeout_ms", "int32", "10+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F(
                "partitions",
                "[]",
                "0+",
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            ),
        ),
    ),
)

"""DescribeLogDirs (key 35): log directories and partition sizes (kafka-log-dirs.sh).

Quirks clients rely on:

- ``topics`` null means "all partitions in all log dirs"; an empty array means none.
- ``offset_lag`` is 0 for current replicas (it is for future replicas being moved);
  ``is_future_key`` false for normal replicas.
- Version 3 adds the top-level ``error_code``; version 4 ``total_bytes``/``usable_bytes``
  (default -1 when unknown).  Kafka 4.x accepts only versions >= 1; version 5 (Kafka 4.2,
  ``is_cordoned``) is not declared.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DESCRIBE_LOG_DIRS = api(
    ApiKey.DESCRIBE_LOG_DIRS,
    "0-4",
    flexible="2+",
    request=(
        F(
            "topics",
            "[]",
            "0+",
            F("topic", "string"),
            F("partitions", "[]int32"),
            nullable="0+",
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "3+"),
        F(
            "results",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("log_dir", "string"),
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
                    F("partition_size", "int64"),
                    F("offset_lag", "int64"),
                    F("is_future_key", "bool"),
                ),
            ),
            F("total_bytes", "int64", "4+", default=-1),
            F("usable_bytes", "int64", "4+", default=-1),
        ),
    ),
)

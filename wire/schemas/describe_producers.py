"""DescribeProducers (key 61): active idempotent/transactional producers per partition (KIP-664).

Quirks clients rely on:

- Used by ``kafka-transactions.sh describe-producers`` and AdminClient.describeProducers;
  the answer comes from the partition's producer state (last sequence, last timestamp,
  open transaction start offset).
- Note ``producer_epoch`` is an int32 here (an int16 elsewhere); ``last_sequence``,
  ``last_timestamp`` and ``current_txn_start_offset`` default to -1.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DESCRIBE_PRODUCERS = api(
    ApiKey.DESCRIBE_PRODUCERS,
    "0",
    flexible="0+",
    request=(
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
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
                F("error_message", "string", "0+", nullable="0+", default=None),
                F(
                    "active_producers",
                    "[]",
                    "0+",
                    F("producer_id", "int64"),
                    F("producer_epoch", "int32"),
                    F("last_sequence", "int32", default=-1),
                    F("last_timestamp", "int64", default=-1),
                    F("coordinator_epoch", "int32"),
                    F("current_txn_start_offset", "int64", default=-1),
                ),
            ),
        ),
    ),
)

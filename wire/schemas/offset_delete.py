"""OffsetDelete (key 47): drop committed offsets of partitions a group no longer consumes.

Refused per partition with GROUP_SUBSCRIBED_TO_TOPIC while a live member subscribes to the
topic (KIP-496).
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

OFFSET_DELETE = api(
    ApiKey.OFFSET_DELETE,
    "0",
    flexible="none",
    request=(
        F("group_id", "string"),
        F(
            "topics",
            "[]",
            "0+",
            F("name", "string"),
            F("partitions", "[]", "0+", F("partition_index", "int32")),
        ),
    ),
    response=(
        F("error_code", "int16"),
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
            ),
        ),
    ),
)

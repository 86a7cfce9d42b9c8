"""OffsetFetch (key 9): read a group's committed offsets.

Up to v7 a request names one group (``topics`` null = all committed partitions, v2+); v8+
batches several groups, each with its own topics and error code.  v9 adds the KIP-848
member id / epoch so that a member of a consumer-protocol group can be fenced.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

OFFSET_FETCH = api(
    ApiKey.OFFSET_FETCH,
    "0-9",
    flexible="6+",
    request=(
        F("group_id", "string", "0-7"),
        F(
            "topics",
            "[]",
            "0-7",
            F("name", "string", "0-7"),
            F("partition_indexes", "[]int32", "0-7"),
            nullable="2-7",
        ),
        F(
            "groups",
            "[]",
            "8+",
            F("group_id", "string", "8+"),
            F("member_id", "string", "9+", nullable="9+", default=None),
            F("member_epoch", "int32", "9+", default=-1),
            F(
                "topics",
                "[]",
                "8+",
                F("name", "string", "8+"),
                F("partition_indexes", "[]int32", "8+"),
                nullable="8+",
            ),
        ),
        F("require_stable", "bool", "7+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+"),
        F(
            "topics",
            "[]",
            "0-7",
            F("name", "string", "0-7"),
            F(
                "partitions",
                "[]",
                "0-7",
                F("partition_index", "int32", "0-7"),
                F("committed_offset", "int64", "0-7"),
                F("committed_leader_epoch", "int32", "5-7", default=-1),
                F("metadata", "string", "0-7", nullable="0-7"),
                F("error_code", "int16", "0-7"),
            ),
        ),
        F("error_code", "int16", "2-7"),
        F(
            "groups",
            "[]",
            "8+",
            F("group_id", "string", "8+"),
            F(
                "topics",
                "[]",
                "8+",
                F("name", "string", "8+"),
                F(
                    "partitions",
                    "[]",
                    "8+",
                    F("partition_index", "int32", "8+"),
                    F("committed_offset", "int64", "8+"),
                    F("committed_leader_epoch", "int32", "8+", default=-1),
                    F("metadata", "string", "8+", nullable="8+"),
                    F("error_code", "int16", "8+"),
                ),
            ),
            F("error_code", "int16", "8+"),
        ),
    ),
)

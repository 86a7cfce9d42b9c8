"""OffsetCommit (key 8): store a group's consumed positions in ``__consumer_offsets``.

Versions 0-1 are deprecated (v0 stored offsets in ZooKeeper, v1 carried a per-partition
commit timestamp); 2-4 let the client pick a retention time, which brokers since 2.1 ignore.
``generation_id_or_member_epoch`` is the classic generation or, for KIP-848 groups, the
member epoch.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

OFFSET_COMMIT = api(
    ApiKey.OFFSET_COMMIT,
    "0-9",
    flexible="8+",
    request=(
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1),
        F("member_id", "string", "1+"),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        F("retention_time_ms", "int64", "2-4", default=-1),
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
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "6+", default=-1),
                F("commit_timestamp", "int64", "1", default=-1),
                F("committed_metadata", "string", "0+", nullable="0+"),
            ),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+"),
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

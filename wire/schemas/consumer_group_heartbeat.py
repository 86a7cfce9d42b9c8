"""ConsumerGroupHeartbeat (key 68): the KIP-848 consumer protocol, join + heartbeat in one.

The coordinator computes the assignment itself; a member only reports what changed since its
last heartbeat (null fields mean "unchanged"), and the response carries the member epoch and,
when it changed, the partitions the member may own now.  Epoch 0 joins, -1 leaves, -2 leaves
temporarily as a static member.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

CONSUMER_GROUP_HEARTBEAT = api(
    ApiKey.CONSUMER_GROUP_HEARTBEAT,
    "0-1",
    flexible="0+",
    request=(
        F("group_id", "string"),
        F("member_id", "string"),
        F("member_epoch", "int32"),
        F("instance_id", "string", "0+", nullable="0+", default=None),
        F("rack_id", "string", "0+", nullable="0+", default=None),
        F("rebalance_timeout_ms", "int32", "0+", default=-1),
        F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
        F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
        F("server_assignor", "string", "0+", nullable="0+", default=None),
        F(
            "topic_partitions",
            "[]",
            "0+",
            F("topic_id", "uuid"),
            F("partitions", "[]int32"),
            nullable="0+",
            default=None,
        ),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("member_id", "string", "0+", nullable="0+", default=None),
        F("member_epoch", "int32"),
        F("heartbeat_interval_ms", "int32"),
        F(
            "assignment",
            "{}",
            "0+",
            F(
                "topic_partitions",
                "[]",
                "0+",
                F("topic_id", "uuid"),
                F("partitions", "[]int32"),
            ),
            nullable="0+",
            default=None,
        ),
    ),
)

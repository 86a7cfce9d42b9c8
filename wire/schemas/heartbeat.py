"""Heartbeat (key 12): a classic group member proves it is alive between polls.

The answer is also how a stable member learns of a rebalance (REBALANCE_IN_PROGRESS).
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

HEARTBEAT = api(
    ApiKey.HEARTBEAT,
    "0-4",
    flexible="4+",
    request=(
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
    ),
)

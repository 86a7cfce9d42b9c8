"""LeaveGroup (key 13): members leave a classic group without waiting for a session timeout.

Up to v2 one member leaves; v3+ (KIP-345) takes a batch of members, identified by member id
or, for static members, by group instance id, each with its own error code.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

LEAVE_GROUP = api(
    ApiKey.LEAVE_GROUP,
    "0-5",
    flexible="4+",
    request=(
        F("group_id", "string"),
        F("member_id", "string", "0-2"),
        F(
            "members",
            "[]",
            "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+", default=None),
            F("reason", "string", "5+", nullable="5+", default=None),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F(
            "members",
            "[]",
            "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+", default=None),
            F("error_code", "int16", "3+"),
        ),
    ),
)

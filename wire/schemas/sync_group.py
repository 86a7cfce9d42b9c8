"""SyncGroup (key 14): the leader hands in the assignment; every member gets its own part.

v5 sends the protocol type and name so the coordinator can reject a member that disagrees
with the group (INCONSISTENT_GROUP_PROTOCOL) and echoes them back.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

SYNC_GROUP = api(
    ApiKey.SYNC_GROUP,
    "0-5",
    flexible="4+",
    request=(
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("protocol_type", "string", "5+", nullable="5+", default=None),
        F("protocol_name", "string", "5+", nullable="5+", default=None),
        F(
            "assignments",
            "[]",
            "0+",
            F("member_id", "string"),
            F("assignment", "bytes"),
        ),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("protocol_type", "string", "5+", nullable="5+", default=None),
        F("protocol_name", "string", "5+", nullable="5+", default=None),
        F("assignment", "bytes"),
    ),
)

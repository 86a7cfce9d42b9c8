"""JoinGroup (key 11): a member (re)joins a classic group and waits for the rebalance.

v4+ makes a new member without id fail once with MEMBER_ID_REQUIRED (carrying the id the
coordinator chose) so that the coordinator never holds a pending join for a client it cannot
identify (KIP-394).  v5 adds static membership (``group_instance_id``, KIP-345); v7 echoes
the protocol type; v9 lets the coordinator tell a static leader to skip the assignment.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

JOIN_GROUP = api(
    ApiKey.JOIN_GROUP,
    "0-9",
    flexible="6+",
    request=(
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1),
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string"),
        F(
            "protocols",
            "[]",
            "0+",
            F("name", "string"),
            F("metadata", "bytes"),
        ),
        F("reason", "string", "8+", nullable="8+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None),
        F("protocol_name", "string", "0+", nullable="7+"),
        F("leader", "string"),
        F("skip_assignment", "bool", "9+"),
        F("member_id", "string"),
        F(
            "members",
            "[]",
            "0+",
            F("member_id", "string"),
            F("group_instance_id", "string", "5+", nullable="5+", default=None),
            F("metadata", "bytes"),
        ),
    ),
)

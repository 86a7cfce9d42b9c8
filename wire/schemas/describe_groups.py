"""DescribeGroups (key 15): state, protocol and members of classic groups (admin tools).

Member metadata and assignment are returned as the opaque bytes the members exchanged, so the
admin client decodes them itself.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

# Kafka's "operations not requested" marker for ``authorized_operations``.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)

DESCRIBE_GROUPS = api(
    ApiKey.DESCRIBE_GROUPS,
    "0-5",
    flexible="5+",
    request=(
        F("groups", "[]string"),
        F("include_authorized_operations", "bool", "3+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F(
            "groups",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            F(
                "members",
                "[]",
                "0+",
                F("member_id", "string"),
                F("group_instance_id", "string", "4+", nullable="4+", default=None),
                F("client_id", "string"),
                F("client_host", "string"),
                F("member_metadata", "bytes"),
                F("member_assignment", "bytes"),
            ),
            F("authorized_operations", "int32", "3+", default=AUTHORIZED_OPERATIONS_OMITTED),
        ),
    ),
)

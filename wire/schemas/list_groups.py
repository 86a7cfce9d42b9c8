"""ListGroups (key 16): every group this coordinator knows, optionally filtered.

v4 adds a state filter (KIP-518), v5 a group type filter ("classic" / "consumer", KIP-848).
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

LIST_GROUPS = api(
    ApiKey.LIST_GROUPS,
    "0-5",
    flexible="3+",
    request=(
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F(
            "groups",
            "[]",
            "0+",
            F("group_id", "string"),
            F("protocol_type", "string"),
            F("group_state", "string", "4+"),
            F("group_type", "string", "5+"),
        ),
    ),
)

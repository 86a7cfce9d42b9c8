"""DeleteGroups (key 42): remove empty groups together with their committed offsets."""

from wire.api_keys import ApiKey
from wire.schema import F, api

DELETE_GROUPS = api(
    ApiKey.DELETE_GROUPS,
    "0-2",
    flexible="2+",
    request=(F("groups_names", "[]string"),),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results",
            "[]",
            "0+",
            F("group_id", "string"),
            F("error_code", "int16"),
        ),
    ),
)

"""AlterConfigs (key 33): replace the whole dynamic config of resources (legacy).

Quirks clients rely on:

- Non-incremental: the listed configs *replace* all dynamic configs of the resource (keys
  not listed revert to defaults).  Newer admin clients use IncrementalAlterConfigs.
- ``resource_type``: 2 = topic, 4 = broker, 8 = broker logger.  ``validate_only`` checks
  without changing.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

ALTER_CONFIGS = api(
    ApiKey.ALTER_CONFIGS,
    "0-2",
    flexible="2+",
    request=(
        F(
            "resources",
            "[]",
            "0+",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F(
                "configs",
                "[]",
                "0+",
                F("name", "string"),
                F("value", "string", "0+", nullable="0+"),
            ),
        ),
        F("validate_only", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "responses",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("error_message", "string", "0+", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
        ),
    ),
)

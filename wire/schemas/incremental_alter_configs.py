"""IncrementalAlterConfigs (key 44): change individual config entries (KIP-339).

Quirks clients rely on:

- ``config_operation``: 0 SET, 1 DELETE (revert to default), 2 APPEND and 3 SUBTRACT (list
  configs only).  Unlike AlterConfigs, unlisted keys are left alone.
- ``resource_type``: 2 = topic, 4 = broker, 8 = broker logger.  This is what the Java
  admin client and kafka-configs.sh use for topic configs.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

INCREMENTAL_ALTER_CONFIGS = api(
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    "0-1",
    flexible="1+",
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
                F("config_operation", "int8"),
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

"""DescribeConfigs (key 32): read topic / broker configuration entries.

Quirks clients rely on:

- ``resource_type``: 2 = topic, 4 = broker, 8 = broker logger (Kafka's ConfigResource.Type
  ids).  ``configuration_keys`` null means "all keys".
- Version 0 reports ``is_default``; version 1 replaces it with ``config_source`` (1 dynamic
  topic, 2 dynamic broker, 3 dynamic default broker, 4 static broker, 5 default, 6 dynamic
  broker logger, 7 client metrics, 8 group) and adds ``synonyms`` when
  ``include_synonyms`` is set.  The two never coexist, so their order does not matter.
- Version 3 adds ``config_type`` and ``documentation`` (when ``include_documentation``).
- ``is_sensitive`` entries must carry a null ``value``.
- Kafka 4.x accepts only DescribeConfigs >= 1; v0 is declared for error responses.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

DESCRIBE_CONFIGS = api(
    ApiKey.DESCRIBE_CONFIGS,
    "0-4",
    flexible="4+",
    request=(
        F(
            "resources",
            "[]",
            "0+",
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configuration_keys", "[]string", "0+", nullable="0+"),
        ),
        F("include_synonyms", "bool", "1+"),
        F("include_documentation", "bool", "3+"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F(
            "results",
            "[]",
            "0+",
            F("error_code", "int16"),
            F("error_message", "string", "0+", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F(
                "configs",
                "[]",
                "0+",
                F("name", "string"),
                F("value", "string", "0+", nullable="0+"),
                F("read_only", "bool"),
                F("config_source", "int8", "1+", default=-1),
                F("is_default", "bool", "0"),
                F("is_sensitive", "bool"),
                F(
                    "synonyms",
                    "[]",
                    "1+",
                    F("name", "string", "1+"),
                    F("value", "string", "1+", nullable="0+"),
                    F("source", "int8", "1+"),
                ),
                F("config_type", "int8", "3+"),
                F("documentation", "string", "3+", nullable="0+"),
            ),
        ),
    ),
)

"""ApiVersions (key 18): the first request of every client; see KAFKA-FACTS.md."""

from wire.api_keys import ApiKey
from wire.schema import F, api

API_VERSIONS = api(
    ApiKey.API_VERSIONS,
    "0-4",
    flexible="3+",
    request=(
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ),
    response=(
        F("error_code", "int16"),
        F(
            "api_keys",
            "[]",
            "0+",
            F("api_key", "int16"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        ),
        F("throttle_time_ms", "int32", "1+"),
        F(
            "supported_features",
            "[]",
            "3+",
            F("name", "string"),
            F("min_version", "int16"),
            F("max_version", "int16"),
            tag=0,
        ),
        F("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
        F(
            "finalized_features",
            "[]",
            "3+",
            F("name", "string"),
            F("max_version_level", "int16"),
            F("min_version_level", "int16"),
            tag=2,
        ),
        F("zk_migration_ready", "bool", "3+", tag=3),
    ),
)

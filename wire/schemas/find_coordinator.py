"""FindCoordinator (key 10): which broker coordinates a group (key type 0) or transaction (1).

v4+ batches several keys per request (KIP-699); a single-node broker answers every key with
itself, so the interesting part is the error per key (e.g. COORDINATOR_NOT_AVAILABLE while
``__consumer_offsets`` is loading).
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

FIND_COORDINATOR = api(
    ApiKey.FIND_COORDINATOR,
    "0-6",
    flexible="3+",
    request=(
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+"),
        F("coordinator_keys", "[]string", "4+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3", default=None),
        F("node_id", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
        F(
            "coordinators",
            "[]",
            "4+",
            F("key", "string", "4+"),
            F("node_id", "int32", "4+"),
            F("host", "string", "4+"),
            F("port", "int32", "4+"),
            F("error_code", "int16", "4+"),
            F("error_message", "string", "4+", nullable="4+", default=None),
        ),
    ),
)
